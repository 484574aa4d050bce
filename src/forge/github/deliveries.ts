/**
 * What arrives on `POST /webhooks/github`, read the way GitHub sends it: `application/json`, or
 * `application/x-www-form-urlencoded` with the JSON in `payload=` (GitHub's default for a hook
 * made by hand) — the signature is checked over the raw body in both cases. And which pull request
 * facts are newer than what is known: deliveries arrive out of order and can be re-sent by anyone
 * holding them, so a payload is trusted only when its `updated_at` is newer than every one seen
 * for that PR; otherwise the PR is read again.
 */

/** The JSON text of a delivery's body, or a one-line reason it has none. */
export function deliveryJson(contentType: string | undefined, body: string): { json: string } | { error: string } {
  const type = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (type === 'application/x-www-form-urlencoded') {
    const payload = new URLSearchParams(body).get('payload');
    return payload === null ? { error: 'body: a form-encoded delivery without a payload field' } : { json: payload };
  }
  return { json: body };
}

/** The newest `updated_at` seen per PR (bounded), to tell newer payloads from older ones. */
export class PullFreshness {
  private readonly seen = new Map<string, number>();

  constructor(private readonly max = 20_000) {}

  /**
   * True when `updatedAt` (ISO time) is newer than every one seen for the PR, and records it; false
   * for an older or equal one, or a payload without it (it may be stale: read the PR instead).
   */
  newer(key: string, updatedAt: string | null | undefined): boolean {
    const at = updatedAt ? Date.parse(updatedAt) : NaN;
    if (!Number.isFinite(at)) return false;
    const before = this.seen.get(key);
    if (before !== undefined && at <= before) return false;
    this.note(key, at);
    return true;
  }

  /** Whether anything was seen of the PR. */
  known(key: string): boolean {
    return this.seen.has(key);
  }

  /** Records what a read of the PR said (a read is the truth at its time). */
  note(key: string, at: number): void {
    if (!Number.isFinite(at)) return;
    const before = this.seen.get(key);
    if (before !== undefined && before >= at) return;
    this.seen.delete(key);
    this.seen.set(key, at);
    if (this.seen.size > this.max) this.seen.delete(this.seen.keys().next().value!);
  }
}
