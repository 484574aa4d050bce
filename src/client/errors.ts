/**
 * The errors the client throws. Every one is a ClientError naming the operation, with the error
 * it came from (ky's HTTPError or TimeoutError, fetch's TypeError, a JSON or schema error) as
 * `cause`. A cancelled call rejects with the caller's AbortError, unchanged.
 */

/** The base class: catch this to handle every failure of a call. */
export class ClientError extends Error {
  override name = 'ClientError';
  constructor(
    message: string,
    /** The operation that failed (e.g. `submitPullRequest`). */
    readonly operation: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The server answered with an error status; `serverMessage` is its one-line plain-text body. */
export class ApiError extends ClientError {
  override name = 'ApiError';
  /** The server's stable error code (x-railyard-error-code); undefined from a server that sends none. */
  readonly code: string | undefined;

  /** A guess at what is wrong on the caller's side (e.g. an --api-url without /v1), part of the message. */
  readonly hint: string | undefined;

  constructor(
    operation: string,
    readonly status: number,
    readonly serverMessage: string,
    options?: { code?: string; cause?: unknown; hint?: string },
  ) {
    super(ApiError.describe(operation, status, serverMessage) + (options?.hint ? ` (${options.hint})` : ''), operation, options);
    this.code = options?.code;
    this.hint = options?.hint;
  }

  private static describe(operation: string, status: number, serverMessage: string): string {
    const detail = serverMessage ? `: ${serverMessage}` : '';
    switch (status) {
      case 401:
        return `${operation}: the server rejected the API token (401)${detail}. Check --token, RAILYARD_TOKEN or TRUNK_API_TOKEN`;
      case 404:
        return `${operation}: not found (404)${detail}`;
      case 429:
        return `${operation}: rate limited (429)${detail}`;
      // What the server refused, in its words (they name the field or the condition), never bare HTTP internals.
      case 400:
        return `${operation}: refused${detail}`;
      case 409:
        return `${operation}: refused, it conflicts with the current state${detail}`;
      case 413:
        return `${operation}: the request is too large${detail}`;
      default:
        if (status >= 500) return `${operation}: the server failed (${status})${detail}`;
        return `${operation}: refused (${status})${detail}`;
    }
  }
}

/** The server could not be reached (refused, reset, DNS, TLS). */
export class NetworkError extends ClientError {
  override name = 'NetworkError';
  constructor(
    operation: string,
    readonly baseUrl: string,
    readonly causeMessage: string,
    options?: { cause?: unknown },
  ) {
    super(`${operation}: cannot reach ${baseUrl} (${causeMessage})`, operation, options);
  }
}

/**
 * An https:// base URL whose server answered the TLS handshake with something else: most likely a
 * plain-HTTP server. One line that says so, instead of OpenSSL's text.
 */
export class PlainHttpError extends NetworkError {
  override name = 'PlainHttpError';
  constructor(operation: string, baseUrl: string, options?: { cause?: unknown }) {
    super(operation, baseUrl, 'not TLS', options);
    const url = new URL(baseUrl);
    url.protocol = 'http:';
    this.message = `${operation}: could not speak TLS to ${new URL(baseUrl).host}: is it plain HTTP? Try --api-url ${url.href.replace(/\/$/, '')}`;
  }
}

/** No answer within the time limit of one attempt. */
export class TimeoutError extends ClientError {
  override name = 'TimeoutError';
  constructor(
    operation: string,
    readonly timeoutMs: number,
    options?: { cause?: unknown },
  ) {
    super(`${operation}: no answer within ${Math.round(timeoutMs / 1000)} s`, operation, options);
  }
}

/** The answer did not match the contract (a different server, or a version mismatch). */
export class ResponseShapeError extends ClientError {
  override name = 'ResponseShapeError';
}

/** Worth trying again later: 429, 5xx, network errors (not TLS spoken to a plain-HTTP server) and timeouts. */
export function isTransientError(error: unknown): boolean {
  if (error instanceof ApiError) return error.status === 429 || error.status >= 500;
  return (error instanceof NetworkError && !(error instanceof PlainHttpError)) || error instanceof TimeoutError;
}
