/**
 * Outgoing webhooks in the database, part 3: the lines of the outbox and the record of attempts.
 * Deliveries of one endpoint and order key (one pull request, one test) form a line that goes out
 * in id order; its first pending delivery is the line's head (migration 015), the only one a claim
 * reads (webhooks.ts). This file keeps the heads true: when deliveries are written (markHeads)
 * and when an attempt finishes one (recordAttemptsIn, which also keeps the endpoints' failing
 * state). Used by webhooks.ts inside its transactions.
 */
import { PostgresAdapter, sql, type Kysely, type Transaction } from 'kysely';
import type { SchemaTables } from './schema.js';
import { numOrNull } from './webhook-endpoints.js';

type Db = Kysely<SchemaTables> | Transaction<SchemaTables>;

/** Rows per multi-row INSERT (SQLite allows 32,766 parameters; PostgreSQL 65,535). */
export const CHUNK = 200;

export type DeliveryState = 'pending' | 'succeeded' | 'failed';

export interface AttemptOutcome {
  deliveryId: number;
  endpointId: string;
  at: number;
  ok: boolean;
  status: number | null;
  latencyMs: number;
  error: string | null;
  response: string | null;
  /** When to try again; null: give up (the delivery fails). */
  retryAt: number | null;
}

/** Per attempt: whether its endpoint got disabled by it, and since when the endpoint fails. */
export interface AttemptResult {
  disabled: boolean;
  failingSince: number | null;
  /**
   * Set when this success brought its endpoint back and more heads wait than one transaction
   * moves (RESUME_CHUNK): the rest are moved by resumeHeads(endpoint, this time), a chunk at a time.
   */
  resumeAt?: number;
}

/** Heads moved to "due now" per transaction when an endpoint comes back (~4 ms of the write lock). */
export const RESUME_CHUNK = 500;

/**
 * Makes up to `limit` heads of `endpointId` that wait for a retry due at `at` (the endpoint answers
 * again); answers how many it moved. A short transaction each: behind a long outage tens of
 * thousands wait, and moving them at once held SQLite's write lock for ~170 ms.
 */
export async function resumeHeadsIn(trx: Db, endpointId: string, at: number, limit: number): Promise<number> {
  const [result] = await trx
    .updateTable('webhook_deliveries')
    .set({ next_at: at })
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('endpoint_id', '=', endpointId)
        .where('state', '=', 'pending')
        .where('head', '=', 1)
        .where('next_at', '>', at)
        .orderBy('next_at')
        .limit(limit),
    )
    .execute();
  return Number(result?.numUpdatedRows ?? 0);
}

export type NewDelivery = { endpoint_id: string; message_id: string; order_key: string; state: string; next_at: number; created_at: number; head?: number };

export const lineOf = (endpointId: string, orderKey: string) => `${endpointId}\n${orderKey}`;

/**
 * PostgreSQL: takes the transaction's advisory lock of each line (endpoint, order key), in one
 * order, so that a transaction adding deliveries to a line and one finishing the line's head run
 * one after the other: otherwise a delivery written beside the head's completion could be marked
 * as waiting behind a head that is already gone, and nothing would ever send it. On SQLite every
 * write transaction holds the database's write lock (`begin immediate`), which serializes them.
 */
async function lockLines(trx: Db, lines: Iterable<string>): Promise<void> {
  if (!(trx.getExecutor().adapter instanceof PostgresAdapter)) return;
  const keys = [...new Set(lines)];
  if (!keys.length) return;
  await sql`SELECT count(pg_advisory_xact_lock(h)) FROM (
      SELECT DISTINCT hashtextextended('webhook-line:' || k, 0) AS h FROM unnest(${keys}::text[]) AS k ORDER BY h) s`.execute(trx);
}

/**
 * Marks each new delivery that starts its line (no pending delivery of its endpoint and order key
 * before it) as the line's head: the only deliveries a claim reads (migration 015).
 */
export async function markHeads(trx: Db, deliveries: NewDelivery[]): Promise<void> {
  if (!deliveries.length) return;
  await lockLines(trx, deliveries.map((d) => lineOf(d.endpoint_id, d.order_key)));
  const endpoints = [...new Set(deliveries.map((d) => d.endpoint_id))];
  const keys = [...new Set(deliveries.map((d) => d.order_key))];
  const taken = new Set<string>();
  for (let i = 0; i < keys.length; i += CHUNK) {
    const rows = await trx
      .selectFrom('webhook_deliveries')
      .select(['endpoint_id', 'order_key'])
      .distinct()
      .where('state', '=', 'pending')
      .where('endpoint_id', 'in', endpoints)
      .where('order_key', 'in', keys.slice(i, i + CHUNK))
      .execute();
    for (const r of rows) taken.add(lineOf(r.endpoint_id, r.order_key));
  }
  for (const d of deliveries) {
    const line = lineOf(d.endpoint_id, d.order_key);
    d.head = taken.has(line) ? 0 : 1;
    taken.add(line);
  }
}


/**
 * Records `outcomes` inside `trx` with few statements, as the deliverer's transactions hold the
 * database's write lock (SQLite) while they run: one read of the deliveries and one of their
 * endpoints, one multi-row insert of the attempts, then per attempt the delivery's update (and,
 * when it finished its line's head, the next one's promotion), and per endpoint at most one update.
 */
export async function recordAttemptsIn(trx: Db, outcomes: readonly AttemptOutcome[], disableAfterMs: number): Promise<AttemptResult[]> {
  const ids = [...new Set(outcomes.map((o) => o.deliveryId))];
  const readRows = () =>
    trx.selectFrom('webhook_deliveries').select(['id', 'attempts', 'endpoint_id', 'order_key', 'head', 'state']).where('id', 'in', ids).execute();
  let rows = await readRows();
  if (trx.getExecutor().adapter instanceof PostgresAdapter) {
    await lockLines(trx, rows.map((r) => lineOf(r.endpoint_id, r.order_key)));
    rows = await readRows(); // as committed by whoever held a line before us
  }
  const deliveries = new Map(rows.map((r) => [Number(r.id), { attempts: Number(r.attempts), endpoint: r.endpoint_id, orderKey: r.order_key, head: Number(r.head) === 1, state: r.state }]));
  const endpointIds = [...new Set(outcomes.map((o) => o.endpointId))];
  const endpoints = new Map(
    (await trx.selectFrom('webhook_endpoints').select(['id', 'failing_since', 'state']).where('id', 'in', endpointIds).execute()).map((e) => [
      e.id,
      { failingSince: numOrNull(e.failing_since), was: numOrNull(e.failing_since), enabled: e.state === 'enabled', disabled: null as string | null, at: 0 },
    ]),
  );
  const attempts: { delivery_id: number; n: number; at: number; status: number | null; latency_ms: number; error: string | null; response: string | null }[] = [];
  const out: AttemptResult[] = [];
  for (const o of outcomes) {
    const d = deliveries.get(o.deliveryId);
    if (!d) {
      out.push({ disabled: false, failingSince: null });
      continue;
    }
    d.attempts += 1;
    attempts.push({ delivery_id: o.deliveryId, n: d.attempts, at: o.at, status: o.status, latency_ms: Math.round(o.latencyMs), error: o.error, response: o.response });
    const state: DeliveryState = o.ok ? 'succeeded' : o.retryAt === null ? 'failed' : 'pending';
    await trx
      .updateTable('webhook_deliveries')
      .set({
        attempts: d.attempts,
        state,
        next_at: o.retryAt ?? o.at,
        lease_until: 0,
        leased_by: null,
        last_status: o.status,
        last_error: o.error,
        finished_at: state === 'pending' ? null : o.at,
      })
      .where('id', '=', o.deliveryId)
      .execute();
    if (state !== 'pending' && d.state === 'pending' && d.head) {
      // The line's next delivery (if any) is its head now: the next claim sends it.
      await sql`UPDATE webhook_deliveries SET head = 1 WHERE id = (
          SELECT min(id) FROM webhook_deliveries
          WHERE endpoint_id = ${d.endpoint} AND order_key = ${d.orderKey} AND state = 'pending')`.execute(trx);
    }
    d.state = state;
    const ep = endpoints.get(o.endpointId);
    if (!ep) {
      out.push({ disabled: false, failingSince: null });
      continue;
    }
    if (o.ok) {
      if (ep.failingSince !== null) {
        ep.failingSince = null;
        // The endpoint is back: the heads waiting for a retry go out now, not at their backed-off time
        // (the first RESUME_CHUNK here, the rest in transactions of their own).
        if ((await resumeHeadsIn(trx, o.endpointId, o.at, RESUME_CHUNK)) >= RESUME_CHUNK) {
          out.push({ disabled: false, failingSince: null, resumeAt: o.at });
          continue;
        }
      }
      out.push({ disabled: false, failingSince: null });
      continue;
    }
    ep.failingSince ??= o.at;
    if (ep.enabled && o.at - ep.failingSince >= disableAfterMs) {
      ep.enabled = false;
      ep.at = o.at;
      ep.disabled = `every delivery failed since ${new Date(ep.failingSince).toISOString()} (last: ${o.error ?? `HTTP ${o.status}`})`;
      out.push({ disabled: true, failingSince: ep.failingSince });
    } else out.push({ disabled: false, failingSince: ep.failingSince });
  }
  for (let i = 0; i < attempts.length; i += CHUNK) await trx.insertInto('webhook_attempts').values(attempts.slice(i, i + CHUNK)).execute();
  // In id order, so two replicas' batches never wait on each other's endpoint rows in a cycle.
  for (const [id, ep] of [...endpoints].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (ep.failingSince !== ep.was) {
      let q = trx.updateTable('webhook_endpoints').set({ failing_since: ep.failingSince }).where('id', '=', id);
      // Failing from now on: unless another replica saw it fail first (its time stays).
      if (ep.was === null) q = q.where('failing_since', 'is', null);
      await q.execute();
    }
    if (ep.disabled !== null)
      await trx
        .updateTable('webhook_endpoints')
        .set({ state: 'disabled', disabled_reason: ep.disabled, updated_at: ep.at })
        .where('id', '=', id)
        .where('state', '=', 'enabled')
        .execute();
  }
  return out;
}
