import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import {
  Kysely,
  Migrator,
  PostgresDialect,
  sql,
  SqliteDialect,
  type Dialect,
  type Selectable,
  type SqliteDatabase,
  type Transaction,
} from 'kysely';
import type { ImpactedTargets, PullRequestState, Repo } from '../contract/index.js';
import { defaultConfig } from '../engine/model.js';
import type { Entry, QueueConfig, QueueModel, TestRun } from '../engine/types.js';
import { migrations } from './migrations/index.js';
import type { QueuesTable, SchemaTables } from './schema.js';
import { WebhookStore } from './webhooks.js';

export type StoreOptions =
  /** Embedded SQLite at `<dataDir>/railyard.sqlite` (created if missing). */
  | { dataDir: string }
  /** Explicit SQLite file, or `:memory:`. */
  | { sqlitePath: string }
  /** PostgreSQL (`postgres://…`) through `pg`'s pool: several replicas can share one database. */
  | { databaseUrl: string; poolSize?: number; statementTimeoutMs?: number }
  /** Any Kysely dialect: the store uses nothing SQLite-specific. */
  | { dialect: Dialect };

export type Db = Kysely<SchemaTables>;

/** Which database the store runs on: the few statements that differ are chosen by this. */
export type StoreKind = 'sqlite' | 'postgres';

/** A replica's hold on a queue: written by it, checked by every write the driving replica makes. */
export interface Fence {
  holder: string;
  fence: number;
}

/** The lease went to another replica (or expired): the write is refused and the replica stops driving. */
export class LeaseLostError extends Error {
  constructor(readonly queueId: string) {
    super(`queue ${queueId}: this replica no longer holds its lease`);
    this.name = 'LeaseLostError';
  }
}

/** What a queue write sees inside its transaction (several replicas: the row is locked). */
export interface QueueTransaction {
  /** The queue's committed version. */
  readonly version: number;
  /** The queue as committed (to refresh a stale copy). */
  load(): Promise<StoredQueue | undefined>;
  /** Refuses the write unless `fence` still holds the queue's lease. */
  checkFence(fence: Fence): Promise<void>;
  /** Writes one engine step and bumps the version; returns the new version. */
  write(before: QueueModel, after: QueueModel, impactedTargets?: ImpactedTargetsWrite, transitions?: readonly PrTransition[]): Promise<number>;
}

/** The database's clock in epoch milliseconds (leases are timed by it, never by a replica's clock). */
const DB_NOW_MS = sql<number>`(extract(epoch from clock_timestamp()) * 1000)::bigint`;

/** A queue as stored: its identity and the engine model, plus impacted targets per (PR, head SHA). */
export interface StoredQueue {
  id: string;
  /** Bumped by every committed step. */
  version: number;
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

/** One state change of a pull request's queue entry, as the history keeps it. */
export interface PrTransition {
  entryId: string;
  prNumber: number;
  from: PullRequestState | null;
  to: PullRequestState;
  reason: string | null;
  /** The test run of the entry after the change (testing and later states), else null. */
  testRunId: string | null;
  /** For failures: what went wrong, for people (conflicting PR and files, config problem, failed checks). */
  detail: string | null;
  at: number;
}

export const SQLITE_FILE = 'railyard.sqlite';

/** The LISTEN/NOTIFY channel on which replicas announce `queueId:version` after each write. */
export const QUEUE_CHANNEL = 'railyard_queues';

/** SHA-256 hex of an API token: the only form in which tokens are stored. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export function impactedTargetsKey(prNumber: number, headSha: string): string {
  return `${prNumber}:${headSha}`;
}

/**
 * Creates the database file readable by its owner alone (0600) before SQLite opens it: SQLite
 * gives its -wal and -shm files the database file's permissions. An existing file keeps its own.
 */
function createPrivately(path: string): void {
  if (path === ':memory:' || path === '' || existsSync(path)) return;
  closeSync(openSync(path, 'a', 0o600));
}

/** Per SQLite database: a number that changes when ANOTHER connection commits (PRAGMA data_version). */
const dataVersions = new WeakMap<Dialect, () => number>();

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
 * sustained writes the WAL grew 246 → 786 MB in 45 s (issue 26). Past TRUNCATE_BYTES the
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
const timer = setInterval(() => {
  if (walSize() <= workerData.bytes) return;
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch {}
  if (walSize() > workerData.truncateBytes) { try { db.pragma('wal_checkpoint(TRUNCATE)'); } catch {} }
}, 250);
parentPort.once('message', () => { clearInterval(timer); db.close(); parentPort.close(); });
`;

function startCheckpointer(path: string, onError: () => void): () => Promise<void> {
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
  return async () => {
    worker.ref(); // keep the process alive until it has closed its connection
    worker.postMessage('close');
    await exited;
  };
}

function sqliteDialect(path: string): { dialect: Dialect; stop?: () => Promise<void> } {
  createPrivately(path);
  const database = new Database(path);
  database.pragma('journal_mode = WAL');
  database.pragma('foreign_keys = ON');
  database.pragma('busy_timeout = 5000');
  database.pragma(`journal_size_limit = ${WAL_KEEP_BYTES}`);
  // The last resort when the checkpointer's TRUNCATE keeps missing the moments between back-to-back
  // transactions: past HARD_WAL_BYTES the next transaction truncates the WAL itself before it begins
  // (on this thread; PASSIVE has copied most of it already, so what is left is short).
  const walFile = path === ':memory:' ? null : `${path}-wal`;
  const beforeBegin = () => {
    if (!walFile) return;
    let bytes = 0;
    try {
      bytes = statSync(walFile).size;
    } catch {
      return;
    }
    if (bytes > HARD_WAL_BYTES) {
      try {
        database.pragma('wal_checkpoint(TRUNCATE)');
      } catch {
        // busy: the next transaction tries again
      }
    }
  };
  const dialect = new SqliteDialect({ database: keepingStatements(database, 256, beforeBegin) });
  const version = database.prepare('PRAGMA data_version').pluck();
  dataVersions.set(dialect, () => version.get() as number);
  if (path === ':memory:') return { dialect };
  // Checkpoints run on the checkpointer's thread, never in a COMMIT here. (Past 16 MB, not
  // SQLite's 4 MB: a flaky-test upload of new tests dirties hundreds of index pages, and
  // checkpointing that often cost ~50 % more per commit.)
  database.pragma('wal_autocheckpoint = 0');
  // Should the checkpointer fail, COMMITs checkpoint again (the WAL must not grow without end).
  const checkpointHere = () => {
    if (database.open) database.pragma(`wal_autocheckpoint = ${CHECKPOINT_BYTES / 4096}`);
  };
  return { dialect, stop: startCheckpointer(path, checkpointHere) };
}

/**
 * The database as Kysely sees it, with prepared statements kept per SQL text (the most recently
 * used `size`): Kysely prepares every query it runs, and compiling the same multi-row statement
 * again for every upload cost more than running it. Kysely's `begin` becomes `begin immediate`.
 */
function keepingStatements(database: Database.Database, size = 256, beforeBegin?: () => void): SqliteDatabase {
  const kept = new Map<string, Database.Statement>();
  return {
    close: () => database.close(),
    prepare(text: string) {
      // Every transaction takes the write lock when it begins (it waits for the checkpointer's
      // TRUNCATE like any write): a deferred one that read first and wrote second was refused
      // (SQLITE_BUSY, no wait) when the checkpointer took the lock between its read and its write.
      if (text === 'begin') beforeBegin?.();
      const source = text === 'begin' ? 'begin immediate' : text;
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

/** Whether a `--database-url` names PostgreSQL (the only server database Railyard speaks). */
export function isPostgresUrl(url: string): boolean {
  return /^postgres(?:ql)?:\/\//i.test(url);
}

/**
 * PostgreSQL through pg's pool, loaded only when asked for (the embedded default never pays for it).
 * Integers come back as numbers: the store's bigints are epoch milliseconds and PR numbers, far
 * below 2^53.
 */
async function postgresDialect(options: { databaseUrl: string; poolSize?: number; statementTimeoutMs?: number }): Promise<Dialect> {
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

/** Opens the store and applies pending migrations. */
export async function openStore(options: StoreOptions): Promise<Store> {
  let dialect: Dialect;
  let kind: StoreKind = 'sqlite';
  let file: string | null = null;
  let stop: (() => Promise<void>) | undefined;
  if ('dialect' in options) {
    dialect = options.dialect;
    if (options.dialect instanceof PostgresDialect) kind = 'postgres';
  } else if ('databaseUrl' in options) {
    dialect = await postgresDialect(options);
    kind = 'postgres';
  } else {
    // The data directory holds token hashes and run logs: the owner's alone (a new one is 0700).
    if ('dataDir' in options) mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
    file = 'dataDir' in options ? join(options.dataDir, SQLITE_FILE) : options.sqlitePath;
    ({ dialect, stop } = sqliteDialect(file));
  }
  const db = new Kysely<SchemaTables>({ dialect });
  // Numbers are reserved per feature and land in any order: a database that already has 011 still
  // gets 009 when it arrives (each migration touches only its own tables).
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations }, allowUnorderedMigrations: true });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    await stop?.();
    await db.destroy();
    const failed = results?.find((r) => r.status === 'Error')?.migrationName;
    throw new Error(`database migration ${failed ?? ''} failed: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  }
  const pause = kind === 'sqlite' ? pauseBetweenStatements(file && file !== ':memory:' ? `${file}-wal` : null) : undefined;
  const store = new Store(db, kind, dataVersions.get(dialect), pause, stop);
  store.migrated = (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
  return store;
}

/** An API token as `railyard token list` shows it (never the token itself). */
export interface TokenInfo {
  /** The first 12 hex digits of its SHA-256: what `railyard token revoke` takes. */
  id: string;
  org: string;
  label: string | null;
  createdAt: number;
  lastUsedAt: number | null;
}

/** Characters of the hash that name a token. */
export const TOKEN_ID_LENGTH = 12;

function tokenInfo(r: { token_hash: string; org_slug: string; label: string | null; created_at: number; last_used_at: number | null }): TokenInfo {
  return {
    id: r.token_hash.slice(0, TOKEN_ID_LENGTH),
    org: r.org_slug,
    label: r.label,
    createdAt: Number(r.created_at),
    lastUsedAt: r.last_used_at === null ? null : Number(r.last_used_at),
  };
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

/** The rows one engine step changes: entries and runs to upsert or delete, and whether the settings changed. */
interface QueueChange {
  entries: { upsert: Entry[]; remove: string[] };
  runs: { upsert: TestRun[]; remove: string[] };
  configChanged: boolean;
  empty: boolean;
}

function changeOf(before: QueueModel, after: QueueModel): QueueChange {
  const entries = diff(before.entries, after.entries);
  const runs = diff(before.runs, after.runs);
  const configChanged = before.config !== after.config || before.nextSeq !== after.nextSeq;
  const empty = !entries.upsert.length && !entries.remove.length && !runs.upsert.length && !runs.remove.length && !configChanged;
  return { entries, runs, configChanged, empty };
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
  /** SQLite: the next pr_transitions.seq, read once from the table, then counted here (one writer per database). */
  private nextTransitionSeq: number | null = null;

  /** The migrations this open applied (empty when the schema was already current). */
  migrated: string[] = [];

  /** Outgoing webhooks: endpoints, the outbox each queue step writes to, deliveries (webhooks.ts). */
  readonly webhooks: WebhookStore;

  constructor(
    readonly db: Db,
    readonly kind: StoreKind = 'sqlite',
    /**
     * SQLite only: changes whenever another connection (another process: `railyard token revoke`)
     * commits, so a server can re-read tokens the moment they change. Undefined for other dialects.
     */
    readonly dataVersion?: () => number,
    /** Awaited between the statements of a long transaction (the default just yields). */
    readonly pause: () => Promise<void> = () => new Promise<void>((resume) => setImmediate(resume)),
    /** Stops what runs beside the database (the SQLite checkpointer) before it is closed. */
    private readonly beforeClose?: () => Promise<void>,
  ) {
    this.webhooks = new WebhookStore(db, kind);
  }

  async close(): Promise<void> {
    await this.beforeClose?.();
    await this.db.destroy();
  }

  /**
   * One trivial query: resolves when the database answers (`/v1/status`'s health probe). The
   * embedded SQLite file lives in this process and cannot be unreachable while it answers; its one
   * connection runs statements in turn, so a probe queued behind a long upload's transaction would
   * time out and report a busy server as down (503): there is nothing to probe.
   */
  async ping(): Promise<void> {
    if (this.kind === 'sqlite') return;
    await sql`select 1`.execute(this.db);
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
  async addToken(org: string, token: string, label?: string): Promise<boolean> {
    const hash = hashToken(token);
    return this.db.transaction().execute(async (trx) => {
      await this.ensureOrganisationIn(trx, org);
      const existing = await trx.selectFrom('api_tokens').select('org_slug').where('token_hash', '=', hash).executeTakeFirst();
      if (existing) {
        if (existing.org_slug !== org)
          throw new Error(`that token already belongs to organisation "${existing.org_slug}"`);
        return false;
      }
      await trx
        .insertInto('api_tokens')
        .values({ token_hash: hash, org_slug: org, created_at: Date.now(), label: label ?? null, last_used_at: null })
        .execute();
      return true;
    });
  }

  async listTokens(): Promise<{ hash: string; org: string }[]> {
    const rows = await this.db.selectFrom('api_tokens').select(['token_hash', 'org_slug']).execute();
    return rows.map((r) => ({ hash: r.token_hash, org: r.org_slug }));
  }

  // ------------------------------------------------------------ repository owners and secrets

  /** Every recorded repository owner: `host/owner/name` (lower case) → organisation. */
  async loadRepoOwners(): Promise<Map<string, string>> {
    const rows = await this.db.selectFrom('repo_owners').select(['repo_key', 'org_slug']).execute();
    return new Map(rows.map((r) => [r.repo_key, r.org_slug]));
  }

  /**
   * Records `org` as the owner of `repoKey` unless the repository already has one; returns the
   * owner either way (the first claim wins, also between concurrent claims).
   */
  async claimRepo(org: string, repoKey: string): Promise<string> {
    return this.db.transaction().execute(async (trx) => {
      await this.ensureOrganisationIn(trx, org);
      await trx
        .insertInto('repo_owners')
        .values({ repo_key: repoKey, org_slug: org, created_at: Date.now() })
        .onConflict((oc) => oc.column('repo_key').doNothing())
        .execute();
      const row = await trx
        .selectFrom('repo_owners')
        .select('org_slug')
        .where('repo_key', '=', repoKey)
        .executeTakeFirstOrThrow();
      return row.org_slug;
    });
  }

  /** The secret named `name`, created from `generate()` on first use and kept from then on. */
  async serverSecret(name: string, generate: () => string): Promise<string> {
    await this.db
      .insertInto('server_secrets')
      .values({ name, value: generate(), created_at: Date.now() })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
    const row = await this.db
      .selectFrom('server_secrets')
      .select('value')
      .where('name', '=', name)
      .executeTakeFirstOrThrow();
    return row.value;
  }

  /** Every token (of `org`, if given), oldest first, without the secret. */
  async describeTokens(org?: string): Promise<TokenInfo[]> {
    let query = this.db
      .selectFrom('api_tokens')
      .select(['token_hash', 'org_slug', 'label', 'created_at', 'last_used_at'])
      .orderBy('created_at')
      .orderBy('token_hash');
    if (org !== undefined) query = query.where('org_slug', '=', org);
    return (await query.execute()).map(tokenInfo);
  }

  /**
   * Deletes the token whose SHA-256 (hex) starts with `hashPrefix` (and belongs to `org`, if
   * given). Deletes nothing when the prefix names several tokens. Answers what matched.
   */
  async revokeToken(hashPrefix: string, org?: string): Promise<TokenInfo[]> {
    if (!/^[0-9a-f]+$/.test(hashPrefix)) throw new Error(`not a token id: "${hashPrefix}"`);
    return this.db.transaction().execute(async (trx) => {
      let query = trx
        .selectFrom('api_tokens')
        .select(['token_hash', 'org_slug', 'label', 'created_at', 'last_used_at'])
        .where('token_hash', 'like', `${hashPrefix}%`);
      if (org !== undefined) query = query.where('org_slug', '=', org);
      const rows = await query.execute();
      if (rows.length === 1) await trx.deleteFrom('api_tokens').where('token_hash', '=', rows[0].token_hash).execute();
      return rows.map(tokenInfo);
    });
  }

  /** Records that the token with this hash was used at `at`. */
  async touchToken(hash: string, at: number): Promise<void> {
    await this.db.updateTable('api_tokens').set({ last_used_at: at }).where('token_hash', '=', hash).execute();
  }

  // ------------------------------------------------------------ queues

  async loadQueues(): Promise<StoredQueue[]> {
    const queues = await this.db.selectFrom('queues').selectAll().where('deleted_at', 'is', null).orderBy('created_at').execute();
    const out: StoredQueue[] = [];
    for (const q of queues) out.push(await this.queueFrom(this.db, q));
    return out;
  }

  /** One queue as committed, or undefined if it was deleted. */
  async loadQueue(queueId: string): Promise<StoredQueue | undefined> {
    const q = await this.db.selectFrom('queues').selectAll().where('id', '=', queueId).where('deleted_at', 'is', null).executeTakeFirst();
    return q && this.queueFrom(this.db, q);
  }

  /** Every queue's id and version (a replica compares them with its copies). */
  async queueVersions(): Promise<{ id: string; version: number }[]> {
    const rows = await this.db.selectFrom('queues').select(['id', 'version']).where('deleted_at', 'is', null).execute();
    return rows.map((r) => ({ id: r.id, version: Number(r.version) }));
  }

  /** The id and version of the queue of (org, repo, branch), if there is one. */
  async findQueueVersion(org: string, repo: Repo, branch: string): Promise<{ id: string; version: number } | undefined> {
    const row = await this.db
      .selectFrom('queues')
      .select(['id', 'version'])
      .where('org_slug', '=', org)
      .where('repo_host', '=', repo.host)
      .where('repo_owner', '=', repo.owner)
      .where('repo_name', '=', repo.name)
      .where('branch', '=', branch)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
    return row && { id: row.id, version: Number(row.version) };
  }

  private async queueFrom(db: Db | Transaction<SchemaTables>, q: Selectable<QueuesTable>): Promise<StoredQueue> {
    const entries = await db.selectFrom('pull_requests').select('data').where('queue_id', '=', q.id).orderBy('seq').execute();
    const runs = await db.selectFrom('test_runs').select('data').where('queue_id', '=', q.id).orderBy('started_at').execute();
    const targets = await db
      .selectFrom('impacted_targets')
      .select(['pr_number', 'head_sha', 'targets'])
      .where('queue_id', '=', q.id)
      .execute();
    return {
      id: q.id,
      version: Number(q.version),
      org: q.org_slug,
      repo: { host: q.repo_host, owner: q.repo_owner, name: q.repo_name },
      model: {
        branch: q.branch,
        // Settings added later (the flaky-aware ones) take their defaults on queues stored before them.
        config: { ...flakyDefaults(), ...(JSON.parse(q.config) as QueueConfig) },
        entries: entries.map((r) => JSON.parse(r.data) as Entry),
        runs: runs.map((r) => JSON.parse(r.data) as TestRun),
        nextSeq: Number(q.next_seq),
      },
      impactedTargets: new Map(
        targets.map((t) => [impactedTargetsKey(Number(t.pr_number), t.head_sha), JSON.parse(t.targets) as ImpactedTargets]),
      ),
    };
  }

  /**
   * Creates a queue, or brings back the deleted queue of the same organisation, repository and
   * branch with its pull requests and history (012) under the new config: answers the id used
   * (the deleted queue's when it came back; the caller then loads it).
   */
  async insertQueue(queue: { id: string; org: string; repo: Repo; model: QueueModel }): Promise<{ id: string; revived: boolean }> {
    const now = Date.now();
    return this.db.transaction().execute(async (trx) => {
      await this.ensureOrganisationIn(trx, queue.org);
      const deleted = await trx
        .selectFrom('queues')
        .select(['id', 'version'])
        .where('org_slug', '=', queue.org)
        .where('repo_host', '=', queue.repo.host)
        .where('repo_owner', '=', queue.repo.owner)
        .where('repo_name', '=', queue.repo.name)
        .where('branch', '=', queue.model.branch)
        .where('deleted_at', 'is not', null)
        .executeTakeFirst();
      if (deleted) {
        await trx
          .updateTable('queues')
          .set({ config: JSON.stringify(queue.model.config), deleted_at: null, updated_at: now, version: Number(deleted.version) + 1 })
          .where('id', '=', deleted.id)
          .execute();
        if (this.kind === 'postgres') {
          await trx.insertInto('queue_leases').values({ queue_id: deleted.id }).onConflict((oc) => oc.column('queue_id').doNothing()).execute();
        }
        return { id: deleted.id, revived: true };
      }
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
      if (this.kind === 'postgres') await trx.insertInto('queue_leases').values({ queue_id: queue.id }).execute();
      return { id: queue.id, revived: false };
    });
  }

  /**
   * Deletes a queue (an empty one: every PR in it concluded). Its row stays, marked deleted, with
   * its pull requests, test runs and history: a re-create brings them back (insertQueue).
   */
  async deleteQueue(queueId: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('impacted_targets').where('queue_id', '=', queueId).execute();
      // The lease row stays with the queue's row: a re-create goes on with the same holder and fencing number.
      await trx
        .updateTable('queues')
        .set((eb) => ({ deleted_at: Date.now(), version: eb('version', '+', 1) }))
        .where('id', '=', queueId)
        .execute();
    });
  }

  /**
   * Persists one engine step of a queue in ONE transaction: the changed entries, test runs and
   * config, the state changes of its pull requests (their history), plus an impacted-targets
   * upload when the command carried one.
   */
  async commitQueueChange(
    queueId: string,
    before: QueueModel,
    after: QueueModel,
    impactedTargets?: ImpactedTargetsWrite,
    transitions: readonly PrTransition[] = [],
  ): Promise<void> {
    const change = changeOf(before, after);
    if (change.empty && !impactedTargets && !transitions.length) return;
    await this.db.transaction().execute((trx) => this.writeQueueChange(trx, queueId, change, after, impactedTargets, transitions));
  }

  /**
   * A queue write on a database shared by several replicas: the queue's row is locked for the
   * transaction (writes to one queue are serialized across replicas), `fn` sees its committed
   * version, may reload it, and writes the step; the change is announced to the other replicas
   * when the transaction commits.
   */
  async transactQueue<T>(queueId: string, fn: (tx: QueueTransaction) => Promise<T>): Promise<T> {
    if (this.kind !== 'postgres') throw new Error('transactQueue needs PostgreSQL');
    return this.db.transaction().execute(async (trx) => {
      const row = await trx.selectFrom('queues').selectAll().where('id', '=', queueId).where('deleted_at', 'is', null).forUpdate().executeTakeFirst();
      let version = row ? Number(row.version) : -1;
      const tx: QueueTransaction = {
        version,
        load: async () => (row ? this.queueFrom(trx, { ...row, version }) : undefined),
        checkFence: async (fence) => {
          const held = await trx
            .selectFrom('queue_leases')
            .select('queue_id')
            .where('queue_id', '=', queueId)
            .where('holder', '=', fence.holder)
            .where('fence', '=', fence.fence)
            .where(sql<boolean>`expires_at > ${DB_NOW_MS}`)
            .executeTakeFirst();
          if (!held) throw new LeaseLostError(queueId);
        },
        write: async (before, after, impactedTargets, transitions) => {
          if (!row) throw new Error(`queue ${queueId} was deleted`);
          await this.writeQueueChange(trx, queueId, changeOf(before, after), after, impactedTargets, transitions);
          version += 1;
          await trx.updateTable('queues').set({ version }).where('id', '=', queueId).execute();
          await sql`SELECT pg_notify(${QUEUE_CHANNEL}, ${`${queueId}:${version}`})`.execute(trx);
          return version;
        },
      };
      return fn(tx);
    });
  }

  /** Announces a created or deleted queue to the other replicas (PostgreSQL). */
  async announceQueue(queueId: string): Promise<void> {
    if (this.kind === 'postgres') await sql`SELECT pg_notify(${QUEUE_CHANNEL}, ${`${queueId}:0`})`.execute(this.db);
  }

  // ------------------------------------------------------------ leases (PostgreSQL replicas)

  /**
   * Takes or renews, for `holder`, the lease of every queue that is free, expired or already
   * its own, until the database's clock passes now + ttlMs; returns the queues it holds with their
   * fencing numbers. A lease changing hands gets a new fencing number.
   */
  async claimLeases(holder: string, ttlMs: number): Promise<Map<string, number>> {
    const rows = await sql<{ queue_id: string; fence: number }>`
      UPDATE queue_leases
         SET fence = CASE WHEN holder = ${holder} THEN fence ELSE fence + 1 END,
             holder = ${holder},
             expires_at = ${DB_NOW_MS} + ${ttlMs}
       WHERE holder = ${holder} OR expires_at < ${DB_NOW_MS}
   RETURNING queue_id, fence`.execute(this.db);
    return new Map(rows.rows.map((r) => [r.queue_id, Number(r.fence)]));
  }

  /** Gives up `holder`'s leases (clean shutdown), so another replica takes the queues at once. */
  async releaseLeases(holder: string): Promise<void> {
    await this.db.updateTable('queue_leases').set({ expires_at: 0 }).where('holder', '=', holder).execute();
  }

  private async writeQueueChange(
    trx: Transaction<SchemaTables>,
    queueId: string,
    { entries, runs, configChanged }: QueueChange,
    after: QueueModel,
    impactedTargets?: ImpactedTargetsWrite,
    transitions: readonly PrTransition[] = [],
  ): Promise<void> {
    {
      if (transitions.length) {
        let seq: number;
        if (this.kind === 'postgres') {
          // Several replicas: numbered per queue, under the queue's row lock (transactQueue).
          const { max } = await trx
            .selectFrom('pr_transitions')
            .select((eb) => eb.fn.max('seq').as('max'))
            .where('queue_id', '=', queueId)
            .executeTakeFirstOrThrow();
          seq = Number(max ?? 0) + 1;
        } else {
        if (this.nextTransitionSeq === null) {
          const { max } = await trx
            .selectFrom('pr_transitions')
            .select((eb) => eb.fn.max('seq').as('max'))
            .executeTakeFirstOrThrow();
          this.nextTransitionSeq ??= Number(max ?? 0) + 1;
        }
        // Numbers are handed out before any await, so queues committing at once never share one (gaps are fine).
        seq = this.nextTransitionSeq;
        this.nextTransitionSeq += transitions.length;
        }
        for (let i = 0; i < transitions.length; i += ENTRY_CHUNK) {
          const rows = transitions.slice(i, i + ENTRY_CHUNK).map((t) => ({
            seq: seq++,
            queue_id: queueId,
            entry_id: t.entryId,
            pr_number: t.prNumber,
            from_state: t.from,
            state: t.to,
            reason: t.reason,
            test_run_id: t.testRunId,
            detail: t.detail,
            at: t.at,
          }));
          await trx.insertInto('pr_transitions').values(rows).execute();
        }
        // The events of these changes go to the webhook outbox in this same transaction.
        await this.webhooks.writeQueueStep(trx, queueId, after, transitions);
      }
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
          .onConflict((oc) => oc.column('id').doUpdateSet((eb) => ({ status: eb.ref('excluded.status'), data: eb.ref('excluded.data') })))
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
    }
  }

  /** Every state change of pull request `prNumber` in a queue (all its submissions), oldest first. */
  async prHistory(queueId: string, prNumber: number): Promise<PrTransition[]> {
    const rows = await this.db
      .selectFrom('pr_transitions')
      .selectAll()
      .where('queue_id', '=', queueId)
      .where('pr_number', '=', prNumber)
      .orderBy('seq')
      .execute();
    return rows.map((r) => ({
      entryId: r.entry_id,
      prNumber: Number(r.pr_number),
      from: r.from_state as PullRequestState | null,
      to: r.state as PullRequestState,
      reason: r.reason,
      testRunId: r.test_run_id,
      detail: r.detail,
      at: Number(r.at),
    }));
  }
}

/** The settings a queue stored before the flaky-aware queue lacks, at their defaults (behaviour unchanged). */
function flakyDefaults(): Pick<QueueConfig, 'flakyPolicy' | 'flakyReportGraceSeconds' | 'flakyRetries' | 'probationThreshold'> {
  const { flakyPolicy, flakyReportGraceSeconds, flakyRetries, probationThreshold } = defaultConfig();
  return { flakyPolicy, flakyReportGraceSeconds, flakyRetries, probationThreshold };
}
