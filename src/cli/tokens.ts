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
