/**
 * Error codes of the API. Every error answer is one line of `text/plain` (for people and shell
 * scripts) with a status, and a stable code in the `x-railyard-error-code` header (for programs:
 * a status can mean several things, a code one). docs/errors.md lists them.
 */

/** The response header that carries the code of an error answer. */
export const ERROR_CODE_HEADER = 'x-railyard-error-code';

/** Every code the server sends, with its status and what it means. */
export const ERROR_CODES = {
  invalid_request: { status: 400, description: 'The request is invalid: the message names the field' },
  unauthorized: { status: 401, description: 'The x-api-token header is missing or unknown' },
  insufficient_permissions: {
    status: 403,
    description:
      'The token lacks the permission this write needs (the message starts INSUFFICIENT_PERMISSIONS and names it); nothing changed',
  },
  not_found: {
    status: 404,
    description:
      'The queue, pull request, test run, test or organisation does not exist (or belongs to another organisation)',
  },
  unknown_endpoint: { status: 404, description: 'No operation has this path' },
  method_not_allowed: {
    status: 405,
    description: 'The operation exists under another method (see the Allow header)',
  },
  conflict: {
    status: 409,
    description: 'The request conflicts with the current state (a queue that exists, a PR being merged)',
  },
  payload_too_large: { status: 413, description: 'The body is larger than 20 MiB' },
  limit_reached: {
    status: 429,
    description: 'A limit of the server is reached (pull requests per queue): the text names it and the flag that sets it',
  },
  internal_error: {
    status: 500,
    description: 'Unexpected error; the server log has the details under the request id',
  },
  forge_unavailable: {
    status: 502,
    description: 'The forge (GitHub) answered an error while the request needed it; nothing changed, retry',
  },
  unavailable: {
    status: 503,
    description: 'The database cannot be reached right now (or a replica lost the queue lease mid-write); nothing changed, retry',
  },
} as const satisfies Record<string, { status: number; description: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** The code of an error answer that has no more specific one: the general code of its status. */
export function errorCodeForStatus(status: number): ErrorCode {
  switch (status) {
    case 401:
      return 'unauthorized';
    case 403:
      return 'insufficient_permissions';
    case 404:
      return 'not_found';
    case 405:
      return 'method_not_allowed';
    case 409:
      return 'conflict';
    case 413:
      return 'payload_too_large';
    case 429:
      return 'limit_reached';
    case 502:
      return 'forge_unavailable';
    default:
      return status >= 500 ? 'internal_error' : 'invalid_request';
  }
}
