/**
 * Outgoing webhooks in the database, part 2: the outbox (`webhook_messages`, written inside the
 * transaction of the change that causes the event), the deliveries, their attempts and the
 * delivery log. Endpoints and secrets are in webhook-endpoints.ts (WebhookStore's `endpoints`),
 * the lines' heads and the record of attempts in webhook-lines.ts.
 * Every SQL statement of webhooks is in these three files; what an event says is decided by the
 * server (src/server/webhooks/events.ts), which hands this store pure builders with each write.
 */
import { EventEmitter } from 'node:events';
import { sql, type Kysely, type Transaction } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import type { Repo } from '../contract/index.js';
import type { QueueModel } from '../engine/types.js';
import type { SchemaTables } from './schema.js';
import type { StoreKind } from './connect.js';
import type { PrTransition } from './queue-rows.js';
import {
  ENDPOINT_COLUMNS,
  endpointOf,
  enabledEndpoints,
  endpointWants,
  numOrNull,
  WebhookEndpoints,
} from './webhook-endpoints.js';
import type { EndpointRow, EndpointSecrets, WebhookEndpoint } from './webhook-endpoints.js';
import {
  CHUNK,
  markHeads,
  recordAttemptsIn,
  RESUME_CHUNK,
  resumeHeadsIn,
  type AttemptOutcome,
  type AttemptResult,
  type DeliveryState,
  type NewDelivery,
} from './webhook-lines.js';
import { onTicketLine, TicketStore } from './tickets.js';

export { endpointWants, publicEndpoint } from './webhook-endpoints.js';
export type {
  EndpointKind,
  EndpointSecrets,
  EndpointState,
  NewEndpoint,
  WebhookEndpoint,
} from './webhook-endpoints.js';
export type { AttemptOutcome, AttemptResult, DeliveryState } from './webhook-lines.js';

type Db = Kysely<SchemaTables> | Transaction<SchemaTables>;

/** One event for the outbox: its type, its JSON body, and what orders and filters it. */
export interface OutboxEvent {
  type: string;
  payload: Record<string, unknown>;
  /** Events of one endpoint with the same key are delivered in the order they were written. */
  orderKey: string;
  /** `host/owner/name` in lower case, for endpoints filtered by repository (null: any filter passes). */
  repoKey: string | null;
}

/** The queue a change belongs to, as the event builder needs it. */
export interface QueueIdentity {
  id: string;
  org: string;
  repo: Repo;
  branch: string;
}

/** Turns one committed queue step into events at time `at` (pure: the server's src/server/webhooks/events.ts). */
export type QueueEventBuilder = (
  queue: QueueIdentity,
  before: QueueModel,
  after: QueueModel,
  transitions: readonly PrTransition[],
  at: number,
) => OutboxEvent[];

/** A delivery a replica claimed: what to send where. */
export interface ClaimedDelivery {
  id: number;
  messageId: string;
  type: string;
  payload: string;
  messageCreatedAt: number;
  attempts: number;
  endpoint: EndpointSecrets;
}

export interface AttemptRecord {
  n: number;
  at: number;
  status: number | null;
  latencyMs: number;
  error: string | null;
  response: string | null;
}

export interface DeliveryRecord {
  id: number;
  endpointId: string;
  messageId: string;
  type: string;
  state: DeliveryState;
  attempts: number;
  nextAt: number | null;
  lastStatus: number | null;
  lastError: string | null;
  createdAt: number;
  finishedAt: number | null;
  payload: string;
  log: AttemptRecord[];
}

/** Emits `written` after events were put in the outbox (the deliverers of this process look at once). */
const outboxSignals = new EventEmitter();
outboxSignals.setMaxListeners(0);

/**
 * Writes events of `org` to the outbox inside `trx`, one delivery per enabled endpoint that wants
 * each (flaky-test changes call this from their own transaction through FlakyStore).
 */
export async function writeWebhookEvents(
  trx: Db,
  org: string,
  events: readonly OutboxEvent[],
  only?: string,
): Promise<string[]> {
  if (!events.length) return [];
  let endpoints = await enabledEndpoints(trx, org);
  if (only !== undefined) endpoints = endpoints.filter((e) => e.id === only);
  if (!endpoints.length) return [];
  return insertEvents(trx, org, events, endpoints, only !== undefined);
}

async function insertEvents(
  trx: Db,
  org: string,
  events: readonly OutboxEvent[],
  endpoints: readonly Pick<WebhookEndpoint, 'id' | 'kind' | 'events' | 'repos'>[],
  force = false,
): Promise<string[]> {
  const now = Date.now();
  const messages: { id: string; org_slug: string; type: string; payload: string; created_at: number }[] = [];
  const deliveries: NewDelivery[] = [];
  for (const event of events) {
    const targets = endpoints.filter((e) => onTicketLine(e, event.type) && (force || endpointWants(e, event.type, event.repoKey)));
    if (!targets.length) continue;
    const id = `msg_${uuidv7().replaceAll('-', '')}`;
    messages.push({
      id,
      org_slug: org,
      type: event.type,
      payload: JSON.stringify(event.payload),
      created_at: now,
    });
    for (const e of targets)
      deliveries.push({
        endpoint_id: e.id,
        message_id: id,
        order_key: event.orderKey,
        state: 'pending',
        next_at: now,
        created_at: now,
      });
  }
  await markHeads(trx, deliveries);
  for (let i = 0; i < messages.length; i += CHUNK)
    await trx
      .insertInto('webhook_messages')
      .values(messages.slice(i, i + CHUNK))
      .execute();
  // In event order: the ids number the deliveries in the order they must go out.
  for (let i = 0; i < deliveries.length; i += CHUNK)
    await trx
      .insertInto('webhook_deliveries')
      .values(deliveries.slice(i, i + CHUNK))
      .execute();
  if (messages.length) setTimeout(() => outboxSignals.emit('written'), 2).unref();
  return messages.map((m) => m.id);
}

/**
 * The due line heads of one endpoint, oldest due first, at most `limit` (`extra`: more conditions;
 * `lock`: a locking clause). Exported for the test that checks its query plan.
 */
export function dueHeads(endpointId: string, now: number, limit: number, extra = sql``, lock = sql``) {
  return sql<{ id: number; next_at: number }>`
    SELECT id, next_at FROM webhook_deliveries
    WHERE endpoint_id = ${endpointId} AND state = 'pending' AND head = 1 AND next_at <= ${now} AND lease_until <= ${now} ${extra}
    ORDER BY next_at, id LIMIT ${limit} ${lock}`;
}

/**
 * Called inside the transaction that commits a queue step (queues.ts): the step's events (its
 * PRs' changes, and the queue's own: paused, resumed, drained, mode changed), made by `build`, go
 * to the outbox with it, one delivery per endpoint that wants them. Nothing when no endpoint exists.
 */
export async function writeQueueStep(
  trx: Db,
  queueId: string,
  before: QueueModel,
  after: QueueModel,
  transitions: readonly PrTransition[],
  build: QueueEventBuilder,
): Promise<void> {
  if (!transitions.length && before.config === after.config) return;
  const queue = await trx
    .selectFrom('queues')
    .select(['org_slug', 'repo_host', 'repo_owner', 'repo_name', 'branch'])
    .where('id', '=', queueId)
    .executeTakeFirst();
  if (!queue) return;
  const endpoints = await enabledEndpoints(trx, queue.org_slug);
  if (!endpoints.length) return;
  const repo = { host: queue.repo_host, owner: queue.repo_owner, name: queue.repo_name };
  const at = transitions.reduce((latest, t) => Math.max(latest, t.at), 0) || Date.now();
  const events = build(
    { id: queueId, org: queue.org_slug, repo, branch: queue.branch },
    before,
    after,
    transitions,
    at,
  );
  await insertEvents(trx, queue.org_slug, events, endpoints);
}

/**
 * The webhooks part of the store (`store.webhooks`): the endpoints (`endpoints`), the outbox,
 * claiming and recording deliveries, and the delivery log.
 */
export class WebhookStore {
  /** Emits `written` after events were put in the outbox (the deliverer looks at once). */
  readonly signals = outboxSignals;
  /** The organisations' endpoints and their secrets. */
  readonly endpoints: WebhookEndpoints;
  /** Tickets of unhealthy tests, sent through this outbox. */
  readonly tickets: TicketStore;

  constructor(
    private readonly db: Kysely<SchemaTables>,
    readonly kind: StoreKind,
  ) {
    this.endpoints = new WebhookEndpoints(db, this.signals);
    this.tickets = new TicketStore(db);
  }

  // ------------------------------------------------------------------ the outbox

  /** Writes events of `org` to the outbox inside `trx` (see writeWebhookEvents). */
  writeEvents(trx: Db, org: string, events: readonly OutboxEvent[], only?: string): Promise<string[]> {
    return writeWebhookEvents(trx, org, events, only);
  }

  // ------------------------------------------------------------------ delivering

  /**
   * Claims up to `limit` due deliveries for `holder` until now + leaseMs: line heads only (the
   * first pending delivery of each endpoint and order key), of enabled endpoints, none of
   * `busyEndpoints`, oldest due first. Each endpoint is one walk of `webhook_deliveries_heads` that
   * stops after `limit` rows, so a claim costs the same behind a backlog of any size. On
   * PostgreSQL the rows are locked with SKIP LOCKED, so replicas claiming at once take different
   * ones; on SQLite the server is the database's only deliverer.
   */
  async claim(
    holder: string,
    limit: number,
    now: number,
    leaseMs: number,
    busyEndpoints: readonly string[] = [],
    inFlight: readonly number[] = [],
  ): Promise<ClaimedDelivery[]> {
    if (limit <= 0) return [];
    const lock = this.kind === 'postgres' ? sql`FOR UPDATE SKIP LOCKED` : sql``;
    // SQLite: one deliverer per database, so its claims live in memory (`inFlight`) and a claim
    // writes nothing (a commit per claim cost an fsync each time).
    const mine =
      this.kind === 'sqlite' && inFlight.length ? sql`AND id NOT IN (${sql.join(inFlight)})` : sql``;
    const run = async (trx: Db) => {
      const endpoints = await trx
        .selectFrom('webhook_endpoints')
        .select('id')
        .where('state', '=', 'enabled')
        .execute();
      const due: { id: number; next_at: number }[] = [];
      for (const { id: endpointId } of endpoints) {
        if (busyEndpoints.includes(endpointId)) continue;
        const { rows } = await dueHeads(endpointId, now, limit, mine, lock).execute(trx);
        for (const r of rows) due.push({ id: Number(r.id), next_at: Number(r.next_at) });
      }
      if (!due.length) return [];
      const ids = due
        .sort((a, b) => a.next_at - b.next_at || a.id - b.id)
        .slice(0, limit)
        .map((r) => r.id);
      if (this.kind === 'postgres')
        await trx
          .updateTable('webhook_deliveries')
          .set({ lease_until: now + leaseMs, leased_by: holder })
          .where('id', 'in', ids)
          .execute();
      const claimed = await trx
        .selectFrom('webhook_deliveries as d')
        .innerJoin('webhook_messages as m', 'm.id', 'd.message_id')
        .innerJoin('webhook_endpoints as ep', 'ep.id', 'd.endpoint_id')
        .select([
          'd.id as delivery_id',
          'd.attempts',
          'm.id as message_id',
          'm.type',
          'm.payload',
          'm.created_at as message_created_at',
        ])
        .select(ENDPOINT_COLUMNS.map((c) => `ep.${c}` as const))
        .where('d.id', 'in', ids)
        .orderBy('d.id')
        .execute();
      return claimed.map((r) => ({
        id: Number(r.delivery_id),
        messageId: r.message_id,
        type: r.type,
        payload: r.payload,
        messageCreatedAt: Number(r.message_created_at),
        attempts: Number(r.attempts),
        endpoint: endpointOf(r as unknown as EndpointRow),
      }));
    };
    return this.kind === 'postgres' ? this.db.transaction().execute(run) : run(this.db);
  }

  /** Whether the outbox holds no message at all: nothing to deliver, retry or prune until the next write. */
  async outboxEmpty(): Promise<boolean> {
    return !(await this.db.selectFrom('webhook_messages').select('id').limit(1).executeTakeFirst());
  }

  /** Forgets the claims of a replica that stopped (SQLite at start: the only writer, so every claim). */
  async releaseClaims(holder?: string): Promise<void> {
    // Only leased rows are written (on SQLite claims live in memory: normally none).
    let q = this.db
      .updateTable('webhook_deliveries')
      .set({ lease_until: 0, leased_by: null })
      .where('state', '=', 'pending')
      .where('lease_until', '>', 0);
    if (holder !== undefined) q = q.where('leased_by', '=', holder);
    await q.execute();
  }

  /**
   * Records attempts in one transaction (one commit): each delivery succeeds, waits for its
   * `retryAt`, or fails for good, and its line's next delivery becomes the head; the endpoints'
   * failing_since follows (a success clears it and sends what waited at once). Answers, per attempt,
   * whether its endpoint has been failing for longer than `disableAfterMs` (it is then disabled).
   */
  async recordAttempts(
    outcomes: readonly AttemptOutcome[],
    disableAfterMs: number,
  ): Promise<AttemptResult[]> {
    if (!outcomes.length) return [];
    return this.db.transaction().execute((trx) => recordAttemptsIn(trx, outcomes, disableAfterMs));
  }

  /** Moves up to `limit` more heads of an endpoint that came back at `at` to due now (see AttemptResult.resumeAt); answers how many. */
  async resumeHeads(endpointId: string, at: number, limit = RESUME_CHUNK): Promise<number> {
    return this.db.transaction().execute((trx) => resumeHeadsIn(trx, endpointId, at, limit));
  }

  // ------------------------------------------------------------------ the delivery log

  /** The latest deliveries of an endpoint (newest first), each with its attempts; `before`: older than this id. */
  async listDeliveries(endpointId: string, limit: number, before?: number): Promise<DeliveryRecord[]> {
    let q = this.db
      .selectFrom('webhook_deliveries as d')
      .innerJoin('webhook_messages as m', 'm.id', 'd.message_id')
      .select([
        'd.id',
        'd.endpoint_id',
        'd.message_id',
        'm.type',
        'm.payload',
        'd.state',
        'd.attempts',
        'd.next_at',
        'd.last_status',
        'd.last_error',
        'd.created_at',
        'd.finished_at',
      ])
      .where('d.endpoint_id', '=', endpointId)
      .orderBy('d.id', 'desc')
      .limit(limit);
    if (before !== undefined) q = q.where('d.id', '<', before);
    const rows = await q.execute();
    const ids = rows.map((r) => Number(r.id));
    const attempts = ids.length
      ? await this.db
          .selectFrom('webhook_attempts')
          .selectAll()
          .where('delivery_id', 'in', ids)
          .orderBy('delivery_id')
          .orderBy('n')
          .execute()
      : [];
    const log = new Map<number, AttemptRecord[]>();
    for (const a of attempts) {
      const list = log.get(Number(a.delivery_id)) ?? [];
      list.push({
        n: Number(a.n),
        at: Number(a.at),
        status: numOrNull(a.status),
        latencyMs: Number(a.latency_ms),
        error: a.error,
        response: a.response,
      });
      log.set(Number(a.delivery_id), list);
    }
    return rows.map((r) => ({
      id: Number(r.id),
      endpointId: r.endpoint_id,
      messageId: r.message_id,
      type: r.type,
      state: r.state as DeliveryState,
      attempts: Number(r.attempts),
      nextAt: r.state === 'pending' ? Number(r.next_at) : null,
      lastStatus: numOrNull(r.last_status),
      lastError: r.last_error,
      createdAt: Number(r.created_at),
      finishedAt: numOrNull(r.finished_at),
      payload: r.payload,
      log: log.get(Number(r.id)) ?? [],
    }));
  }

  /** The endpoint (of `org`) a delivery belongs to, or undefined. */
  async deliveryEndpoint(
    org: string,
    deliveryId: number,
  ): Promise<{ endpointId: string; messageId: string; orderKey: string } | undefined> {
    const row = await this.db
      .selectFrom('webhook_deliveries as d')
      .innerJoin('webhook_endpoints as ep', 'ep.id', 'd.endpoint_id')
      .select(['d.endpoint_id', 'd.message_id', 'd.order_key'])
      .where('d.id', '=', deliveryId)
      .where('ep.org_slug', '=', org)
      .executeTakeFirst();
    return row && { endpointId: row.endpoint_id, messageId: row.message_id, orderKey: row.order_key };
  }

  /** Sends a delivered (or failed) event again: a new delivery of the same message (same webhook-id). */
  async replay(org: string, deliveryId: number): Promise<number | undefined> {
    const found = await this.deliveryEndpoint(org, deliveryId);
    if (!found) return undefined;
    const now = Date.now();
    const delivery: NewDelivery = {
      endpoint_id: found.endpointId,
      message_id: found.messageId,
      order_key: found.orderKey,
      state: 'pending',
      next_at: now,
      created_at: now,
    };
    // In a transaction: the head check and the insert must not be split by the line's head finishing.
    const row = await this.db.transaction().execute(async (trx) => {
      await markHeads(trx, [delivery]);
      return trx.insertInto('webhook_deliveries').values(delivery).returning('id').executeTakeFirstOrThrow();
    });
    this.signals.emit('written');
    return Number(row.id);
  }

  /** Deletes finished deliveries (and messages no delivery refers to any more) older than `before`. */
  async prune(before: number): Promise<void> {
    const old = this.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('state', '<>', 'pending')
      .where('created_at', '<', before);
    await this.db.deleteFrom('webhook_attempts').where('delivery_id', 'in', old).execute();
    await this.db
      .deleteFrom('webhook_deliveries')
      .where('state', '<>', 'pending')
      .where('created_at', '<', before)
      .execute();
    await this.db
      .deleteFrom('webhook_messages')
      .where('created_at', '<', before)
      .where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom('webhook_deliveries')
              .select('id')
              .whereRef('webhook_deliveries.message_id', '=', 'webhook_messages.id'),
          ),
        ),
      )
      .execute();
  }
}
