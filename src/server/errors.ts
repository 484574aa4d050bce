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

export const badRequest = (message: string) => new HttpError(400, message);
export const notFound = (message: string) => new HttpError(404, message);
export const conflict = (message: string) => new HttpError(409, message);

/** One line, no control characters: error bodies are read by people and by shell scripts. */
export function oneLine(message: string): string {
  const line = message.replace(/\s*[\r\n]+\s*/g, ' ').trim();
  return line.length > 500 ? `${line.slice(0, 497)}...` : line || 'error';
}
