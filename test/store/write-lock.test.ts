/**
 * The write lock the server's threads share for one SQLite file (src/store/write-lock.ts): the
 * request thread's connection and a second thread's (the webhook deliverer's, sqliteSideDialect)
 * take it around their transactions. Writing from both at once under load must lose nothing and
 * never deadlock; a thread that dies inside a transaction must not leave the server's writes
 * waiting; a thread never waits for a lock it holds itself. Real SQLite files, a real worker
 * thread running the built store (`npm run build` first).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { Kysely, sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { sqliteDialect } from '../../src/store/connect.js';
import { sharedWriteLock, WriteLock } from '../../src/store/write-lock.js';

const BUILT = resolve(import.meta.dirname, '../../build/store');

/**
 * A worker thread with the deliverer's kind of connection (the built sqliteSideDialect with the
 * server's lock): on 'write', `count` transactions of two inserts each with a turn of its event
 * loop between them (as Kysely's transactions span awaits); on 'hold', one transaction that never
 * ends (it says 'holding' once inside).
 */
const WORKER = `
const { workerData, parentPort } = require('node:worker_threads');
(async () => {
  const { sqliteSideDialect } = await import(workerData.connect);
  const { WriteLock } = await import(workerData.lock);
  const { Kysely, sql } = await import(workerData.kysely);
  const db = new Kysely({ dialect: sqliteSideDialect(workerData.file, 5000, new WriteLock(workerData.buffer)) });
  parentPort.on('message', async (m) => {
    try {
      if (m.write) {
        for (let i = 0; i < m.write; i++)
          await db.transaction().execute(async (trx) => {
            await sql\`INSERT INTO t (who, n) VALUES ('thread', \${i})\`.execute(trx);
            await new Promise((r) => setImmediate(r));
            await sql\`INSERT INTO t (who, n) VALUES ('thread', \${i})\`.execute(trx);
          });
        parentPort.postMessage({ wrote: m.write });
      } else if (m.hold) {
        await db.transaction().execute(async (trx) => {
          await sql\`INSERT INTO t (who, n) VALUES ('held', 0)\`.execute(trx);
          parentPort.postMessage({ holding: true });
          await new Promise(() => undefined);
        });
      }
    } catch (error) {
      parentPort.postMessage({ error: String(error) });
    }
  });
  parentPort.postMessage({ ready: true });
})().catch((error) => parentPort.postMessage({ error: String(error) }));
`;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A fresh SQLite file opened as the server opens it (sqliteDialect: the shared lock), with table t. */
async function serverDb(): Promise<{ file: string; db: Kysely<any> }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const dir = mkdtempSync(join(tmpdir(), 'railyard-write-lock-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'railyard.sqlite');
  const { dialect, stop } = sqliteDialect(file);
  const db = new Kysely<any>({ dialect }); // eslint-disable-line @typescript-eslint/no-explicit-any
  cleanups.push(async () => {
    await stop?.();
    await db.destroy();
  });
  await sql`CREATE TABLE t (id INTEGER PRIMARY KEY, who TEXT NOT NULL, n INTEGER NOT NULL)`.execute(db);
  return { file, db };
}

type FromWorker = { ready?: true; wrote?: number; holding?: true; error?: string };

/** Starts the worker on `file` with the process's lock for it; `next` resolves on its next message. */
async function startWorker(file: string): Promise<{ worker: Worker; next: () => Promise<FromWorker> }> {
  const worker = new Worker(WORKER, {
    eval: true,
    workerData: {
      file,
      buffer: sharedWriteLock(file).buffer,
      connect: pathToFileURL(join(BUILT, 'connect.js')).href,
      lock: pathToFileURL(join(BUILT, 'write-lock.js')).href,
      kysely: pathToFileURL(createRequire(import.meta.url).resolve('kysely')).href,
    },
  });
  const exited = new Promise<void>((done) => worker.once('exit', () => done()));
  cleanups.push(async () => {
    await worker.terminate();
    await exited;
  });
  const inbox: FromWorker[] = [];
  let wake: (() => void) | undefined;
  worker.on('message', (m: FromWorker) => {
    inbox.push(m);
    wake?.();
  });
  worker.on('error', (error) => {
    inbox.push({ error: String(error) });
    wake?.();
  });
  const next = async () => {
    while (!inbox.length) await new Promise<void>((r) => (wake = r));
    return inbox.shift()!;
  };
  expect(await next()).toEqual({ ready: true });
  return { worker, next };
}

describe('the write lock shared by the server thread and the deliverer thread (SQLite)', () => {
  it('both threads writing at once (transactions, and single writes on the server thread): every row committed, no SQLITE_BUSY, no deadlock', { timeout: 120_000 }, async () => {
    const { file, db } = await serverDb();
    const { worker, next } = await startWorker(file);
    const COUNT = 200;
    worker.postMessage({ write: COUNT });
    // The server thread's transactions at the same time, each also spanning turns of its loop.
    for (let i = 0; i < COUNT; i++) {
      await db.transaction().execute(async (trx) => {
        await sql`INSERT INTO t (who, n) VALUES ('server', ${i})`.execute(trx);
        await new Promise((r) => setImmediate(r));
        await sql`INSERT INTO t (who, n) VALUES ('server', ${i})`.execute(trx);
      });
      // and a write outside a transaction (it takes the lock for its own run)
      await sql`INSERT INTO t (who, n) VALUES ('server-alone', ${i})`.execute(db);
    }
    expect(await next()).toEqual({ wrote: COUNT });
    const rows = await sql<{ who: string; rows: number }>`SELECT who, COUNT(*) AS rows FROM t GROUP BY who ORDER BY who`.execute(db);
    expect(rows.rows).toEqual([
      { who: 'server', rows: 2 * COUNT },
      { who: 'server-alone', rows: COUNT },
      { who: 'thread', rows: 2 * COUNT },
    ]);
  });

  it('a thread that dies inside its transaction leaves the server thread writing at once, not after the lock times out', { timeout: 60_000 }, async () => {
    const { file, db } = await serverDb();
    const { worker, next } = await startWorker(file);
    worker.postMessage({ hold: true });
    expect(await next()).toEqual({ holding: true });
    const { threadId } = worker;
    const exited = new Promise<void>((done) => worker.once('exit', () => done()));
    // What DelivererThread does when its thread exits.
    worker.once('exit', () => sharedWriteLock(file).releaseIfHeldBy(threadId));
    await worker.terminate();
    await exited;
    const started = performance.now();
    await db.transaction().execute((trx) => sql`INSERT INTO t (who, n) VALUES ('server', 1)`.execute(trx));
    // Without the release it waits the lock's 5 s; a generous margin for a loaded machine.
    expect(performance.now() - started).toBeLessThan(2500);
    const rows = await sql<{ who: string }>`SELECT who FROM t ORDER BY id`.execute(db);
    expect(rows.rows).toEqual([{ who: 'server' }]); // the dead thread's transaction was rolled back
  });

  it('never waits for a lock its own thread holds (a second connection of the same thread)', () => {
    const lock = new WriteLock();
    expect(lock.acquire(5000)).toBe(true);
    const started = performance.now();
    expect(lock.acquire(5000)).toBe(false);
    expect(performance.now() - started).toBeLessThan(1000);
    lock.release();
    expect(lock.acquire(0)).toBe(true);
    lock.release();
  });
});
