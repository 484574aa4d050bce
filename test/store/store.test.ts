import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newQueueModel, step, type PrFacts, type QueueModel } from '../../src/engine/index.js';
import { FlakyStore } from '../../src/store/flaky.js';
import { hashToken, LeaseLostError, openStore, type SchemaTables, type Store } from '../../src/store/index.js';
import { ALL_PERMISSIONS } from '../../src/contract/permissions.js';
import { postgresForFile, storeDialects } from '../support/hooks.js';
import { skipWithoutPostgres } from '../support/postgres.js';

const noPostgres = skipWithoutPostgres();
const repo = { host: 'github.com', owner: 'acme', name: 'web' };

function facts(n: number): PrFacts {
  return {
    headSha: n.toString(16).padStart(40, '0'),
    headBranch: `feature-${n}`,
    title: `PR ${n}`,
    author: 'dev',
    baseBranch: 'main',
    mergeability: 'mergeable',
    open: true,
  };
}

let ids = 0;
const ctx = () => ({ now: 1_700_000_000_000, newId: () => `id-${++ids}` });

function submit(model: QueueModel, n: number): QueueModel {
  return step(model, { type: 'submit', prNumber: n, pr: facts(n) }, ctx()).model;
}

const cluster = postgresForFile(noPostgres);
const dialects = storeDialects('railyard-store-', noPostgres, cluster).map((d) => ({
  ...d,
  open: async () => {
    const at = await d.where();
    return { reopen: () => openStore(at) };
  },
}));

describe.each(dialects)('store on $name', ({ name, skip, open }) => {
  it.skipIf(skip)('applies every migration once: a second open applies none', async () => {
    const db = await open();
    const first = await db.reopen();
    expect(first.kind).toBe(name);
    expect(first.migrated.length).toBeGreaterThan(3);
    await first.close();
    const second = await db.reopen();
    expect(second.migrated).toEqual([]);
    await second.close();
  });

  it.skipIf(skip)("keeps each token's permissions; a token stored before permissions existed (NULL) has them all", async () => {
    const db = await open();
    const store = await db.reopen();
    await store.accounts.addToken('acme', 'tok-all');
    await store.accounts.addToken('acme', 'tok-ci', 'CI', ['priority', 'merge']);
    await store.accounts.addToken('acme', 'tok-none', 'wallboard', []);
    await store.accounts.addToken('acme', 'tok-old');
    await store.db.updateTable('api_tokens').set({ permissions: null }).where('token_hash', '=', hashToken('tok-old')).execute();
    await store.close();
    const again = await db.reopen();
    const byHash = new Map((await again.accounts.listTokens()).map((t) => [t.hash, t.permissions]));
    expect(byHash.get(hashToken('tok-all'))).toEqual(ALL_PERMISSIONS);
    expect(byHash.get(hashToken('tok-ci'))).toEqual(['merge', 'priority']);
    expect(byHash.get(hashToken('tok-none'))).toEqual([]);
    expect(byHash.get(hashToken('tok-old'))).toEqual(ALL_PERMISSIONS);
    const described = await again.accounts.describeTokens('acme');
    expect(described.find((t) => t.label === 'CI')?.permissions).toEqual(['merge', 'priority']);
    expect(described.find((t) => t.label === 'wallboard')?.permissions).toEqual([]);
    await again.close();
  });

  it.skipIf(skip)('keeps queues, their pull requests and impacted targets across a reopen', async () => {
    const db = await open();
    const store = await db.reopen();
    const empty = newQueueModel('main', 'parallel', 2);
    await store.queues.insertQueue({ id: 'q1', org: 'acme', repo, model: empty });
    let model = submit(submit(empty, 1), 2);
    await store.queues.commitQueueChange('q1', empty, model, {
      prNumber: 2,
      headSha: facts(2).headSha,
      targets: ['web'],
    });
    const before = model;
    model = step(model, { type: 'cancel', prNumber: 1, reason: 'USER_REQUESTED' }, ctx()).model;
    await store.queues.commitQueueChange('q1', before, model);
    await store.close();

    const again = await db.reopen();
    const [stored] = await again.queues.loadQueues();
    expect(stored.id).toBe('q1');
    expect(stored.repo).toEqual(repo);
    expect(stored.model.config.mode).toBe('parallel');
    expect(stored.model.entries.map((e) => [e.prNumber, e.state])).toEqual(
      model.entries.map((e) => [e.prNumber, e.state]),
    );
    expect(stored.model.nextSeq).toBe(model.nextSeq);
    expect(stored.impactedTargets.get(`2:${facts(2).headSha}`)).toEqual(['web']);
    await again.close();
  });

  it.skipIf(skip)('refuses a token that belongs to another organisation', async () => {
    const store = await (await open()).reopen();
    expect(await store.accounts.addToken('acme', 'secret-1')).toBe(true);
    expect(await store.accounts.addToken('acme', 'secret-1')).toBe(false);
    await expect(store.accounts.addToken('other', 'secret-1')).rejects.toThrow(
      /already belongs to organisation "acme"/,
    );
    await store.close();
  });
});

describe.skipIf(noPostgres)('store on postgres: several replicas', () => {
  let store: Store;
  beforeAll(async () => {
    store = await openStore({ databaseUrl: await cluster().createDatabase() });
    await store.queues.insertQueue({ id: 'q1', org: 'acme', repo, model: newQueueModel('main') });
    await store.queues.insertQueue({
      id: 'q2',
      org: 'acme',
      repo: { ...repo, name: 'api' },
      model: newQueueModel('main'),
    });
  });
  afterAll(() => store.close());

  it('stores the same 12,000 new tests from two uploads in opposite orders at once: each test once, neither waits for the other in a circle', async () => {
    const flaky = new FlakyStore(store.db);
    await flaky.repositories.ensureRepository('acme', 'github.com/acme/web', repo, 'repo-1', 0);
    const tests = Array.from({ length: 12_000 }, (_, i) => ({
      id: `test-${String(i).padStart(5, '0')}`,
      n: i,
    }));
    // Three statements each (5,000 rows apiece): stored in the order given, the second statement of
    // each upload would wait for rows the other's first statement holds (PostgreSQL: deadlock).
    const stored = await Promise.all(
      [tests, [...tests].reverse()].map((order, upload) =>
        flaky.transaction((tx) =>
          tx.ingest.insertCases(order, (t) => ({
            id: t.id,
            seq: upload * 100_000 + t.n + 1,
            repo_id: 'repo-1',
            name: t.id,
            file: null,
            classname: null,
            parent: null,
            variant: '',
            first_seen_at: 0,
          })),
        ),
      ),
    );
    expect(stored[0].size + stored[1].size).toBe(12_000);
    expect(new Set([...stored[0], ...stored[1]]).size).toBe(12_000);
  });

  it('holds tests row by row: an upload of other tests goes on, one sharing a test waits, opposite orders never deadlock', async () => {
    const flaky = new FlakyStore(store.db);
    await flaky.repositories.ensureRepository(
      'acme',
      'github.com/acme/held',
      { ...repo, name: 'held' },
      'repo-3',
      0,
    );
    const seqs = Array.from({ length: 12_000 }, (_, i) => 200_000 + i);
    await flaky.transaction((tx) =>
      tx.ingest.insertCases(
        seqs.map((seq) => ({ id: `held-${seq}` })),
        (t) => ({
          id: t.id,
          seq: Number(t.id.slice(5)),
          repo_id: 'repo-3',
          name: t.id,
          file: null,
          classname: null,
          parent: null,
          variant: '',
          first_seen_at: 0,
        }),
      ),
    );
    const events: string[] = [];
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let taken!: () => void;
    const holding = new Promise<void>((resolve) => (taken = resolve));
    const first = flaky.transaction(async (tx) => {
      await tx.ingest.holdCases('repo-3', seqs.slice(0, 6_000));
      events.push('first holds its tests');
      taken();
      await released;
      events.push('first lets go');
    });
    await holding;
    await flaky.transaction(async (tx) => {
      await tx.ingest.holdCases('repo-3', seqs.slice(6_000));
      events.push('other tests held meanwhile');
    });
    const sharing = flaky.transaction(async (tx) => {
      await tx.ingest.holdCases('repo-3', [seqs[6_000], seqs[5_999]]);
      events.push('a shared test held');
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    release();
    await Promise.all([first, sharing]);
    expect(events).toEqual([
      'first holds its tests',
      'other tests held meanwhile',
      'first lets go',
      'a shared test held',
    ]);
    // Three statements each, in opposite orders as given: held in the given order, the second
    // statement of each would wait for rows the other's first one holds (PostgreSQL: deadlock).
    await Promise.all(
      [seqs, [...seqs].reverse()].map((order) =>
        flaky.transaction((tx) => tx.ingest.holdCases('repo-3', order)),
      ),
    );
  });

  it('uploads of a repository hold it together, and wait while a replica not yet upgraded holds it alone', async () => {
    const flaky = new FlakyStore(store.db);
    await flaky.repositories.ensureRepository(
      'acme',
      'github.com/acme/shared',
      { ...repo, name: 'shared' },
      'repo-2',
      0,
    );
    const events: string[] = [];
    /** A transaction that takes the repository as `take` does, then holds it until released. */
    const holder = (take: (tx: Kysely<SchemaTables>) => Promise<unknown>, name: string) => {
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let taken!: () => void;
      const holding = new Promise<void>((resolve) => (taken = resolve));
      const done = store.db.transaction().execute(async (tx) => {
        await take(tx);
        events.push(`${name} holds`);
        taken();
        await released;
        events.push(`${name} lets go`);
      });
      return { holding, release, done };
    };
    const upload = (tx: Kysely<SchemaTables>) =>
      new FlakyStore(tx).repositories.findRepository('acme', 'github.com/acme/shared', true);
    // Two uploads hold it at once.
    const first = holder(upload, 'first');
    await first.holding;
    const second = holder(upload, 'second');
    await second.holding;
    first.release();
    second.release();
    await Promise.all([first.done, second.done]);
    // A replica of before 2026-11-23 held it alone, under the same key: an upload waits for it.
    const old = holder(
      (tx) => sql`SELECT pg_advisory_xact_lock(hashtextextended('flaky:repo-2', 0))`.execute(tx),
      'old',
    );
    await old.holding;
    const third = holder(upload, 'third');
    await new Promise((resolve) => setTimeout(resolve, 200));
    old.release();
    await third.holding;
    third.release();
    await Promise.all([old.done, third.done]);
    expect(events).toEqual([
      'first holds',
      'second holds',
      'first lets go',
      'second lets go',
      'old holds',
      'old lets go',
      'third holds',
      'third lets go',
    ]);
  });

  it('serializes writes to one queue: the second writer sees the first one version later', async () => {
    const { version: start } = (await store.queues.findQueueVersion('acme', repo, 'main'))!;
    const seen: number[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const first = store.queues.transactQueue('q1', async (tx) => {
      seen.push(tx.version);
      await held;
      const stored = (await tx.load())!;
      return tx.write(stored.model, submit(stored.model, 10));
    });
    // The second transaction blocks on the row lock until the first commits.
    await new Promise((r) => setTimeout(r, 100));
    const second = store.queues.transactQueue('q1', async (tx) => {
      seen.push(tx.version);
      const stored = (await tx.load())!;
      expect(stored.model.entries.map((e) => e.prNumber)).toEqual([10]);
      return tx.write(stored.model, submit(stored.model, 11));
    });
    await new Promise((r) => setTimeout(r, 100));
    expect(seen).toEqual([start]);
    release();
    expect(await first).toBe(start + 1);
    expect(await second).toBe(start + 2);
    expect(seen).toEqual([start, start + 1]);
  });

  it('gives each queue to one replica at a time, with a new fence when it changes hands', async () => {
    const a = await store.queues.claimLeases('replica-a', 60_000);
    expect([...a.keys()].sort()).toEqual(['q1', 'q2']);
    expect((await store.queues.claimLeases('replica-b', 60_000)).size).toBe(0);
    // Renewing keeps the fence; a lease that changes hands gets a higher one.
    expect(await store.queues.claimLeases('replica-a', 60_000)).toEqual(a);
    await store.queues.releaseLeases('replica-a');
    const b = await store.queues.claimLeases('replica-b', 60_000);
    expect(b.get('q1')).toBeGreaterThan(a.get('q1')!);
    // The old holder's driving writes are refused inside the transaction.
    await expect(
      store.queues.transactQueue('q1', async (tx) =>
        tx.checkFence({ holder: 'replica-a', fence: a.get('q1')! }),
      ),
    ).rejects.toBeInstanceOf(LeaseLostError);
    await store.queues.transactQueue('q1', async (tx) =>
      tx.checkFence({ holder: 'replica-b', fence: b.get('q1')! }),
    );
  });

  it('lets an expired lease go to another replica', async () => {
    await store.queues.releaseLeases('replica-b');
    await store.queues.claimLeases('replica-c', 200);
    expect((await store.queues.claimLeases('replica-d', 60_000)).size).toBe(0);
    await new Promise((r) => setTimeout(r, 300));
    expect((await store.queues.claimLeases('replica-d', 60_000)).size).toBe(2);
  });
});
