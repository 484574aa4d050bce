/**
 * `/v1/status` tells the truth about the database (issue 26, item 13): with the real PostgreSQL
 * cluster stopped it answers 503 with Trunk's "impacted" shape (red, naming why), quickly — from a
 * cached probe, not a query of its own — and 200 "All systems operational" again once the
 * cluster is back.
 */
import { describe, expect, it } from 'vitest';
import { cleanupsAfterEach, postgresForFile } from '../support/hooks.js';
import { skipWithoutPostgres } from '../support/postgres.js';
import { startTestServer } from '../support/server.js';
import { ok, Q } from './helpers.js';

const noPostgres = skipWithoutPostgres();
// Its own cluster: the tests stop and start it.
const cluster = postgresForFile(noPostgres, { own: true });
const cleanup = cleanupsAfterEach();

async function status(url: string) {
  const t0 = performance.now();
  const res = await fetch(`${url}/status`);
  const body = (await res.json()) as { overallStatus: { type: string; color: string; impactedStatuses?: { statusDescription: string }[] } };
  return { status: res.status, body, ms: performance.now() - t0, retryAfter: res.headers.get('retry-after') };
}

/** Asks every 100 ms until `until` holds (at most 30 s); every answer must come fast. */
async function statusUntil(url: string, until: (s: Awaited<ReturnType<typeof status>>) => boolean) {
  const deadline = Date.now() + 30_000;
  const times: number[] = [];
  for (;;) {
    const s = await status(url);
    times.push(s.ms);
    if (until(s)) return { last: s, times };
    if (Date.now() > deadline) throw new Error(`status never changed: ${JSON.stringify(s.body)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.skipIf(noPostgres)('/v1/status and PostgreSQL', () => {
  it('answers 503 "impacted" while the cluster is stopped, fast, and 200 once it is back', { timeout: 120_000 }, async () => {
    const pg = cluster();
    const server = await startTestServer({ databaseUrl: await pg.createDatabase() });
    cleanup(() => server.close());
    await ok(server, 'createQueue', Q);
    const up = await status(server.url);
    expect(up.status).toBe(200);
    expect(up.body.overallStatus).toEqual({ type: 'up', color: 'green', overallStatusDescription: 'All systems operational' });

    await pg.stop();
    cleanup(() => pg.start().catch(() => undefined));
    const down = await statusUntil(server.url, (s) => s.status === 503);
    expect(down.last.body.overallStatus.type).toBe('impacted');
    expect(down.last.body.overallStatus.color).toBe('red');
    expect(down.last.body.overallStatus.impactedStatuses?.[0]?.statusDescription).toMatch(/database is unreachable/);
    expect(down.last.retryAfter).toBe('5');
    // From the cache: no status request waited for the dead database.
    expect(Math.max(...down.times)).toBeLessThan(1_000);

    await pg.start();
    const back = await statusUntil(server.url, (s) => s.status === 200);
    expect(back.last.body.overallStatus.type).toBe('up');
    expect(await ok(server, 'getQueue', Q)).toHaveProperty('state');
  });
});
