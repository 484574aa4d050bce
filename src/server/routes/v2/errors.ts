/**
 * The v2 API's errors: thrown by code (V2Error, with Trunk's code and status) and, for whatever
 * else a v2 request ends in (the queue service's errors, engine rejections, an outage), mapped
 * from the one v1 map (../../errors.ts) to Trunk's envelope `{ "error": { "code", "message" } }`.
 */
import type { V2ErrorCode } from '../../../contract/v2/schemas.js';
import { httpAnswerOf, oneLine, type HttpAnswer } from '../../errors.js';

export class V2Error extends Error {
  constructor(
    readonly status: number,
    readonly code: V2ErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'V2Error';
  }
}

export const validationFailed = (message: string) => new V2Error(400, 'VALIDATION_FAILED', message);
export const invalidCursor = () =>
  new V2Error(
    400,
    'INVALID_CURSOR',
    'cursor: not a nextCursor of this operation with these filters (pass it back verbatim)',
  );

/** v1 code → v2 code, for the errors the shared services throw. */
const FROM_V1: Partial<Record<string, V2ErrorCode>> = {
  invalid_request: 'VALIDATION_FAILED',
  payload_too_large: 'VALIDATION_FAILED',
  unauthorized: 'INVALID_TOKEN',
  not_found: 'NOT_FOUND',
  unknown_endpoint: 'NOT_FOUND',
  conflict: 'VALIDATION_FAILED',
  forge_unavailable: 'UPSTREAM_ERROR',
  limit_reached: 'RATE_LIMIT_EXCEEDED',
};

export interface V2Answer {
  status: number;
  code: V2ErrorCode;
  message: string;
  headers: Record<string, string>;
  /** As in the v1 map: how the server notes it (undefined: the client's own error). */
  kind?: HttpAnswer['kind'];
}

export function v2AnswerOf(error: unknown, requestId: string): V2Answer {
  if (error instanceof V2Error)
    return { status: error.status, code: error.code, message: error.message, headers: {} };
  const v1 = httpAnswerOf(error, requestId);
  // A 409 the operation did not name itself: a PR's state moved under the request.
  const code = v1.status === 409 ? 'PR_NOT_IN_ACTIVE_STATE' : (FROM_V1[v1.code] ?? 'INTERNAL_ERROR');
  return { status: v1.status, code, message: v1.message, headers: v1.headers, kind: v1.kind };
}

export function envelope(code: V2ErrorCode, message: string): string {
  return JSON.stringify({ error: { code, message: oneLine(message) } });
}
