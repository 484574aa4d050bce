// The webhook outbox's lines (migration 015): a claim reads only the first pending delivery of each
// endpoint and order key, so a backlog behind a receiver outage costs a claim nothing; every line
// still goes out in order and nothing is left behind when heads finish, fail for good or recover.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { dueHeads, openStore, type ClaimedDelivery, type Store } from '../../src/store/index.js';
import { postgresForFile, storeDialects } from '../support/hooks.js';
import { skipWithoutPostgres } from '../support/postgres.js';

const noPostgres = skipWithoutPostgres();
const cluster = postgresForFile(noPostgres);
const dialects = storeDialects('railyard-webhook-lines-', noPostgres, cluster).map((d) => ({
  ...d,
  open: async () => openStore(await d.where()),
}));

const LINES = 150;
const PER_LINE = 3;
const LEASE = 60_000;

async function endpoints(store: Store): Promise<string[]> {
  const ids: string[] = [];
  for (const url of ['https://a.example/hook', 'https://b.example/hook'])
    ids.push((await store.webhooks.endpoints.createEndpoint({ org: 'acme', url, kind: 'standard', description: null, events: null, repos: null, secret: 'whsec_dGVzdA==' })).id);
  return ids;
}

/** Writes PER_LINE events for each of LINES pull requests, interleaved (pr 1 #0, pr 2 #0, …, pr 1 #1, …), one transaction per round. */
async function writeBacklog(store: Store): Promise<void> {
  for (let n = 0; n < PER_LINE; n++) {
    const events = Array.from({ length: LINES }, (_, i) => ({ type: 'pull_request.submitted', payload: { pr: i + 1, n }, orderKey: `pr:${i + 1}`, repoKey: null }));
    await store.db.transaction().execute((trx) => store.webhooks.writeEvents(trx, 'acme', events));
  }
}

const outcome = (d: ClaimedDelivery, at: number, ok: boolean, retryAt: number | null = null) => ({
  deliveryId: d.id,
  endpointId: d.endpoint.id,
  at,
  ok,
  status: ok ? 200 : 503,
  latencyMs: 1,
  error: ok ? null : 'HTTP 503',
  response: null,
  retryAt,
});

for (const d of dialects) {
  describe.skipIf(d.skip)(`webhook lines on ${d.name}`, () => {
    it('claims only line heads behind an outage, resumes every line on recovery and delivers each in order, leaving nothing pending', { timeout: 120_000 }, async () => {
      const store = await d.open();
      try {
        const [a, b] = await endpoints(store);
        await writeBacklog(store);
        // The test's clock runs ahead of the outbox's (events are written at Date.now()), so every write is due at once.
        let now = Date.now() + 60_000;
        // The first claim finds the head of every line of both endpoints: the first event of each PR.
        const heads = await store.webhooks.claim('r1', 10_000, now, LEASE);
        expect(heads).toHaveLength(2 * LINES);
        expect(heads.every((h) => (JSON.parse(h.payload) as { n: number }).n === 0)).toBe(true);
        // The receivers are down: every head fails and waits a minute; nothing behind them is due.
        await store.webhooks.recordAttempts(heads.map((h) => outcome(h, now, false, now + 60_000)), 1e12);
        now += 1;
        expect(await store.webhooks.claim('r1', 10_000, now, LEASE)).toEqual([]);
        // A new line during the outage goes out at once.
        await store.db.transaction().execute((trx) =>
          store.webhooks.writeEvents(trx, 'acme', [{ type: 'pull_request.submitted', payload: { pr: 999, n: 0 }, orderKey: 'pr:999', repoKey: null }]),
        );
        const fresh = await store.webhooks.claim('r1', 10_000, now, LEASE);
        expect(fresh.map((f) => JSON.parse(f.payload) as { pr: number }).map((p) => p.pr)).toEqual([999, 999]);
        // Endpoint a recovers: its success sends every waiting line now; b's lines keep waiting.
        now += 1;
        await store.webhooks.recordAttempts(fresh.map((f) => outcome(f, now, f.endpoint.id === a)), 1e12);
        now += 1;
        const resumed = await store.webhooks.claim('r1', 10_000, now, LEASE);
        expect(resumed.filter((r) => r.endpoint.id === a)).toHaveLength(LINES);
        expect(resumed.filter((r) => r.endpoint.id === b)).toHaveLength(0);
        // Drain a: each success makes the next of its line the head; the order per line holds.
        const seen = new Map<string, number[]>();
        let batch = resumed;
        while (batch.length) {
          for (const c of batch) {
            const p = JSON.parse(c.payload) as { pr: number; n: number };
            const key = `${c.endpoint.id}:${p.pr}`;
            seen.set(key, [...(seen.get(key) ?? []), p.n]);
          }
          now += 1;
          await store.webhooks.recordAttempts(batch.map((c) => outcome(c, now, true)), 1e12);
          batch = (await store.webhooks.claim('r1', 10_000, now, LEASE)).filter((c) => c.endpoint.id === a);
        }
        for (let pr = 1; pr <= LINES; pr++) expect(seen.get(`${a}:${pr}`)).toEqual([0, 1, 2]);
        // b's heads give up for good (no retry left; b's line 999 already did): the next of each line is the head then.
        now += 60_000;
        const bHeads = await store.webhooks.claim('r1', 10_000, now, LEASE);
        expect(bHeads.map((h) => h.endpoint.id)).toEqual(Array(LINES).fill(b));
        await store.webhooks.recordAttempts(bHeads.map((h) => outcome(h, now, false, null)), 1e12);
        const next = await store.webhooks.claim('r1', 10_000, now, LEASE);
        expect(next).toHaveLength(LINES);
        expect(next.every((h) => (JSON.parse(h.payload) as { n: number }).n === 1)).toBe(true);
        const pending = await store.db.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll<number>().as('n')).where('state', '=', 'pending').executeTakeFirstOrThrow();
        expect(Number(pending.n)).toBe(2 * LINES);
      } finally {
        await store.close();
      }
    });

    it('an endpoint back after an outage longer than one transaction moves: the rest of its heads move in chunks, none is left waiting', { timeout: 120_000 }, async () => {
      const store = await d.open();
      try {
        const [a] = await endpoints(store);
        const LONG = 1200;
        const events = Array.from({ length: LONG }, (_, i) => ({ type: 'pull_request.submitted', payload: { pr: i + 1 }, orderKey: `pr:${i + 1}`, repoKey: null }));
        await store.db.transaction().execute((trx) => store.webhooks.writeEvents(trx, 'acme', events));
        let now = Date.now() + 60_000;
        const heads = (await store.webhooks.claim('r1', 10_000, now, LEASE)).filter((h) => h.endpoint.id === a);
        expect(heads).toHaveLength(LONG);
        await store.webhooks.recordAttempts(heads.map((h) => outcome(h, now, false, now + 3_600_000)), 1e12);
        now += 1;
        const [result] = await store.webhooks.recordAttempts([outcome(heads[0], now, true)], 1e12);
        expect(result.resumeAt).toBe(now);
        let moved = 0;
        for (let n; (n = await store.webhooks.resumeHeads(a, now)) > 0; ) moved += n;
        expect(moved).toBe(LONG - 1 - 500);
        const due = (await store.webhooks.claim('r1', 10_000, now, LEASE)).filter((h) => h.endpoint.id === a);
        expect(due).toHaveLength(LONG - 1);
      } finally {
        await store.close();
      }
    });

    it('a replayed delivery waits behind its line when the line is busy and goes out alone when it is not', async () => {
      const store = await d.open();
      try {
        const [a] = await endpoints(store);
        await store.db.transaction().execute((trx) =>
          store.webhooks.writeEvents(trx, 'acme', [0, 1].map((n) => ({ type: 'pull_request.submitted', payload: { pr: 1, n }, orderKey: 'pr:1', repoKey: null }))),
        );
        const now = Date.now() + 60_000;
        const [first] = (await store.webhooks.claim('r1', 10, now, LEASE)).filter((c) => c.endpoint.id === a);
        await store.webhooks.recordAttempts([outcome(first, now, true)], 1e12);
        // The line still has n = 1 pending: the replay of n = 0 goes after it.
        expect(await store.webhooks.replay('acme', first.id)).toBeDefined();
        const second = (await store.webhooks.claim('r1', 10, now, LEASE)).filter((c) => c.endpoint.id === a);
        expect(second.map((c) => (JSON.parse(c.payload) as { n: number }).n)).toEqual([1]);
        await store.webhooks.recordAttempts(second.map((c) => outcome(c, now, true)), 1e12);
        const replayed = (await store.webhooks.claim('r1', 10, now, LEASE)).filter((c) => c.endpoint.id === a);
        expect(replayed.map((c) => [c.messageId, (JSON.parse(c.payload) as { n: number }).n])).toEqual([[first.messageId, 0]]);
      } finally {
        await store.close();
      }
    });
  });
}

describe('the claim query plan on SQLite', () => {
  it('walks the index of due line heads: no scan of the pending set, no sort', async () => {
    const store = await dialects[0].open();
    try {
      const claim = dueHeads('ep_x', Date.now(), 32, sql`AND id NOT IN (${sql.join([1, 2, 3])})`).compile(store.db);
      const { rows } = await store.db.executeQuery<{ detail: string }>({ ...claim, sql: `EXPLAIN QUERY PLAN ${claim.sql}` });
      const plan = rows.map((r) => r.detail);
      expect(plan.join(' | ')).toMatch(/USING INDEX webhook_deliveries_heads \(endpoint_id=\? AND next_at<\?\)/);
      expect(plan.join(' | ')).not.toMatch(/SCAN|TEMP B-TREE/);
    } finally {
      await store.close();
    }
  });
});
