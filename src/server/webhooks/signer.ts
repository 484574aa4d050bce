/**
 * Signing of outgoing webhooks as Standard Webhooks / Svix do it, so receivers written for Trunk's
 * deliveries (and the `svix` / `standardwebhooks` packages) verify Railyard's unchanged:
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, the key being the base64
 * after `whsec_`. During a rotation's overlap the old secret signs too (a second `v1,…`).
 */
import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';

/** A new endpoint secret: `whsec_` and 24 random bytes in base64 (Svix's own form). */
export function newSecret(): string {
  return SECRET_PREFIX + randomBytes(24).toString('base64');
}

function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

/** `v1,<signature>` of one secret. */
export function signature(secret: string, id: string, timestamp: number, body: string): string {
  return `v1,${createHmac('sha256', keyOf(secret)).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/**
 * The headers of one delivery attempt: the same values under `webhook-*` (Standard Webhooks) and
 * `svix-*` (what receivers of Trunk's Svix deliveries read). `timestamp` is in unix seconds.
 */
export function signedHeaders(secrets: readonly string[], id: string, timestamp: number, body: string): Record<string, string> {
  const sig = secrets.map((s) => signature(s, id, timestamp, body)).join(' ');
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': sig,
    'svix-id': id,
    'svix-timestamp': String(timestamp),
    'svix-signature': sig,
  };
}
