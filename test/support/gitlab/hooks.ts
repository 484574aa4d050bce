// Webhook deliveries of the GitLab emulator: in event order, with GitLab's headers (X-Gitlab-Event,
// X-Gitlab-Token: the shared secret as is, X-Gitlab-Event-UUID, Idempotency-Key), recorded with
// the receiver's status; a delivery can be sent again with the same ids (GitLab's retries).
import { randomUUID } from 'node:crypto';
import type { World } from './world.js';

export type HookEvent = 'Push Hook' | 'Merge Request Hook' | 'Pipeline Hook' | 'Job Hook' | 'Note Hook';

export interface Delivery {
  /** X-Gitlab-Event-UUID (also the Idempotency-Key, kept on redelivery). */
  uuid: string;
  event: HookEvent;
  /** HTTP status of the last attempt (0: no answer). */
  status: number;
  payload: Record<string, unknown>;
}

export class Hooks {
  readonly deliveries: Delivery[] = [];
  private hook: { url: string; token: string | null } | null = null;
  private order: Promise<unknown> = Promise.resolve();
  private chain: Promise<unknown> = Promise.resolve();
  private readonly bodies = new Map<string, { event: HookEvent; body: string }>();
  private readonly abort = new AbortController();
  /** Called with every payload built (the emulator's own test checks their shapes). */
  onPayload: ((event: HookEvent, payload: Record<string, unknown>) => void) | null = null;

  constructor(private readonly world: World) {}

  set(url: string, token: string | null): void {
    this.hook = { url, token };
  }

  get active(): boolean {
    return this.hook !== null || this.onPayload !== null;
  }

  /** Queues a delivery; a payload still being built (git reads) keeps its place in the order. */
  emit(event: HookEvent, payload: Record<string, unknown> | Promise<Record<string, unknown> | null>): void {
    if (!this.active) return;
    const built = Promise.resolve(payload);
    const run = this.order
      .then(() => built)
      .then((p) => {
        if (p) this.send(event, p);
      });
    this.order = run.catch(() => undefined);
    this.world.track(run);
  }

  async redeliver(uuid: string): Promise<number> {
    const b = this.bodies.get(uuid);
    if (!b) throw new Error(`no delivery ${uuid}`);
    const status = await this.post(uuid, b.event, b.body);
    const d = this.deliveries.find((x) => x.uuid === uuid);
    if (d) d.status = status;
    return status;
  }

  close(): void {
    this.abort.abort();
  }

  private send(event: HookEvent, payload: Record<string, unknown>): void {
    this.onPayload?.(event, payload);
    if (!this.hook) return;
    const uuid = randomUUID();
    const body = JSON.stringify(payload);
    this.bodies.set(uuid, { event, body });
    const d: Delivery = { uuid, event, status: 0, payload };
    const run = this.chain.then(async () => {
      if (this.world.closed) return;
      d.status = await this.post(uuid, event, body);
      this.deliveries.push(d);
    });
    this.chain = run.catch(() => undefined);
    this.world.track(run);
  }

  private async post(uuid: string, event: HookEvent, body: string): Promise<number> {
    const hook = this.hook;
    if (!hook || this.world.closed) return 0;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': 'GitLab/18.6.0',
      'x-gitlab-event': event,
      'x-gitlab-event-uuid': uuid,
      'x-gitlab-webhook-uuid': 'c0ffee00-0000-4000-8000-000000000001',
      'x-gitlab-instance': this.world.web,
      'idempotency-key': uuid,
    };
    if (hook.token !== null) headers['x-gitlab-token'] = hook.token;
    try {
      const res = await fetch(hook.url, {
        method: 'POST',
        headers,
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
