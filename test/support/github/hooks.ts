// Webhook deliveries of the GitHub emulator: payloads queued in event order (some still being built
// from git reads), given `repository` and `installation`, schema-checked, signed with the hook's
// secret (X-Hub-Signature-256) and delivered one at a time; every delivery is recorded and can be
// redelivered. Faults for tests: a filter loses, holds (to deliver late or out of order) or
// duplicates deliveries; replay() re-sends a captured delivery with the same id, another id or none.
import { randomUUID } from 'node:crypto';
import { sign as signPayload } from '@octokit/webhooks-methods';
import { nodeId, repoJson } from './json.js';
import type { Repo, World } from './world.js';

export interface Delivery {
  id: string;
  event: string;
  /** The delivery never reached the receiver (a DeliveryFilter said 'drop'). */
  lost?: boolean;
  /** When it was sent (ms since the epoch; 0 if lost). */
  sentAt?: number;
  /** HTTP status of the last attempt (0: no answer). */
  status: number;
  action?: string;
  payload: Record<string, unknown>;
}

/**
 * What happens to a delivery about to be sent: sent ('send', default), lost ('drop': recorded with
 * status 0 and `lost: true`, never sent), held until releaseDeliveries ('hold'), or sent twice with
 * the same delivery id ('duplicate').
 */
export type DeliveryFate = 'send' | 'drop' | 'hold' | 'duplicate';
export type DeliveryFilter = (d: {
  event: string;
  action?: string;
  payload: Record<string, unknown>;
}) => DeliveryFate;

type ContentType = 'json' | 'form';

export class Hooks {
  readonly deliveries: Delivery[] = [];
  /** Deliveries a filter held, in the order held. */
  readonly held: Delivery[] = [];
  private hook: { url: string; secret: string; contentType: ContentType } | null = null;
  private filter: DeliveryFilter | null = null;
  private order: Promise<unknown> = Promise.resolve();
  private chain: Promise<unknown> = Promise.resolve();
  private readonly bodies = new Map<string, { event: string; body: string; contentType: ContentType }>();
  private readonly abort = new AbortController();

  constructor(private readonly w: World) {}

  set(url: string, secret: string, contentType: ContentType = 'json'): void {
    this.hook = { url, secret, contentType };
  }

  setFilter(filter: DeliveryFilter | null): void {
    this.filter = filter;
  }

  /** Whether payloads are wanted at all: a hook to deliver to, or a validator to check them. */
  get active(): boolean {
    return this.hook !== null || this.w.validator !== null;
  }

  /** Queues a delivery; a payload still being built (git reads) keeps its place in the order. */
  emit(
    r: Repo,
    event: string,
    payload: Record<string, unknown> | Promise<Record<string, unknown> | null>,
  ): void {
    const built = Promise.resolve(payload);
    const run = this.order
      .then(() => built)
      .then((p) => {
        if (p) this.send(r, event, p);
      });
    this.order = run.catch(() => undefined);
    this.w.track(run);
  }

  /** Sends the held deliveries (in the order held, or newest first); resolves with the receiver's statuses. */
  async release(opts: { newestFirst?: boolean } = {}): Promise<number[]> {
    const list = this.held.splice(0);
    if (opts.newestFirst) list.reverse();
    const statuses: number[] = [];
    for (const d of list) {
      const b = this.bodies.get(d.id)!;
      d.sentAt = Date.now();
      d.status = await this.post(d.id, d.event, b.body);
      this.deliveries.push(d);
      statuses.push(d.status);
    }
    return statuses;
  }

  /** Sends a recorded body again with the same delivery id, another id or (null) none. */
  async replay(id: string, opts: { deliveryId?: string | null } = {}): Promise<number> {
    const b = this.bodies.get(id);
    if (!b) throw new Error(`no delivery ${id}`);
    const as = opts.deliveryId === undefined ? id : opts.deliveryId;
    return this.post(as, b.event, b.body, b.contentType);
  }

  async redeliver(id: string): Promise<number> {
    const b = this.bodies.get(id);
    if (!b) throw new Error(`no delivery ${id}`);
    const d = this.deliveries.find((x) => x.id === id)!;
    const status = await this.post(id, b.event, b.body);
    d.status = status;
    return status;
  }

  close(): void {
    this.abort.abort();
  }

  private send(r: Repo, event: string, payload: Record<string, unknown>): void {
    const full: Record<string, unknown> = { ...payload, repository: repoJson(this.w.urls, r) };
    const inst = [...this.w.installations.values()].find((i) => i.owner === r.owner && i.repo === r.name);
    if (inst) full.installation = { id: inst.id, node_id: nodeId('Installation', inst.id) };
    if (this.w.validator) {
      const v = this.w.validator.webhook(event, full);
      if (v)
        this.w.schemaViolations.push(
          `webhook ${event}${typeof full.action === 'string' ? `.${full.action}` : ''}: ${v}`,
        );
    }
    if (!this.hook) return;
    const id = randomUUID();
    const json = JSON.stringify(full);
    // Form-encoded hooks carry the JSON in `payload=`; the signature covers the body as sent.
    const body = this.hook.contentType === 'form' ? new URLSearchParams({ payload: json }).toString() : json;
    const d: Delivery = {
      id,
      event,
      status: 0,
      payload: full,
      ...(typeof payload.action === 'string' ? { action: payload.action } : {}),
    };
    this.bodies.set(id, { event, body, contentType: this.hook.contentType });
    const fate = this.filter?.({ event, action: d.action, payload: full }) ?? 'send';
    if (fate === 'drop') {
      d.lost = true;
      d.sentAt = 0;
      this.deliveries.push(d);
      return;
    }
    if (fate === 'hold') {
      this.held.push(d);
      return;
    }
    const run = this.chain.then(async () => {
      if (this.w.closed) return;
      d.sentAt = Date.now();
      d.status = await this.post(id, event, body);
      if (fate === 'duplicate') d.status = await this.post(id, event, body);
      this.deliveries.push(d);
    });
    this.chain = run.catch(() => undefined);
    this.w.track(run);
  }

  private async post(
    id: string | null,
    event: string,
    body: string,
    contentType = this.bodies.get(id ?? '')?.contentType ?? 'json',
  ): Promise<number> {
    const hook = this.hook;
    if (!hook || this.w.closed) return 0;
    try {
      const res = await fetch(hook.url, {
        method: 'POST',
        headers: {
          'content-type': contentType === 'form' ? 'application/x-www-form-urlencoded' : 'application/json',
          'user-agent': 'GitHub-Hookshot/emulator',
          'x-github-event': event,
          ...(id === null ? {} : { 'x-github-delivery': id }),
          'x-github-hook-id': '1',
          'x-github-hook-installation-target-type': 'repository',
          'x-hub-signature-256': await signPayload(hook.secret, body),
        },
        body,
        signal: AbortSignal.any([this.abort.signal, AbortSignal.timeout(10_000)]),
      });
      await res.arrayBuffer();
      return res.status;
    } catch {
      return 0;
    }
  }
}
