/**
 * What an API token may change: Trunk's key permissions. They scope the merge queue (and
 * Railyard's webhooks): a token with none of them reads merge queues but changes nothing. As on
 * Trunk, every token may use the flaky-test operations (uploads, quarantine, ticket links).
 * The route table names the permission each write needs (RouteDef.permission); a request's own
 * fields can need more (a priority needs `priority`, `noBatch: true` needs `skip_batching`).
 * Shared by the server (enforcement), the CLI (`token create --permission`) and the dashboard
 * (which hides the actions a token cannot take).
 */

/** Every permission, with what it allows (as `token create --help` and the docs say it). */
export const PERMISSIONS = {
  merge: 'Merge and cancel PRs: submit, cancel, restart tests, set impacted targets',
  priority:
    "Set priority on PRs: submit with a priority other than the default, or change a queued PR's priority",
  skip_batching: 'Skip batching: submit with noBatch: true',
  direct: 'Merge PRs with direct to queue: submit with direct: true',
  settings:
    'Update Merge Queue settings: create, update (state, mode, settings) and delete merge queues; manage webhooks',
} as const;

export type Permission = keyof typeof PERMISSIONS;

/** Every permission, in the order they are listed and stored. */
export const ALL_PERMISSIONS = Object.keys(PERMISSIONS) as Permission[];

export function isPermission(name: string): name is Permission {
  return Object.hasOwn(PERMISSIONS, name);
}

/** The words every refusal for a missing permission carries (Trunk's v2 code; v1 puts it in the message). */
export const INSUFFICIENT_PERMISSIONS = 'INSUFFICIENT_PERMISSIONS';

/** The refusal's one line: which permission is missing and what needs it. */
export function insufficientPermissionsMessage(permission: Permission, what: string): string {
  return `${INSUFFICIENT_PERMISSIONS}: ${what} needs the "${permission}" permission, which this token does not have (railyard token create --permission ${permission})`;
}

/** Stored form: the names joined by commas ('' = read only). */
export function formatPermissions(permissions: readonly Permission[]): string {
  return ALL_PERMISSIONS.filter((p) => permissions.includes(p)).join(',');
}

/** The stored form read back; null (a token from before permissions) is every permission. Unknown names are dropped. */
export function parsePermissions(stored: string | null): Permission[] {
  if (stored === null) return [...ALL_PERMISSIONS];
  return stored.split(',').filter(isPermission);
}
