// Quarantine overrides whose end has come (migration 022, src/store/flaky-lapses.ts): found once
// their end came and not before, marked announced once by two stores claiming at once, found
// again for a new override's own end and never for the end of one replaced, and kept across a
// reopen (an end not announced is not lost, one announced is not found again).
import { describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/store/index.js';
import { postgresForFile, storeDialects } from '../support/hooks.js';
import { skipWithoutPostgres } from '../support/postgres.js';

const noPostgres = skipWithoutPostgres();
const cluster = postgresForFile(noPostgres);
const dialects = storeDialects('railyard-flaky-lapses-', noPostgres, cluster).map((d) => ({
  ...d,
  open: async () => {
    const at = await d.where();
    return () => openStore(at);
  },
}));
const repo = { host: 'github.com', owner: 'acme', name: 'web' };

async function seed(store: Store): Promise<void> {
  await store.flaky.repositories.ensureRepository('acme', 'github.com/acme/web', repo, 'r1', 1000);
  await store.flaky.ingest.insertCases([{ id: 't1' }, { id: 't2' }, { id: 't3' }], (t) => ({
    id: t.id,
    seq: Number(t.id.slice(1)),
    repo_id: 'r1',
    name: `${t.id} works`,
    file: null,
    classname: null,
    parent: null,
    variant: '',
    first_seen_at: 1000,
  }));
}

const brief = (lapses: Awaited<ReturnType<Store['flaky']['lapses']['due']>>) =>
  lapses.map((l) => [
    l.test.id,
    l.test.override,
    l.test.override_until,
    l.repository.org,
    l.repository.repo.name,
  ]);

for (const d of dialects) {
  describe.skipIf(d.skip)(`lapsed quarantine overrides on ${d.name}`, () => {
    it('are due once their end came, marked once by two stores at once, due again for a new end only, across a reopen', async () => {
      const reopen = await d.open();
      const a = await reopen();
      const b = await reopen();
      try {
        await seed(a);
        const set = (
          id: string,
          value: 'ALWAYS_QUARANTINE' | 'NEVER_QUARANTINE',
          at: number,
          until: number | null,
        ) => a.flaky.cases.setOverride(id, value, at, { until, owner: 'alice', reason: 'KAN-9' });
        await set('t1', 'ALWAYS_QUARANTINE', 1000, 5000);
        await set('t2', 'NEVER_QUARANTINE', 1000, null);
        await set('t3', 'ALWAYS_QUARANTINE', 1000, 7000);
        expect(await a.flaky.lapses.due(4999, 10)).toEqual([]);
        // Both stores read it before either marks it: one mark wins.
        const [seenA, seenB] = await Promise.all([
          a.flaky.lapses.due(5000, 10),
          b.flaky.lapses.due(5000, 10),
        ]);
        expect(brief(seenA)).toEqual([['t1', 'ALWAYS_QUARANTINE', 5000, 'acme', 'web']]);
        expect(brief(seenB)).toEqual(brief(seenA));
        const claim = (s: Store) =>
          s.flaky.transaction((tx) => tx.lapses.claim('t1', 'ALWAYS_QUARANTINE', 5000));
        // PostgreSQL: at once (the second waits for the first's row lock, then finds the row
        // marked). SQLite has one writer: the second transaction begins once the first ended (two
        // connections of one thread cannot hold transactions at once).
        const claims =
          d.name === 'postgres' ? await Promise.all([claim(a), claim(b)]) : [await claim(a), await claim(b)];
        expect(claims.sort()).toEqual([false, true]);
        expect(brief(await b.flaky.lapses.due(6999, 10))).toEqual([]);
        expect((await a.flaky.cases.findCase('r1', 't1'))?.override_lapse_sent).toBe(5000);

        // A new override on t1 clears the mark and is due at its own end; t3, replaced before its
        // end, is never due for the old one, and its old end marks nothing.
        await set('t1', 'NEVER_QUARANTINE', 8000, 20_000);
        expect((await a.flaky.cases.findCase('r1', 't1'))?.override_lapse_sent).toBeNull();
        await set('t3', 'NEVER_QUARANTINE', 6000, 30_000);
        expect(await a.flaky.lapses.claim('t3', 'ALWAYS_QUARANTINE', 7000)).toBe(false);
        expect(brief(await a.flaky.lapses.due(19_999, 10))).toEqual([]);
        expect(brief(await a.flaky.lapses.due(30_000, 10))).toEqual([
          ['t1', 'NEVER_QUARANTINE', 20_000, 'acme', 'web'],
          ['t3', 'NEVER_QUARANTINE', 30_000, 'acme', 'web'],
        ]);
        expect(brief(await a.flaky.lapses.due(30_000, 1))).toEqual([
          ['t1', 'NEVER_QUARANTINE', 20_000, 'acme', 'web'],
        ]);
        expect(await a.flaky.lapses.claim('t1', 'NEVER_QUARANTINE', 20_000)).toBe(true);
      } finally {
        await a.close();
        await b.close();
      }
      // After a reopen: t3's end is still due, t1's is not.
      const again = await reopen();
      try {
        expect(brief(await again.flaky.lapses.due(40_000, 10))).toEqual([
          ['t3', 'NEVER_QUARANTINE', 30_000, 'acme', 'web'],
        ]);
      } finally {
        await again.close();
      }
    });
  });
}
