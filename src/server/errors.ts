/** HttpError and its helpers: the one-line errors the server answers, each with a code from the contract. */
import { errorCodeForStatus, type ErrorCode } from '../contract/errors.js';

/**
 * An error answered to the client as-is: a status code, a one-line message for people, and a
 * stable code for programs (sent in the `x-railyard-error-code` header; src/contract/errors.ts).
 */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly code: ErrorCode = errorCodeForStatus(statusCode),
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

/**
 * `for the token's organisation "acme"`: a 404 for a queue or repository names the organisation it
 * was looked for in, so that a token of the wrong organisation says so. Only the caller's own
 * organisation is named, never the one that owns the repository.
 */
export const ofTokenOrg = (org: string) => `for the token's organisation "${org}"`;

export const badRequest = (message: string) => new HttpError(400, message);
export const notFound = (message: string) => new HttpError(404, message);
export const conflict = (message: string) => new HttpError(409, message);
export const tooMany = (message: string) => new HttpError(429, message);

/** The longest error line sent; longer ones end in `...`. */
export const MAX_ERROR_CHARS = 500;

/**
 * One line, no control characters: error bodies are read by people and by shell scripts, and
 * they echo input. The message is cut to a bounded length BEFORE anything scans it, and the scan
 * is a single pass (no regex), so a field of a million spaces costs what 500 characters do.
 * Line breaks (and the blanks around them) become one space; other control characters
 * (C0, DEL, C1, U+2028/2029) are written as `\uXXXX` so they cannot move a terminal's cursor.
 */
export function oneLine(message: string): string {
  // Room for trimming and escapes: never more than a few times the line we send.
  const bounded = message.length > MAX_ERROR_CHARS * 4 ? message.slice(0, MAX_ERROR_CHARS * 4) : message;
  let out = '';
  let pendingBreak = false;
  let blanks = '';
  for (const ch of bounded) {
    const code = ch.codePointAt(0)!;
    if (ch === '\n' || ch === '\r') {
      pendingBreak = true;
      blanks = '';
      continue;
    }
    if (ch === ' ' || ch === '\t') {
      // Blanks are kept only between two pieces of text on the same line.
      blanks += ch === '\t' ? ' ' : ch;
      continue;
    }
    if (pendingBreak) {
      if (out) out += ' ';
      pendingBreak = false;
    } else if (blanks && out) out += blanks;
    blanks = '';
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f) || code === 0x2028 || code === 0x2029) {
      out += `\\u${code.toString(16).padStart(4, '0')}`;
    } else out += ch;
    if (out.length > MAX_ERROR_CHARS) break;
  }
  if (out.length > MAX_ERROR_CHARS) out = `${out.slice(0, MAX_ERROR_CHARS - 3)}...`;
  else if (bounded !== message) out = `${out.slice(0, MAX_ERROR_CHARS - 3)}...`;
  return out || 'error';
}
