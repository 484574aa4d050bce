/**
 * Enforcement of token permissions (src/contract/permissions.ts), for the /v1 routes and any other
 * API surface on the server. The authentication hook puts the token's permissions on the request
 * (`request.permissions`); a handler, or the route table's generic check, calls requirePermission
 * before it changes anything. A refusal is an ApiError `insufficient_permissions` (403) whose
 * message starts with INSUFFICIENT_PERMISSIONS and names the permission.
 */
import type { FastifyRequest } from 'fastify';
import { DEFAULT_PRIORITY, PRIORITY_NAMES, resolvePriority, type PriorityInput } from '../../contract/mq.js';
import { insufficientPermissionsMessage, type Permission } from '../../contract/permissions.js';
import { ApiError } from '../errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** What the request's token may change (empty: read only); null on routes without auth. */
    permissions: ReadonlySet<Permission> | null;
  }
}

/** The refusal for a missing permission: 403 `insufficient_permissions`, "INSUFFICIENT_PERMISSIONS: …". */
export function insufficientPermissions(permission: Permission, what: string): ApiError {
  return new ApiError('insufficient_permissions', insufficientPermissionsMessage(permission, what));
}

/** Whether the request's token has `permission`. */
export function hasPermission(request: Pick<FastifyRequest, 'permissions'>, permission: Permission): boolean {
  return request.permissions?.has(permission) ?? false;
}

/**
 * Throws the 403 unless the request's token has `permission`. `what` names the action in the
 * message (`submitPullRequest`, `a priority other than the default`).
 */
export function requirePermission(
  request: Pick<FastifyRequest, 'permissions'>,
  permission: Permission,
  what: string,
): void {
  if (!hasPermission(request, permission)) throw insufficientPermissions(permission, what);
}

/**
 * What a submission's own fields need beyond `merge`: `noBatch: true` needs `skip_batching`,
 * `direct: true` needs `direct`; a
 * priority needs `priority` when it differs from the one the PR would have without it: the
 * default for a PR not in the queue, its current one for a queued PR (so a tool that always sends
 * "medium" needs no more than `merge`, but moving a queued PR's priority does).
 */
export function requireSubmitPermissions(
  request: Pick<FastifyRequest, 'permissions'>,
  input: { priority?: PriorityInput; noBatch?: boolean; direct?: boolean },
  currentPriority: number | null,
): void {
  if (input.noBatch === true) requirePermission(request, 'skip_batching', 'noBatch: true');
  if (input.direct === true) requirePermission(request, 'direct', 'direct: true');
  if (input.priority === undefined) return;
  const value = resolvePriority(input.priority).value;
  const without = currentPriority ?? PRIORITY_NAMES[DEFAULT_PRIORITY];
  if (value !== without)
    requirePermission(
      request,
      'priority',
      currentPriority === null
        ? 'a priority other than the default'
        : "changing a queued pull request's priority",
    );
}
