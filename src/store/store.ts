import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect, type Dialect, type SqliteDatabase, type Transaction } from 'kysely';
import type { ImpactedTargets, PullRequestState, Repo } from '../contract/index.js';
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

/** SHA-256 hex of an API token: the only form in which tokens are stored. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export function impactedTargetsKey(prNumber: number, headSha: string): string {
  return `${prNumber}:${headSha}`;
}

function sqliteDialect(path: string): Dialect {
  const database = new Database(path);
  database.pragma('journal_mode = WAL');
  database.pragma('foreign_keys = ON');
  database.pragma('busy_timeout = 5000');
  // Checkpoint the WAL every ~40 MB instead of every 4 MB: a flaky-test upload of new tests dirties
  // hundreds of index pages (one of known tests ~35), and checkpointing that often cost ~50 % more
  // per commit (measured with 1,000 pages: 1.8 s of commits per 1,000 uploads instead of 1.15 s).
  database.pragma('wal_autocheckpoint = 10000');
  return new SqliteDialect({ database: keepingStatements(database) });
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
  if ('dialect' in options) dialect = options.dialect;
  else if ('dataDir' in options) {
    mkdirSync(options.dataDir, { recursive: true });
    dialect = sqliteDialect(join(options.dataDir, SQLITE_FILE));
  } else dialect = sqliteDialect(options.sqlitePath);
  const db = new Kysely<SchemaTables>({ dialect });
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    await db.destroy();
    const failed = results?.find((r) => r.status === 'Error')?.migrationName;
    throw new Error(`database migration ${failed ?? ''} failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  return new Store(db);
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
function diff<T extends { id: string }>(before: readonly T[], after: readonly T[]): { upsert: T[]; remove: string[] } {
  const old = new Set(before);
  const upsert = after.filter((x) => !old.has(x));
  const kept = new Set(after.map((x) => x.id));
  const remove = before.filter((x) => !kept.has(x.id)).map((x) => x.id);
  return { upsert, remove };
}

export class Store {
  /** The next pr_transitions.seq: read once from the table, then counted here (one writer per database). */
  private nextTransitionSeq: number | null = null;

  constructor(readonly db: Db) {}

  async close(): Promise<void> {
    await this.db.destroy();
  }

  // ------------------------------------------------------------ organisations and tokens

  private async ensureOrganisationIn(trx: Transaction<SchemaTables>, slug: string): Promise<void> {
    const found = await trx.selectFrom('organisations').select('slug').where('slug', '=', slug).executeTakeFirst();
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
        if (existing.org_slug !== org) throw new Error(`that token already belongs to organisation "${existing.org_slug}"`);
        return false;
      }
      await trx.insertInto('api_tokens').values({ token_hash: hash, org_slug: org, created_at: Date.now() }).execute();
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
          targets.map((t) => [impactedTargetsKey(Number(t.pr_number), t.head_sha), JSON.parse(t.targets) as ImpactedTargets]),
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
      await trx.deleteFrom('pr_transitions').where('queue_id', '=', queueId).execute();
      await trx.deleteFrom('test_runs').where('queue_id', '=', queueId).execute();
      await trx.deleteFrom('pull_requests').where('queue_id', '=', queueId).execute();
      await trx.deleteFrom('queues').where('id', '=', queueId).execute();
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
    const entries = diff(before.entries, after.entries);
    const runs = diff(before.runs, after.runs);
    const configChanged = before.config !== after.config || before.nextSeq !== after.nextSeq;
    if (
      !entries.upsert.length &&
      !entries.remove.length &&
      !runs.upsert.length &&
      !runs.remove.length &&
      !configChanged &&
      !impactedTargets &&
      !transitions.length
    )
      return;
    await this.db.transaction().execute(async (trx) => {
      if (transitions.length) {
        if (this.nextTransitionSeq === null) {
          const { max } = await trx
            .selectFrom('pr_transitions')
            .select((eb) => eb.fn.max('seq').as('max'))
            .executeTakeFirstOrThrow();
          this.nextTransitionSeq ??= Number(max ?? 0) + 1;
        }
        // Numbers are handed out before any await, so queues committing at once never share one (gaps are fine).
        let seq = this.nextTransitionSeq;
        this.nextTransitionSeq += transitions.length;
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
      if (entries.remove.length) await trx.deleteFrom('pull_requests').where('id', 'in', entries.remove).execute();
      for (let i = 0; i < runs.upsert.length; i += ENTRY_CHUNK) {
        const rows = runs.upsert.slice(i, i + ENTRY_CHUNK).map((r) => runRow(queueId, r));
        await trx
          .insertInto('test_runs')
          .values(rows)
          .onConflict((oc) =>
            oc.column('id').doUpdateSet((eb) => ({ status: eb.ref('excluded.status'), data: eb.ref('excluded.data') })),
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
            oc
              .columns(['queue_id', 'pr_number', 'head_sha'])
              .doUpdateSet((eb) => ({ targets: eb.ref('excluded.targets'), updated_at: eb.ref('excluded.updated_at') })),
          )
          .execute();
      }
    });
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
