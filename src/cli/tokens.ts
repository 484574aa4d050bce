/** API tokens as Railyard makes them: the `ry_` prefix, the generator, the database file, `token list`'s columns. */
import { randomBytes } from 'node:crypto';
import { ALL_PERMISSIONS, isPermission, type Permission } from '../contract/permissions.js';
import type { TokenInfo } from '../store/accounts.js';
import { closest } from './did-you-mean.js';
import type { Column } from './render.js';
import { RAILYARD_TOKEN_PREFIX } from '../contract/constants.js';

/** Prefix of every API token Railyard makes: easy to recognise in a config file or a leak scan. */
export const TOKEN_PREFIX = RAILYARD_TOKEN_PREFIX;

/** A new API token: `ry_` and 32 random bytes (base64url, 43 characters). */
export function newToken(): string {
  return `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** `token list`'s columns: relative times in the table (`never` unused), ISO 8601 UTC (empty when unused) in CSV and TSV. */
export const tokenColumns: Column<TokenInfo>[] = [
  { header: 'Id', get: (t) => t.id },
  { header: 'Organisation', get: (t) => t.org },
  { header: 'Created', get: (t) => iso(t.createdAt), time: true },
  { header: 'Last used', get: (t) => iso(t.lastUsedAt) ?? 'never', plain: (t) => iso(t.lastUsedAt), time: true },
  { header: 'Permissions', get: (t) => describePermissions(t.permissions) },
  { header: 'Label', get: (t) => t.label ?? '', shrink: true },
];

/** A token's permissions in `token list`'s table: `all`, `read only`, or the names. */
export function describePermissions(permissions: readonly Permission[]): string {
  if (permissions.length === ALL_PERMISSIONS.length) return 'all';
  return permissions.length ? permissions.join(' ') : 'read only';
}

/**
 * The permissions `token create --permission` names (repeatable, or comma-separated): every
 * permission when none is given, none (read only) for `none`. An unknown name is an error naming
 * the one meant and the valid ones.
 */
export function permissionsOfFlags(values: readonly string[] | undefined): Permission[] {
  if (!values?.length) return [...ALL_PERMISSIONS];
  const names = values.flatMap((v) => v.split(',')).map((v) => v.trim());
  const chosen = new Set<Permission>();
  for (const name of names) {
    if (name === 'none') continue;
    if (name === 'all') {
      for (const p of ALL_PERMISSIONS) chosen.add(p);
      continue;
    }
    if (!isPermission(name)) {
      const near = closest(name, [...ALL_PERMISSIONS, 'all', 'none']);
      throw new Error(
        `--permission: unknown permission "${name}"${near ? ` (did you mean "${near.name}"?)` : ''}: ` +
          `the permissions are ${ALL_PERMISSIONS.join(', ')}; all for every one, none for a read-only token`,
      );
    }
    chosen.add(name);
  }
  if (names.includes('none') && chosen.size)
    throw new Error('--permission: none (a read-only token) cannot be combined with other permissions');
  return ALL_PERMISSIONS.filter((p) => chosen.has(p));
}

/**
 * The SQLite file the token commands use, which must exist unless `create` (a typo'd or missing
 * --data-dir would otherwise create an empty database whose tokens no server knows).
 */
export async function tokenDatabase(
  dataDir: string,
  create: boolean,
): Promise<{ dataDir: string; file: string }> {
  const [{ existsSync }, { join, resolve }, { SQLITE_FILE }] = await Promise.all([
    import('node:fs'),
    import('node:path'),
    import('../store/index.js'),
  ]);
  const file = join(resolve(dataDir), SQLITE_FILE);
  if (!create && !existsSync(file)) {
    throw new Error(
      `--data-dir: no database at ${file}: pass the --data-dir of your server (railyard serve --data-dir), or --create-database to start a new one there`,
    );
  }
  return { dataDir, file };
}
