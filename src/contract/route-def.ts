/**
 * What one operation of the v1 API is (RouteDef) and the helpers the route tables are written
 * with. The tables are per tag (routes-mq.ts, routes-flaky.ts, routes.ts), so that a client that
 * needs only some operations (the Action) bundles only their schemas.
 */
import type { z } from 'zod';
import { ROUTE_PATHS } from './paths.js';
import type { Permission } from './permissions.js';

/**
 * One operation of the v1 API. `request` validates the JSON body (or, for GET, the query
 * string); `response` describes the 200 body (`'text'` for Prometheus exposition).
 * `retrySafe` marks operations a client may retry blindly (reads); writes are never retried.
 */
export interface RouteDef {
  readonly operationId: string;
  readonly method: 'GET' | 'POST';
  /** Path below the `/v1` prefix, e.g. `/submitPullRequest`. */
  readonly path: string;
  readonly summary: string;
  readonly tag: 'merge-queue' | 'flaky-tests' | 'webhooks' | 'service';
  readonly auth: boolean;
  readonly retrySafe: boolean;
  /**
   * The permission a token needs for this operation (permissions.ts); null: a read, any token may.
   * Some requests need more than this by their fields (a priority, noBatch: the server's permissions.ts).
   */
  readonly permission: Permission | null;
  readonly request: z.ZodType | null;
  readonly response: z.ZodType | 'text';
  /** Not part of Trunk's v1 contract: a Railyard extension. */
  readonly extension?: boolean;
}

export function route<const R extends RouteDef>(def: R): R {
  return def;
}

/** The operation's name, method and path, from ROUTE_PATHS (./paths.ts). */
export function at<const K extends keyof typeof ROUTE_PATHS>(operationId: K): { operationId: K } & (typeof ROUTE_PATHS)[K] {
  return { operationId, ...ROUTE_PATHS[operationId] };
}

export const API_PREFIX = '/v1';
