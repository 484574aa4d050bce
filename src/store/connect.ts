/**
 * Opening the store's database: embedded SQLite (WAL kept bounded by a checkpointer thread,
 * prepared statements kept) or PostgreSQL through pg's pool. openStore (store.ts) uses these.
 */
import { closeSync, existsSync, openSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import {
  PostgresDialect,
  SqliteDialect,
  type Dialect,
  type SqliteDatabase,
  type SqliteStatement,
} from 'kysely';
import { parsePermissions } from '../contract/permissions.js';
import type { StoredToken } from './accounts.js';
import { walIndexedVersion } from './wal-index.js';
import { sharedWriteLock, type WriteLock } from './write-lock.js';

export type StoreOptions =
  /** Embedded SQLite at `<dataDir>/railyard.sqlite` (created if missing). */
  | { dataDir: string }
  /** Explicit SQLite file, or `:memory:`. */
  | { sqlitePath: string }
  /** PostgreSQL (`postgres://…`) through `pg`'s pool: several replicas can share one database. */
  | { databaseUrl: string; poolSize?: number; statementTimeoutMs?: number }
  /** Any Kysely dialect: the store uses nothing SQLite-specific. */
  | { dialect: Dialect };

export type { Db } from './schema.js';

/** Which database the store runs on: the few statements that differ are chosen by this. */
export type StoreKind = 'sqlite' | 'postgres';

export const SQLITE_FILE = 'railyard.sqlite';

/**
 * Creates the database file readable by its owner alone (0600) before SQLite opens it: SQLite
 * gives its -wal and -shm files the database file's permissions. An existing file keeps its own.
 */
function createPrivately(path: string): void {
  if (path === ':memory:' || path === '' || existsSync(path)) return;
  closeSync(openSync(path, 'a', 0o600));
}

/** Per SQLite database: a number that changes when ANOTHER connection commits (PRAGMA data_version). */
export const dataVersions = new WeakMap<Dialect, () => number>();

/**
 * Per SQLite database: the stored token hashes, read at once on the server's connection (no wait
 * behind a transaction in progress; tokens are only written by `railyard token`, another process,
 * or by the server's own addToken, which reloads after it).
 */
export const tokenReaders = new WeakMap<Dialect, () => StoredToken[]>();

/** WAL size past which the checkpointer copies it into the database (PASSIVE: blocks nobody). */
const CHECKPOINT_BYTES = 16 * 1024 * 1024;
/** WAL size past which it also truncates the WAL (TRUNCATE: waits for the writer, briefly holds new ones). */
const TRUNCATE_BYTES = 24 * 1024 * 1024;
/** Past this the server's own connection truncates the WAL before its next transaction. */
const HARD_WAL_BYTES = 32 * 1024 * 1024;
/** The WAL file is cut back to this when SQLite restarts it from its beginning (journal_size_limit). */
const WAL_KEEP_BYTES = 16 * 1024 * 1024;

/**
 * The checkpointer: a worker thread with its own connection that copies the WAL into the database
 * so that the WAL stays bounded. SQLite's automatic checkpoint runs inside the COMMIT that crosses
 * the size, on the event loop: after a big flaky-test upload that held every request for ~0.7 s.
 *
 * PASSIVE (never blocks the server's reads or writes) copies most of it. But PASSIVE alone never
 * lets the WAL start over while writes come back to back — SQLite rewinds the WAL only when a
 * write begins after a checkpoint that finished, and there is always a newer write — so under
 * sustained writes the WAL grew 246 → 786 MB in 45 s (bench/wal.ts). Past TRUNCATE_BYTES the
 * checkpointer tries TRUNCATE without waiting (it gets through between two writes), and past
 * HARD_WAL_BYTES the server's connection truncates it itself before its next transaction, when
 * no write of its own is open (see sqliteDialect).
 */
const CHECKPOINTER = `
const { workerData, parentPort } = require('node:worker_threads');
const { statSync } = require('node:fs');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
// No waiting: a checkpoint that waits holds the checkpoint lock, and the server's own TRUNCATE
// (between two transactions) then finds it busy; under back-to-back writes neither got through.
db.pragma('busy_timeout = 0');
const walSize = () => { try { return statSync(workerData.path + '-wal').size; } catch { return 0; } };
const check = () => {
  if (walSize() <= workerData.bytes) return;
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch {}
  if (walSize() > workerData.truncateBytes) { try { db.pragma('wal_checkpoint(TRUNCATE)'); } catch {} }
};
check();
const timer = setInterval(check, 250);
parentPort.once('message', () => { clearInterval(timer); db.close(); parentPort.close(); });
`;

/**
 * WAL size at which the checkpointer thread is started (see startCheckpointer): SQLite's own
 * checkpoint size (1,000 pages), above the ~1 MB that creating a database's tables writes.
 */
const CHECKPOINTER_START_BYTES = 4 * 1024 * 1024;

/**
 * Starts the checkpointer once the WAL passes CHECKPOINTER_START_BYTES, far below the size at which
 * it acts (CHECKPOINT_BYTES): a thread and a second connection cost ~25 ms of CPU, which a server
 * that writes little — a test's, a demo's — never needs. Until then this thread looks at the
 * WAL's size every 250 ms (one stat, the checkpointer's own rhythm), and `poke` lets a transaction
 * that just saw it grow start it at once. Returns `poke` and the stop function.
 */
function startCheckpointer(
  path: string,
  onError: () => void,
): { poke: (walBytes: number) => void; stop: () => Promise<void> } {
  let stopWorker: (() => Promise<void>) | undefined;
  let stopped = false;
  const start = () => {
    clearInterval(watch);
    const worker = new Worker(CHECKPOINTER, {
      eval: true,
      workerData: {
        path,
        bytes: CHECKPOINT_BYTES,
        truncateBytes: TRUNCATE_BYTES,
        driver: createRequire(import.meta.url).resolve('better-sqlite3'),
      },
    });
    worker.unref();
    worker.on('error', onError);
    const exited = new Promise<void>((done) => worker.once('exit', () => done()));
    stopWorker = async () => {
      worker.ref(); // keep the process alive until it has closed its connection
      worker.postMessage('close');
      await exited;
    };
  };
  const poke = (walBytes: number) => {
    if (!stopWorker && !stopped && walBytes > CHECKPOINTER_START_BYTES) start();
  };
  const watch = setInterval(() => {
    try {
      poke(statSync(`${path}-wal`).size);
    } catch {
      // no WAL yet
    }
  }, 250);
  watch.unref();
  return {
    poke,
    stop: async () => {
      stopped = true;
      clearInterval(watch);
      await stopWorker?.();
    },
  };
}

export function sqliteDialect(path: string): { dialect: Dialect; stop?: () => Promise<void> } {
  createPrivately(path);
  const database = new Database(path);
  database.pragma('journal_mode = WAL');
  database.pragma('foreign_keys = ON');
  database.pragma('busy_timeout = 5000');
  database.pragma(`journal_size_limit = ${WAL_KEEP_BYTES}`);
  const walFile = path === ':memory:' ? null : `${path}-wal`;
  // Checkpoints run on the checkpointer's thread, never in a COMMIT here. (Past 16 MB, not
  // SQLite's 4 MB: a flaky-test upload of new tests dirties hundreds of index pages, and
  // checkpointing that often cost ~50 % more per commit.)
  if (walFile) database.pragma('wal_autocheckpoint = 0');
  // Should the checkpointer fail, COMMITs checkpoint again (the WAL must not grow without end).
  const checkpointHere = () => {
    if (database.open) database.pragma(`wal_autocheckpoint = ${CHECKPOINT_BYTES / 4096}`);
  };
  const checkpointer = walFile ? startCheckpointer(path, checkpointHere) : undefined;
  // The last resort when the checkpointer's TRUNCATE keeps missing the moments between back-to-back
  // transactions: past HARD_WAL_BYTES the next transaction truncates the WAL itself before it begins
  // (on this thread; PASSIVE has copied most of it already, so what is left is short).
  const beforeBegin = () => {
    if (!walFile) return;
    let bytes = 0;
    try {
      bytes = statSync(walFile).size;
    } catch {
      return;
    }
    checkpointer?.poke(bytes);
    if (bytes > HARD_WAL_BYTES) {
      try {
        database.pragma('wal_checkpoint(TRUNCATE)');
      } catch {
        // busy: the next transaction tries again
      }
    }
  };
  const dialect = new SqliteDialect({
    database: keepingStatements(database, 256, {
      beforeBegin,
      lock: path === ':memory:' || path === '' ? undefined : sharedWriteLock(path),
    }),
  });
  const version = database.prepare('PRAGMA data_version').pluck();
  const exact = () => version.get() as number;
  // Not for a temporary database (''): its "-shm" would be a file of the working directory.
  const versions = walFile && path !== '' ? walIndexedVersion(`${resolve(path)}-shm`, exact) : undefined;
  dataVersions.set(dialect, versions?.version ?? exact);
  let tokens: Database.Statement | undefined;
  tokenReaders.set(dialect, () => {
    tokens ??= database.prepare('SELECT token_hash, org_slug, permissions, label FROM api_tokens');
    return (
      tokens.all() as {
        token_hash: string;
        org_slug: string;
        permissions: string | null;
        label: string | null;
      }[]
    ).map((r) => ({
      hash: r.token_hash,
      org: r.org_slug,
      permissions: parsePermissions(r.permissions),
      label: r.label,
    }));
  });
  return {
    dialect,
    stop: async () => {
      versions?.close();
      await checkpointer?.stop();
    },
  };
}

/**
 * A second connection to an SQLite file the server has open (a worker thread's: the webhook
 * deliverer). Its transactions begin immediate like the server's and never checkpoint (the
 * server's checkpointer does). With `lock` (the buffer of the server's sharedWriteLock for the
 * file, see write-lock.ts) they wait for the server's transactions on it, and the server's for
 * theirs, each woken the moment the other commits; `busyMs` bounds that wait and SQLite's.
 */
export function sqliteSideDialect(path: string, busyMs = 5000, lock?: WriteLock): Dialect {
  const database = new Database(path, { fileMustExist: true });
  database.pragma('foreign_keys = ON');
  database.pragma(`busy_timeout = ${busyMs}`);
  database.pragma('wal_autocheckpoint = 0');
  return new SqliteDialect({ database: keepingStatements(database, 64, { lock, lockWaitMs: busyMs }) });
}

/**
 * The database as Kysely sees it, with prepared statements kept per SQL text (the most recently
 * used `size`): Kysely prepares every query it runs, and compiling the same multi-row statement
 * again for every upload cost more than running it. Kysely's `begin` becomes `begin immediate`.
 *
 * With `lock` (an SQLite file the server's threads share, see write-lock.ts) every transaction
 * takes that lock before `begin immediate` and gives it back once COMMIT or ROLLBACK has ended it,
 * so that a transaction waiting for another thread's starts the moment that one ends instead of
 * after SQLite's busy handler's next sleep. A write outside a transaction takes it for its run.
 */
function keepingStatements(
  database: Database.Database,
  size = 256,
  {
    beforeBegin,
    lock,
    lockWaitMs = 5000,
  }: { beforeBegin?: () => void; lock?: WriteLock; lockWaitMs?: number } = {},
): SqliteDatabase {
  const kept = new Map<string, Database.Statement>();
  /** Whether this connection holds `lock` (from its begin to its commit or rollback). */
  let held = false;
  const giveBack = () => {
    if (held && !database.inTransaction) {
      held = false;
      lock!.release();
    }
  };
  const prepared = (source: string) => {
    let statement = kept.get(source);
    if (statement) kept.delete(source);
    else {
      statement = database.prepare(source);
      if (kept.size >= size) kept.delete(kept.keys().next().value!);
    }
    kept.set(source, statement);
    return statement;
  };
  /**
   * A statement that takes `lock` around its run: `begin immediate` (`opens`: after beforeBegin, and
   * the lock stays held until the transaction ends), COMMIT and ROLLBACK (the lock goes back once
   * the transaction has ended; a failed COMMIT leaves it open and held), and a write outside a
   * transaction (its own implicit one: the lock for its run). In phase B of bench/webhooks.ts a
   * quarter of the server's writes were such, and they met the deliverer's commits like the
   * transactions did. A connection inside a transaction, or holding the lock, does not take it
   * again. An iterator is read to its end inside the lock: it could otherwise keep it past the call.
   */
  const locked = (statement: Database.Statement, opens = false): SqliteStatement => {
    const once = <T>(run: () => T): T => {
      if (lock && !held && !database.inTransaction) held = lock.acquire(lockWaitMs);
      try {
        // Transactions begin immediate (they wait for the checkpointer's TRUNCATE like any write):
        // a deferred one that read first and wrote second was refused (SQLITE_BUSY, no wait) when
        // the checkpointer took SQLite's lock between its read and its write.
        if (opens) beforeBegin?.();
        return run();
      } finally {
        giveBack();
      }
    };
    return {
      reader: statement.reader,
      all: (parameters) => once(() => statement.all(parameters)),
      iterate: (parameters) => once(() => [...statement.iterate(parameters)])[Symbol.iterator](),
      run: (parameters) => once(() => statement.run(parameters)),
    };
  };
  return {
    close: () => {
      database.close();
      if (held) {
        held = false;
        lock!.release();
      }
    },
    prepare(text: string) {
      if (text === 'begin') return locked(prepared('begin immediate'), true);
      if (!lock) return prepared(text);
      const statement = prepared(text);
      // SQLite calls COMMIT and ROLLBACK read-only statements: they are named here.
      return text === 'commit' || text === 'rollback' || !statement.readonly ? locked(statement) : statement;
    },
  };
}

/** Whether a `--database-url` names PostgreSQL (the only server database Railyard speaks). */
export function isPostgresUrl(url: string): boolean {
  return /^postgres(?:ql)?:\/\//i.test(url);
}

/**
 * PostgreSQL through pg's pool, loaded only when asked for (the embedded default never pays for it).
 * Integers come back as numbers: the store's bigints are epoch milliseconds and PR numbers, far
 * below 2^53.
 */
export async function postgresDialect(options: {
  databaseUrl: string;
  poolSize?: number;
  statementTimeoutMs?: number;
}): Promise<Dialect> {
  const { Pool, TypeOverrides, types } = await import('pg');
  const parsers = new TypeOverrides();
  parsers.setTypeParser(types.builtins.INT8, (v) => Number(v));
  parsers.setTypeParser(types.builtins.NUMERIC, (v) => Number(v));
  const pool = new Pool({
    connectionString: options.databaseUrl,
    max: options.poolSize ?? 10,
    types: parsers,
    connectionTimeoutMillis: 10_000,
    ...(options.statementTimeoutMs ? { statement_timeout: options.statementTimeoutMs } : {}),
    application_name: 'railyard',
    // Railyard's statements take milliseconds; JIT compiling one whose estimated cost passes
    // jit_above_cost (a big table without statistics is enough) took 5–40 ms and never paid back.
    options: '-c jit=off',
  });
  // A client that loses its connection (the database restarted) must not crash the server: the
  // query it was running fails (503 to its request), the pool drops it, the next query opens a new
  // one. pg emits the loss on the client itself when no query is running, idle or checked out.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  return new PostgresDialect({ pool });
}

/**
 * What a long transaction awaits between its statements (see FlakyStore): a turn of the event loop
 * for other requests, since better-sqlite3 runs every statement on it. For an SQLite file it also
 * flushes the write-ahead log to disk in the background (fdatasync on the libuv thread pool, at
 * most one at a time, at most every 250 ms): the pages a big transaction spills into the WAL sit
 * in the OS cache otherwise, and its COMMIT's fsync would write them all while holding the loop.
 */
export function pauseBetweenStatements(walFile: string | null): () => Promise<void> {
  let flushing = false;
  let last = 0;
  const flush = async (file: string) => {
    const handle = await open(file, 'r');
    try {
      await handle.datasync();
    } finally {
      await handle.close();
    }
  };
  return async () => {
    await new Promise<void>((resume) => setImmediate(resume));
    if (!walFile || flushing || performance.now() - last < 250) return;
    flushing = true;
    last = performance.now();
    flush(walFile)
      .catch(() => undefined) // no WAL yet, or not flushable: COMMIT syncs it anyway
      .finally(() => (flushing = false));
  };
}
