/**
 * Delivers the webhook outbox: claims due deliveries (the first pending one of each endpoint and
 * pull request, so one PR's events arrive in order), signs and POSTs them, records every attempt,
 * and retries failures with exponential backoff and jitter over more than 24 hours. Each replica
 * runs one; claims are leases (PostgreSQL: FOR UPDATE SKIP LOCKED), so replicas deliver each event
 * once in the normal case and a replica that dies leaves its claims to the others when they lapse.
 * An endpoint whose every attempt failed for `disableAfterMs` is disabled, with a log line.
 * Ticket lines (kind `ticket`) are delivered the same way; their attempt asks the tracker
 * (src/server/tickets/sync.ts) instead of POSTing the event.
 */
import { randomUUID } from 'node:crypto';
import type { AttemptOutcome, AttemptResult, ClaimedDelivery, WebhookStore } from '../../store/index.js';
import { slackMessage, sendToSlack } from './slack.js';
import { signedHeaders } from './signer.js';
import { AddressRefused, WebhookTransport, type AddressPolicy } from './ssrf.js';
import type { TicketOptions } from '../tickets/config.js';
import type { TicketWork } from '../tickets/events.js';
import { syncTicket, trackerFor } from '../tickets/sync.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** Waits before the 2nd, 3rd, … attempt (Svix's schedule): 8 attempts over about 27.5 hours. */
export const RETRY_SCHEDULE_MS = [
  5 * SECOND,
  5 * MINUTE,
  30 * MINUTE,
  2 * HOUR,
  5 * HOUR,
  10 * HOUR,
  10 * HOUR,
];

export interface WebhookOptions extends AddressPolicy {
  /** The dashboard's address, for links in payloads (default: the address the server listens on). */
  publicUrl?: string;
  /** Per attempt (ms); default 10 s. */
  timeoutMs?: number;
  /** Waits between attempts (ms); default RETRY_SCHEDULE_MS. */
  retrySchedule?: readonly number[];
  /** An endpoint failing for this long is disabled (ms); default 5 days. */
  disableAfterMs?: number;
  /** How often the outbox is looked at besides when events are written (ms); default 250. */
  pollMs?: number;
  /** Where tickets of unhealthy tests go and the token they are opened with. */
  tickets?: TicketOptions;
}

export interface DelivererLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

const MAX_IN_FLIGHT = 32;
/**
 * How long a finished attempt may wait to be recorded with others. With KICK_MS this paces a
 * backlog's drain (a slot is held until its attempt is recorded): 20 ms and 10 ms drained 936
 * deliveries a second to two endpoints while no thread was busy (bench/README.md 2026-11-26 20:39).
 */
const RECORD_MS = 10;
const PER_ENDPOINT = 8;
/** How long kicks are gathered before one look at the outbox. */
const KICK_MS = 5;
const PRUNE_AFTER_MS = 30 * 24 * HOUR;

export class Deliverer {
  readonly holder = `deliverer-${randomUUID()}`;
  readonly transport: WebhookTransport;
  private readonly schedule: readonly number[];
  private readonly disableAfterMs: number;
  private readonly leaseMs: number;
  private readonly inFlight = new Map<number, { endpoint: string; done: Promise<void> }>();
  private timer: NodeJS.Timeout | undefined;
  private kickTimer: NodeJS.Timeout | undefined;
  private pumping = false;
  /** The running look at the outbox, if any: close() waits for what it claims. */
  private pumped: Promise<void> | undefined;
  /** When the outbox first failed to answer, while it does not. */
  private unreadableSince: number | null = null;
  private again = false;
  private stopped = false;
  private lastPrune = 0;
  private readonly onWritten = () => this.kick();
  /** Attempts waiting to be recorded: written together, every RECORD_MS at most (one commit for many). */
  private outcomes: {
    outcome: AttemptOutcome;
    delivery: ClaimedDelivery;
    done: (result: AttemptResult) => void;
    fail: (e: unknown) => void;
  }[] = [];
  private flushTimer: NodeJS.Timeout | undefined;
  /** Endpoints that came back with more waiting heads than one transaction moves: the rest, a chunk at a time. */
  private readonly resuming = new Map<string, Promise<void>>();

  constructor(
    private readonly store: WebhookStore,
    options: WebhookOptions,
    private readonly log: DelivererLog,
    private readonly now: () => number = Date.now,
  ) {
    this.transport = new WebhookTransport(
      { allowPrivate: options.allowPrivate, allowHttp: options.allowHttp },
      options.timeoutMs ?? 10 * SECOND,
    );
    this.schedule = options.retrySchedule ?? RETRY_SCHEDULE_MS;
    this.disableAfterMs = options.disableAfterMs ?? 5 * 24 * HOUR;
    this.leaseMs = Math.max(30 * SECOND, 3 * this.transport.timeoutMs);
    this.pollMs = options.pollMs ?? 250;
    this.tickets = options.tickets ?? {};
  }

  private readonly tickets: TicketOptions;

  private readonly pollMs: number;

  async start(): Promise<void> {
    // SQLite: this server is the database's only writer, so claims left by a killed process are void.
    if (this.store.kind === 'sqlite') await this.store.releaseClaims();
    this.store.signals.on('written', this.onWritten);
    this.timer = setInterval(() => this.kick(), this.pollMs);
    this.timer.unref();
    this.kick();
  }

  async close(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.kickTimer);
    this.store.signals.off('written', this.onWritten);
    // A look at the outbox that was claiming when close began: what it claimed is in flight once it ends.
    await this.pumped;
    const pending = Promise.all([...this.inFlight.values()].map((f) => f.done));
    await this.flush();
    await pending;
    await this.flush();
    await Promise.all(this.resuming.values());
    this.transport.close();
  }

  /**
   * Looks for due deliveries within KICK_MS: the kicks of that window (an outbox write, each
   * finished attempt) share one look, so a busy outbox costs a few claim queries per second on the
   * server's thread instead of two per delivery.
   */
  kick(): void {
    if (this.stopped) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.kickTimer ??= setTimeout(() => {
      this.kickTimer = undefined;
      this.pumpNow();
    }, KICK_MS);
  }

  private pumpNow(): void {
    if (this.stopped) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    this.pumped = this.pump()
      .then(
        () => {
          if (this.unreadableSince === null) return;
          this.log.info(
            { seconds: Math.round((this.now() - this.unreadableSince) / SECOND) },
            'webhook deliverer: the outbox answers again',
          );
          this.unreadableSince = null;
        },
        (error: unknown) => {
          // Said once per outage, not on every poll: the database being down is reported by /healthz and the requests.
          if (this.unreadableSince !== null) return;
          this.unreadableSince = this.now();
          this.log.error(
            { err: error },
            'webhook deliverer: could not read the outbox; trying again quietly until it answers',
          );
        },
      )
      .finally(() => {
        this.pumping = false;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  private async pump(): Promise<void> {
    for (;;) {
      if (this.stopped) return;
      const perEndpoint = new Map<string, number>();
      for (const f of this.inFlight.values())
        perEndpoint.set(f.endpoint, (perEndpoint.get(f.endpoint) ?? 0) + 1);
      const busy = [...perEndpoint].filter(([, n]) => n >= PER_ENDPOINT).map(([id]) => id);
      const free = MAX_IN_FLIGHT - this.inFlight.size;
      if (free <= 0) return;
      const now = this.now();
      const claimed = (
        await this.store.claim(this.holder, free, now, this.leaseMs, busy, [...this.inFlight.keys()])
      ).filter((d) => !this.inFlight.has(d.id));
      for (const d of claimed) {
        const done = this.deliver(d)
          .catch((error: unknown) =>
            this.log.error({ err: error, delivery: d.id }, 'webhook deliverer: could not record an attempt'),
          )
          .finally(() => {
            this.inFlight.delete(d.id);
            this.kick();
          });
        this.inFlight.set(d.id, { endpoint: d.endpoint.id, done });
      }
      if (!this.stopped && now - this.lastPrune > HOUR) {
        this.lastPrune = now;
        await this.store.prune(now - PRUNE_AFTER_MS);
      }
      if (!claimed.length) return;
    }
  }

  /** Records an attempt with the others of the next RECORD_MS, in one transaction. */
  private record(delivery: ClaimedDelivery, outcome: AttemptOutcome): Promise<AttemptResult> {
    return new Promise((done, fail) => {
      this.outcomes.push({ outcome, delivery, done, fail });
      this.flushTimer ??= setTimeout(() => void this.flush(), RECORD_MS);
    });
  }

  private async flush(): Promise<void> {
    this.flushTimer = undefined;
    const batch = this.outcomes.splice(0);
    if (!batch.length) return;
    try {
      const results = await this.store.recordAttempts(
        batch.map((b) => b.outcome),
        this.disableAfterMs,
      );
      batch.forEach((b, i) => b.done(results[i]));
    } catch (error) {
      for (const b of batch) b.fail(error);
    }
  }

  /**
   * Makes the rest of an endpoint's waiting heads due, one short transaction per chunk with a turn
   * of the event loop between (the server's writes get the database between two chunks).
   */
  private resume(endpointId: string, at: number): void {
    if (this.resuming.has(endpointId)) return;
    const run = (async () => {
      try {
        while (!this.stopped && (await this.store.resumeHeads(endpointId, at)) > 0) {
          this.kick();
          await new Promise((next) => setImmediate(next));
        }
      } catch (error) {
        this.log.error(
          { err: error, endpoint: endpointId },
          'webhook deliverer: could not resume the deliveries waiting for an endpoint that answers again',
        );
      } finally {
        this.resuming.delete(endpointId);
      }
    })();
    this.resuming.set(endpointId, run);
  }

  /** The delay before attempt `n + 1` after `n` failed ones, with ±20 % jitter; null after the last. */
  private retryAt(attempts: number, at: number): number | null {
    const wait = this.schedule[attempts - 1];
    if (wait === undefined) return null;
    return Math.round(at + wait * (0.8 + Math.random() * 0.4));
  }

  /** One attempt of one delivery, recorded whatever happens. */
  private async deliver(d: ClaimedDelivery): Promise<void> {
    const started = performance.now();
    const at = this.now();
    let status: number | null = null;
    let response: string | null = null;
    let error: string | null = null;
    try {
      if (d.endpoint.kind === 'ticket') {
        const work = JSON.parse(d.payload) as TicketWork;
        ({ status, excerpt: response } = await syncTicket(
          this.store.tickets,
          trackerFor(this.transport, work, this.tickets),
          work,
          at,
        ));
      } else if (d.endpoint.kind === 'slack') {
        const message = slackMessage(d.type, JSON.parse(d.payload) as Record<string, unknown>);
        if (message)
          ({ status, excerpt: response } = await sendToSlack(this.transport, d.endpoint.url, message));
        else {
          status = 204;
          response = 'not sent: Slack endpoints get no message for this event';
        }
      } else {
        const secrets = [d.endpoint.secret];
        if (d.endpoint.previousSecret && (d.endpoint.previousSecretUntil ?? 0) > at)
          secrets.push(d.endpoint.previousSecret);
        const headers = signedHeaders(secrets, d.messageId, Math.floor(at / 1000), d.payload);
        const answer = await this.transport.post(d.endpoint.url, d.payload, headers);
        status = answer.status;
        response = answer.excerpt;
      }
      if (status !== null && (status < 200 || status >= 300))
        error =
          status >= 300 && status < 400 ? `HTTP ${status} (redirects are not followed)` : `HTTP ${status}`;
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      error =
        e instanceof AddressRefused
          ? `refused: ${err.message}`
          : `${err.code ? `${err.code}: ` : ''}${err.message}`.slice(0, 500);
    }
    const ok = error === null;
    const attempts = d.attempts + 1;
    const result = await this.record(d, {
      deliveryId: d.id,
      endpointId: d.endpoint.id,
      at,
      ok,
      status,
      latencyMs: performance.now() - started,
      error,
      response,
      retryAt: ok ? null : this.retryAt(attempts, at),
    });
    if (result.resumeAt !== undefined) this.resume(d.endpoint.id, result.resumeAt);
    if (!ok)
      this.log.warn(
        {
          endpoint: d.endpoint.id,
          delivery: d.id,
          webhookId: d.messageId,
          type: d.type,
          attempt: attempts,
          error,
        },
        'webhook delivery failed',
      );
    if (result.disabled)
      this.log.warn(
        {
          endpoint: d.endpoint.id,
          url: d.endpoint.url,
          failingSince: new Date(result.failingSince ?? at).toISOString(),
        },
        d.endpoint.kind === 'ticket'
          ? 'ticket line disabled: the tracker refused or missed every request for too long; `railyard flaky settings --ticket-system …` turns it back on'
          : 'webhook endpoint disabled: every delivery failed for too long; `railyard webhook enable` turns it back on',
      );
  }
}
