/**
 * What arrives at `POST /webhooks/gitlab`: the shared secret in `X-Gitlab-Token` (GitLab sends it
 * as is, no HMAC) compared in constant time, the event name, and de-duplication of deliveries by
 * `X-Gitlab-Event-UUID` / `Idempotency-Key` (GitLab retries deliveries that failed or timed out).
 */
import { createHash, timingSafeEqual } from 'node:crypto';

/** The hook events the forge acts on (X-Gitlab-Event); others are answered 2xx and ignored. */
export const HOOK_EVENTS = [
  'Merge Request Hook',
  'Pipeline Hook',
  'Job Hook',
  'Push Hook',
  'Note Hook',
] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];

type Headers = Readonly<Record<string, string | string[] | undefined>>;

function header(headers: Headers, name: string): string | undefined {
  const v = headers[name] ?? headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * Whether `received` is the configured secret, in time independent of where they differ and of
 * their lengths (both are hashed first, so timingSafeEqual compares equal lengths).
 */
export function tokenMatches(secret: string, received: string | undefined): boolean {
  if (received === undefined) return false;
  const a = createHash('sha256').update(secret, 'utf8').digest();
  const b = createHash('sha256').update(received, 'utf8').digest();
  return timingSafeEqual(a, b) && secret.length > 0;
}

export interface HookDelivery {
  event: string;
  /** X-Gitlab-Event-UUID, else Idempotency-Key, else null. */
  id: string | null;
  /** Idempotency-Key (the same on GitLab's retries of one delivery), else null. */
  idempotencyKey: string | null;
}

/** The delivery's headers, or a one-line refusal: a missing or wrong token is `401`. */
export function readHookHeaders(
  headers: Headers,
  secret: string,
): { ok: true; delivery: HookDelivery } | { ok: false; status: number; text: string } {
  if (!tokenMatches(secret, header(headers, 'x-gitlab-token')))
    return { ok: false, status: 401, text: 'X-Gitlab-Token: missing or not the configured webhook secret' };
  const event = header(headers, 'x-gitlab-event');
  if (!event) return { ok: false, status: 400, text: 'X-Gitlab-Event: required' };
  return {
    ok: true,
    delivery: {
      event,
      id: header(headers, 'x-gitlab-event-uuid') ?? header(headers, 'idempotency-key') ?? null,
      idempotencyKey: header(headers, 'idempotency-key') ?? null,
    },
  };
}

/**
 * The deliveries seen lately (in memory, newest `capacity`): a delivery whose event UUID or
 * idempotency key was seen is a repeat. The driver also records handled deliveries in the
 * database (docs/decisions.md: each acts once across restarts and replicas).
 */
export class RecentDeliveries {
  private readonly seen = new Set<string>();

  constructor(private readonly capacity = 10_000) {}

  /** True the first time a delivery is offered, false for a repeat (same UUID or idempotency key). */
  firstTime(d: Pick<HookDelivery, 'id' | 'idempotencyKey'>): boolean {
    const keys = [d.id, d.idempotencyKey].filter((k): k is string => k !== null && k !== '');
    if (keys.length === 0) return true;
    if (keys.some((k) => this.seen.has(k))) return false;
    for (const k of keys) {
      this.seen.add(k);
      if (this.seen.size > this.capacity) this.seen.delete(this.seen.values().next().value!);
    }
    return true;
  }
}
