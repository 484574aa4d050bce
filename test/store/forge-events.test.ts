// The record of what a forge driver acted on (migration 011): each delivery or command comment is
// claimed once, also by two stores on the same database and after reopening it; rows stay bounded.
import { describe, expect, it } from 'vitest';
import { ForgeEventsStore, openStore, type Store } from '../../src/store/index.js';
import { postgresForFile, storeDialects } from '../support/hooks.js';
import { skipWithoutPostgres } from '../support/postgres.js';

const noPostgres = skipWithoutPostgres();
const cluster = postgresForFile(noPostgres);
const dialects = storeDialects('railyard-forge-events-', noPostgres, cluster).map((d) => ({
  ...d,
  open: async () => {
    const at = await d.where();
    return () => openStore(at);
  },
}));

for (const d of dialects) {
  describe.skipIf(d.skip)(`forge events on ${d.name}`, () => {
    it('claims a key once, across two stores and a reopen, per repository and kind', async () => {
      const reopen = await d.open();
      const a: Store = await reopen();
      const b: Store = await reopen();
      try {
        const ea = new ForgeEventsStore(a.db);
        const eb = new ForgeEventsStore(b.db);
        const claims = await Promise.all([
          ea.claim('github', 'h/acme/app', 'delivery', 'd-1'),
          eb.claim('github', 'h/acme/app', 'delivery', 'd-1'),
        ]);
        expect(claims.sort()).toEqual([false, true]);
        expect(await ea.claim('github', 'h/acme/app', 'comment', 'd-1')).toBe(true);
        expect(await ea.claim('github', 'h/acme/other', 'delivery', 'd-1')).toBe(true);
      } finally {
        await a.close();
        await b.close();
      }
      const again = await reopen();
      try {
        expect(await new ForgeEventsStore(again.db).claim('github', 'h/acme/app', 'delivery', 'd-1')).toBe(false);
      } finally {
        await again.close();
      }
    });

    it('keeps at most about `keep` rows per repository and kind, dropping the oldest', async () => {
      const store = await (await d.open())();
      try {
        const events = new ForgeEventsStore(store.db, 20);
        for (let i = 0; i < 45; i++) expect(await events.claim('github', 'h/a/b', 'delivery', `k${i}`, 1000 + i)).toBe(true);
        const n = await events.count('github', 'h/a/b', 'delivery');
        expect(n).toBeGreaterThanOrEqual(20);
        expect(n).toBeLessThanOrEqual(22);
        // The newest are still there (a replay of them does nothing); the oldest were dropped.
        expect(await events.claim('github', 'h/a/b', 'delivery', 'k44')).toBe(false);
        expect(await events.claim('github', 'h/a/b', 'delivery', 'k0')).toBe(true);
      } finally {
        await store.close();
      }
    });
  });
}
