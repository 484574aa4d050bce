/** API tokens as Railyard makes them: the `ry_` prefix and the generator. */
import { randomBytes } from 'node:crypto';

/** Prefix of every API token Railyard makes: easy to recognise in a config file or a leak scan. */
export const TOKEN_PREFIX = 'ry_';

/** A new API token: `ry_` and 32 random bytes (base64url, 43 characters). */
export function newToken(): string {
  return `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** `2026-11-23 14:05` (UTC) or `never`. */
export function formatTime(ms: number | null): string {
  if (ms === null) return 'never';
  return new Date(ms).toISOString().slice(0, 16).replace('T', ' ');
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
