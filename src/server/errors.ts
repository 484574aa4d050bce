/**
 * The server's errors and the one map from them to HTTP answers. Code throws an ApiError by its
 * code from the contract (`not_found`, `conflict`, ...: src/contract/errors.ts gives each its
 * status); `httpAnswerOf` turns whatever was thrown (an ApiError, an engine rejection, a database
 * outage, Fastify's own errors) into the status, code and one-line message the client gets.
 */
import { ERROR_CODES, errorCodeForStatus, type ErrorCode } from '../contract/errors.js';
import { BODY_LIMIT_BYTES } from '../contract/index.js';
import { EngineRejection } from '../engine/index.js';
import { isDatabaseBusy, isDatabaseUnavailable, LeaseLostError } from '../store/index.js';

/**
 * An error answered to the client as-is: a code from the contract (its status follows from it,
 * and the code is sent in the `x-railyard-error-code` header), a one-line message for people.
 */
export class ApiError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }

  get statusCode(): number {
    return ERROR_CODES[this.code].status;
  }
}

/**
 * The status-number form, for HTTP plumbing that speaks in statuses (the body parser): an
 * ApiError with the general code of its status.
 */
export class HttpError extends ApiError {
  constructor(status: number, message: string, headers: Record<string, string> = {}) {
    super(errorCodeForStatus(status), message, headers);
    this.name = 'HttpError';
  }
}

/**
 * `for the token's organisation "acme"`: a 404 for a queue or repository names the organisation it
 * was looked for in, so that a token of the wrong organisation says so. Only the caller's own
 * organisation is named, never the one that owns the repository.
 */
export const ofTokenOrg = (org: string) => `for the token's organisation "${org}"`;

export const badRequest = (message: string) => new ApiError('invalid_request', message);
export const unauthorized = (message: string) => new ApiError('unauthorized', message);
export const notFound = (message: string) => new ApiError('not_found', message);
export const conflict = (message: string) => new ApiError('conflict', message);
export const tooMany = (message: string) => new ApiError('limit_reached', message);
export const forgeUnavailable = (message: string) => new ApiError('forge_unavailable', message);

/** The code of each kind of command the engine rejects. */
const REJECTION_CODES: Record<EngineRejection['kind'], ErrorCode> = {
  not_found: 'not_found',
  conflict: 'conflict',
  invalid: 'invalid_request',
};

/** What the client is answered for an error, and how the server notes it. */
export interface HttpAnswer {
  status: number;
  code: ErrorCode;
  message: string;
  headers: Record<string, string>;
  /**
   * `unexpected`: logged with its stack (500); `unavailable`: the database cannot be reached (the
   * health probe is told); `busy`: the database gave up waiting; undefined: the client's own error.
   */
  kind?: 'unexpected' | 'unavailable' | 'busy' | 'lease' | 'descriptors';
}

/**
 * THE map from what was thrown to the answer: every error a request can end in passes here once
 * (app.ts's error handler), so a status is decided in one place. `requestId` names the request
 * in the message of an unexpected error.
 */
export function httpAnswerOf(error: unknown, requestId: string, bodyLimit = BODY_LIMIT_BYTES): HttpAnswer {
  if (error instanceof ApiError)
    return { status: error.statusCode, code: error.code, message: error.message, headers: error.headers };
  if (error instanceof EngineRejection) {
    const code = REJECTION_CODES[error.kind];
    return { status: ERROR_CODES[code].status, code, message: error.message, headers: {} };
  }
  const fastify = error as { code?: unknown; statusCode?: unknown; message?: string } | null;
  if (fastify?.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return {
      status: 413,
      code: 'payload_too_large',
      message: `request body is larger than ${bodyLimit / 1024 / 1024} MiB (${bodyLimit} bytes)`,
      headers: {},
    };
  }
  if (typeof fastify?.statusCode === 'number' && fastify.statusCode >= 400 && fastify.statusCode < 500) {
    return {
      status: fastify.statusCode,
      code: errorCodeForStatus(fastify.statusCode),
      message: fastify.message ?? '',
      headers: {},
    };
  }
  if (['EMFILE', 'ENFILE'].includes(String(fastify?.code))) {
    // Out of descriptors (a flood of connections): this request fails, the process goes on.
    return {
      status: 503,
      code: 'unavailable',
      message: 'the server is out of file descriptors right now; try again shortly',
      headers: { 'retry-after': '5' },
      kind: 'descriptors',
    };
  }
  if (isDatabaseUnavailable(error)) {
    return {
      status: 503,
      code: 'unavailable',
      message: 'the database is unavailable right now; nothing was changed, try again shortly',
      headers: { 'retry-after': '5' },
      kind: 'unavailable',
    };
  }
  if (isDatabaseBusy(error)) {
    return {
      status: 503,
      code: 'unavailable',
      message: `the database gave up waiting for other writes (${fastify?.message ?? 'busy'}); nothing was changed, try again`,
      headers: { 'retry-after': '1' },
      kind: 'busy',
    };
  }
  if (error instanceof LeaseLostError) {
    return {
      status: 503,
      code: 'unavailable',
      message: 'this replica lost the lease of the queue mid-write; nothing was changed, try again',
      headers: { 'retry-after': '1' },
      kind: 'lease',
    };
  }
  return {
    status: 500,
    code: 'internal_error',
    message: `internal error (request id ${requestId}); the server log has the details`,
    headers: {},
    kind: 'unexpected',
  };
}

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
