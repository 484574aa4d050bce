import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect, type Dialect, type SqliteDatabase, type Transaction } from 'kysely';
import type { ImpactedTargets, Repo } from '../contract/index.js';
import type { Entry, QueueConfig, QueueModel, TestRun } from '../engine/types.js';
import { migrations } from './migrations/index.js';
import type { SchemaTables } from './schema.js';

export type StoreOptions =
  /** Embedded SQLite at `<dataDir>/railyard.sqlite` (created if missing). */
  | { dataDir: string }
  /** Explicit SQLite file, or `:memory:`. */
  | { sqlitePath: string }
  /** Any Kysely dialect (e.g. PostgresDialect): the store uses nothing SQLite-specific. */
  | { dialect: Dialect };

export type Db = Kysely<SchemaTables>;

/** A queue as stored: its identity and the engine model, plus impacted targets per (PR, head SHA). */
export interface StoredQueue {
  id: string;
  org: string;
  repo: Repo;
  model: QueueModel;
  /** Key `${prNumber}:${headSha}`. */
  impactedTargets: Map<string, ImpactedTargets>;
}

export interface ImpactedTargetsWrite {
  prNumber: number;
  headSha: string;
  targets: ImpactedTargets;
}

export const SQLITE_FILE = 'railyard.sqlite';

/** SHA-256 hex of an API token: the only form in which tokens are stored. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export function impactedTargetsKey(prNumber: number, headSha: string): string {
  return `${prNumber}:${headSha}`;
}

/** WAL size past which the checkpointer copies it into the database (~40 MB: 10,000 pages). */
const CHECKPOINT_BYTES = 10_000 * 4096;

/**
 * The checkpointer: a worker thread with its own connection that copies the WAL into the
 * database (PASSIVE: it never blocks the server's reads or writes) once the WAL passes
 * CHECKPOINT_BYTES. SQLite's automatic checkpoint runs inside the COMMIT that crosses the size, on
 * the event loop: after a big flaky-test upload that held every request for ~0.7 s.
 */
const CHECKPOINTER = `
const { workerData, parentPort } = require('node:worker_threads');
const { statSync } = require('node:fs');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma('busy_timeout = 1000');
const timer = setInterval(() => {
  let size = 0;
  try { size = statSync(workerData.path + '-wal').size; } catch {}
  if (size > workerData.bytes) { try { db.pragma('wal_checkpoint(PASSIVE)'); } catch {} }
}, 500);
parentPort.once('message', () => { clearInterval(timer); db.close(); parentPort.close(); });
`;

function startCheckpointer(path: string, onError: () => void): () => Promise<void> {
  const worker = new Worker(CHECKPOINTER, {
    eval: true,
    workerData: {
      path,
      bytes: CHECKPOINT_BYTES,
      driver: createRequire(import.meta.url).resolve('better-sqlite3'),
    },
  });
  worker.unref();
  worker.on('error', onError);
  const exited = new Promise<void>((done) => worker.once('exit', () => done()));
  return async () => {
    worker.ref(); // keep the process alive until it has closed its connection
    worker.postMessage('close');
    await exited;
  };
}

function sqliteDialect(path: string): { dialect: Dialect; stop?: () => Promise<void> } {
  const database = new Database(path);
  database.pragma('journal_mode = WAL');
  database.pragma('foreign_keys = ON');
  database.pragma('busy_timeout = 5000');
  if (path === ':memory:') return { dialect: new SqliteDialect({ database: keepingStatements(database) }) };
  // Checkpoints run on the checkpointer's thread, never in a COMMIT here. (Every ~40 MB, not
  // SQLite's 4 MB: a flaky-test upload of new tests dirties hundreds of index pages, and
  // checkpointing that often cost ~50 % more per commit.)
  database.pragma('wal_autocheckpoint = 0');
  // Should the checkpointer fail, COMMITs checkpoint again (the WAL must not grow without end).
  const checkpointHere = () => {
    if (database.open) database.pragma(`wal_autocheckpoint = ${CHECKPOINT_BYTES / 4096}`);
  };
  return {
    dialect: new SqliteDialect({ database: keepingStatements(database) }),
    stop: startCheckpointer(path, checkpointHere),
  };
}

/**
 * The database as Kysely sees it, with prepared statements kept per SQL text (the most recently
 * used `size`): Kysely prepares every query it runs, and compiling the same multi-row statement
 * again for every upload cost more than running it.
 */
function keepingStatements(database: Database.Database, size = 256): SqliteDatabase {
  const kept = new Map<string, Database.Statement>();
  return {
    close: () => database.close(),
    prepare(source: string) {
      let statement = kept.get(source);
      if (statement) kept.delete(source);
      else {
        statement = database.prepare(source);
        if (kept.size >= size) kept.delete(kept.keys().next().value!);
      }
      kept.set(source, statement);
      return statement;
    },
  };
}

/** Opens the store and applies pending migrations. */
export async function openStore(options: StoreOptions): Promise<Store> {
  let dialect: Dialect;
  let file: string | null = null;
  let stop: (() => Promise<void>) | undefined;
  if ('dialect' in options) dialect = options.dialect;
  else {
    if ('dataDir' in options) mkdirSync(options.dataDir, { recursive: true });
    file = 'dataDir' in options ? join(options.dataDir, SQLITE_FILE) : options.sqlitePath;
    ({ dialect, stop } = sqliteDialect(file));
  }
  const db = new Kysely<SchemaTables>({ dialect });
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    await stop?.();
    await db.destroy();
    const failed = results?.find((r) => r.status === 'Error')?.migrationName;
    throw new Error(
      `database migration ${failed ?? ''} failed: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  return new Store(db, pauseBetweenStatements(file && file !== ':memory:' ? `${file}-wal` : null), stop);
}

/**
 * What a long transaction awaits between its statements (see FlakyStore): a turn of the event loop
 * for other requests, since better-sqlite3 runs every statement on it. For an SQLite file it also
 * flushes the write-ahead log to disk in the background (fdatasync on the libuv thread pool, at
 * most one at a time, at most every 250 ms): the pages a big transaction spills into the WAL sit
 * in the OS cache otherwise, and its COMMIT's fsync would write them all while holding the loop.
 */
function pauseBetweenStatements(walFile: string | null): () => Promise<void> {
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

const ENTRY_CHUNK = 200;

function entryRow(queueId: string, e: Entry) {
  return {
    id: e.id,
    queue_id: queueId,
    pr_number: e.prNumber,
    state: e.state,
    seq: e.seq,
    head_sha: e.pr.headSha,
    head_branch: e.pr.headBranch,
    state_changed_at: e.stateChangedAt,
    concluded_at: e.concludedAt,
    data: JSON.stringify(e),
  };
}

function runRow(queueId: string, r: TestRun) {
  return { id: r.id, queue_id: queueId, status: r.status, started_at: r.startedAt, data: JSON.stringify(r) };
}

/** What changed between two models: rows to upsert and ids to delete. */
function diff<T extends { id: string }>(
  before: readonly T[],
  after: readonly T[],
): { upsert: T[]; remove: string[] } {
  const old = new Set(before);
  const upsert = after.filter((x) => !old.has(x));
  const kept = new Set(after.map((x) => x.id));
  const remove = before.filter((x) => !kept.has(x.id)).map((x) => x.id);
  return { upsert, remove };
}

export class Store {
  constructor(
    readonly db: Db,
    /** Awaited between the statements of a long transaction (the default just yields). */
    readonly pause: () => Promise<void> = () => new Promise<void>((resume) => setImmediate(resume)),
    /** Stops what runs beside the database (the SQLite checkpointer) before it is closed. */
    private readonly beforeClose?: () => Promise<void>,
  ) {}

  async close(): Promise<void> {
    await this.beforeClose?.();
    await this.db.destroy();
  }

  // ------------------------------------------------------------ organisations and tokens

  private async ensureOrganisationIn(trx: Transaction<SchemaTables>, slug: string): Promise<void> {
    const found = await trx
      .selectFrom('organisations')
      .select('slug')
      .where('slug', '=', slug)
      .executeTakeFirst();
    if (!found) await trx.insertInto('organisations').values({ slug, created_at: Date.now() }).execute();
  }

  /** Stores the hash of `token` for `org` (creating the organisation); false if it was already stored. */
  async addToken(org: string, token: string): Promise<boolean> {
    const hash = hashToken(token);
    return this.db.transaction().execute(async (trx) => {
      await this.ensureOrganisationIn(trx, org);
      const existing = await trx
        .selectFrom('api_tokens')
        .select('org_slug')
        .where('token_hash', '=', hash)
        .executeTakeFirst();
      if (existing) {
        if (existing.org_slug !== org)
          throw new Error(`that token already belongs to organisation "${existing.org_slug}"`);
        return false;
      }
      await trx
        .insertInto('api_tokens')
        .values({ token_hash: hash, org_slug: org, created_at: Date.now() })
        .execute();
      return true;
    });
  }

  async listTokens(): Promise<{ hash: string; org: string }[]> {
    const rows = await this.db.selectFrom('api_tokens').select(['token_hash', 'org_slug']).execute();
    return rows.map((r) => ({ hash: r.token_hash, org: r.org_slug }));
  }

  // ------------------------------------------------------------ queues

  async loadQueues(): Promise<StoredQueue[]> {
    const queues = await this.db.selectFrom('queues').selectAll().orderBy('created_at').execute();
    const out: StoredQueue[] = [];
    for (const q of queues) {
      const entries = await this.db
        .selectFrom('pull_requests')
        .select('data')
        .where('queue_id', '=', q.id)
        .orderBy('seq')
        .execute();
      const runs = await this.db
        .selectFrom('test_runs')
        .select('data')
        .where('queue_id', '=', q.id)
        .orderBy('started_at')
        .execute();
      const targets = await this.db
        .selectFrom('impacted_targets')
        .select(['pr_number', 'head_sha', 'targets'])
        .where('queue_id', '=', q.id)
        .execute();
      out.push({
        id: q.id,
        org: q.org_slug,
        repo: { host: q.repo_host, owner: q.repo_owner, name: q.repo_name },
        model: {
          branch: q.branch,
          config: JSON.parse(q.config) as QueueConfig,
          entries: entries.map((r) => JSON.parse(r.data) as Entry),
          runs: runs.map((r) => JSON.parse(r.data) as TestRun),
          nextSeq: Number(q.next_seq),
        },
        impactedTargets: new Map(
          targets.map((t) => [
            impactedTargetsKey(Number(t.pr_number), t.head_sha),
            JSON.parse(t.targets) as ImpactedTargets,
          ]),
        ),
      });
    }
    return out;
  }

  async insertQueue(queue: { id: string; org: string; repo: Repo; model: QueueModel }): Promise<void> {
    const now = Date.now();
    await this.db.transaction().execute(async (trx) => {
      await this.ensureOrganisationIn(trx, queue.org);
      await trx
        .insertInto('queues')
        .values({
          id: queue.id,
          org_slug: queue.org,
          repo_host: queue.repo.host,
          repo_owner: queue.repo.owner,
          repo_name: queue.repo.name,
          branch: queue.model.branch,
          config: JSON.stringify(queue.model.config),
          next_seq: queue.model.nextSeq,
          created_at: now,
          updated_at: now,
        })
        .execute();
    });
  }

  async deleteQueue(queueId: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('impacted_targets').where('queue_id', '=', queueId).execute();
      await trx.deleteFrom('test_runs').where('queue_id', '=', queueId).execute();
      await trx.deleteFrom('pull_requests').where('queue_id', '=', queueId).execute();
      await trx.deleteFrom('queues').where('id', '=', queueId).execute();
    });
  }

  /**
   * Persists one engine step of a queue in ONE transaction: the changed entries, test runs and
   * config, plus an impacted-targets upload when the command carried one.
   */
  async commitQueueChange(
    queueId: string,
    before: QueueModel,
    after: QueueModel,
    impactedTargets?: ImpactedTargetsWrite,
  ): Promise<void> {
    const entries = diff(before.entries, after.entries);
    const runs = diff(before.runs, after.runs);
    const configChanged = before.config !== after.config || before.nextSeq !== after.nextSeq;
    if (
      !entries.upsert.length &&
      !entries.remove.length &&
      !runs.upsert.length &&
      !runs.remove.length &&
      !configChanged &&
      !impactedTargets
    )
      return;
    await this.db.transaction().execute(async (trx) => {
      if (configChanged) {
        await trx
          .updateTable('queues')
          .set({ config: JSON.stringify(after.config), next_seq: after.nextSeq, updated_at: Date.now() })
          .where('id', '=', queueId)
          .execute();
      }
      for (let i = 0; i < entries.upsert.length; i += ENTRY_CHUNK) {
        const rows = entries.upsert.slice(i, i + ENTRY_CHUNK).map((e) => entryRow(queueId, e));
        await trx
          .insertInto('pull_requests')
          .values(rows)
          .onConflict((oc) =>
            oc.column('id').doUpdateSet((eb) => ({
              state: eb.ref('excluded.state'),
              seq: eb.ref('excluded.seq'),
              head_sha: eb.ref('excluded.head_sha'),
              head_branch: eb.ref('excluded.head_branch'),
              state_changed_at: eb.ref('excluded.state_changed_at'),
              concluded_at: eb.ref('excluded.concluded_at'),
              data: eb.ref('excluded.data'),
            })),
          )
          .execute();
      }
      if (entries.remove.length)
        await trx.deleteFrom('pull_requests').where('id', 'in', entries.remove).execute();
      for (let i = 0; i < runs.upsert.length; i += ENTRY_CHUNK) {
        const rows = runs.upsert.slice(i, i + ENTRY_CHUNK).map((r) => runRow(queueId, r));
        await trx
          .insertInto('test_runs')
          .values(rows)
          .onConflict((oc) =>
            oc
              .column('id')
              .doUpdateSet((eb) => ({ status: eb.ref('excluded.status'), data: eb.ref('excluded.data') })),
          )
          .execute();
      }
      if (runs.remove.length) await trx.deleteFrom('test_runs').where('id', 'in', runs.remove).execute();
      if (impactedTargets) {
        const row = {
          queue_id: queueId,
          pr_number: impactedTargets.prNumber,
          head_sha: impactedTargets.headSha,
          targets: JSON.stringify(impactedTargets.targets),
          updated_at: Date.now(),
        };
        await trx
          .insertInto('impacted_targets')
          .values(row)
          .onConflict((oc) =>
            oc.columns(['queue_id', 'pr_number', 'head_sha']).doUpdateSet((eb) => ({
              targets: eb.ref('excluded.targets'),
              updated_at: eb.ref('excluded.updated_at'),
            })),
          )
          .execute();
      }
    });
  }
}
