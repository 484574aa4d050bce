import {
  PostgresAdapter,
  sql,
  type Expression,
  type ExpressionBuilder,
  type Kysely,
  type RawBuilder,
  type Selectable,
  type SqlBool,
} from 'kysely';
import type { Repo, TestStatus } from '../contract/index.js';
import type { MonitorDecision } from '../flaky/detect.js';
import type { QuarantineMatch, QuarantineOverride } from '../flaky/quarantine.js';
import type { SchemaTables, TestCasesTable } from './schema.js';
import { writeWebhookEvents, type OutboxEvent } from './webhooks.js';

/**
 * The flaky-test tables behind one typed repository: every SQL statement of the flaky-test
 * service is here. Callers speak in rows and sets of tests; the statements a database needs of
 * its own (bulk-insert sizes, RETURNING, upserts) are chosen in one place, `flavourOf`.
 */

/** A test as stored, times as numbers (PostgreSQL hands `bigint` back as strings). */
export interface CaseRow {
  id: string;
  seq: number;
  repo_id: string;
  name: string;
  file: string | null;
  classname: string | null;
  parent: string | null;
  variant: string;
  first_seen_at: number;
  rate_status: TestStatus;
  rate_reason: string | null;
  rate_changed_at: number | null;
  por_since: number | null;
  por_until: number | null;
  por_reason: string | null;
  override: QuarantineOverride | null;
  override_at: number | null;
  ticket: string | null;
}

/** What an upload needs of each stored test: where its results go, and what detection had decided. */
export type KnownCase = Pick<CaseRow, 'seq' | 'rate_status' | 'por_until'>;

export interface RepositoryRow {
  id: string;
  org: string;
  repo: Repo;
  /** The stored settings, JSON (only what was ever set). */
  settings: string;
  codeowners: string | null;
}

/** A test as an upload first stores it (detection's columns take their defaults). */
export type NewCase = Pick<CaseRow, 'id' | 'seq' | 'repo_id' | 'name' | 'file' | 'classname' | 'parent' | 'variant' | 'first_seen_at'>;

export interface NewUpload {
  id: string;
  seq: number;
  repo_id: string;
  branch: string;
  sha: string;
  pr_number: number | null;
  job: string | null;
  attempt: number;
  variant: string;
  started_at: number;
  first_at: number;
  last_at: number;
  created_at: number;
  counts: string;
  excluded: boolean;
}

export interface NewResult {
  test_seq: number;
  at: number;
  upload_seq: number;
  outcome: string;
  stable: boolean;
  excluded: boolean;
  duration_ms: number;
  attempts: number;
}

export interface NewFailure {
  test_seq: number;
  at: number;
  upload_seq: number;
  repo_id: string;
  pr_number: number | null;
  failure_key: string | null;
  failure_line: string | null;
}

/** An upload to store with its results and failures (`upload.seq` is the `upload_seq` of its rows). */
export interface UploadWrite<T> {
  upload: NewUpload;
  results: readonly T[];
  result: (item: T) => Omit<NewResult, 'upload_seq'>;
  failures: readonly T[];
  failure: (item: T) => Omit<NewFailure, 'upload_seq'>;
}

/** The monitor columns detection changes (only the keys present are written): detection's decision. */
export type MonitorChange = MonitorDecision;

/** A set of one repository's tests, as the lists and checks ask for them. */
export type CaseSet =
  | { kind: 'failedBetween'; repoId: string; start: number; end: number }
  | { kind: 'broken'; repoId: string }
  | { kind: 'flaky'; repoId: string; now: number }
  | { kind: 'quarantined'; repoId: string; now: number; matches: readonly QuarantineMatch[] };

export interface EarlierUpload {
  seq: number;
  first_at: number;
  last_at: number;
}

export interface RecentRates {
  runs7: number;
  fails7: number;
  runs1: number;
  fails1: number;
}

export interface FailureGroup {
  testSeq: number;
  key: string;
  count: number;
  last: number;
}

/** What the store needs to know of its database: found once, from Kysely's adapter. */
interface Flavour {
  /** Rows per multi-row INSERT for `columns` columns: within every database's bound-parameter limit. */
  rowsPerInsert(columns: number): number;
  /** Keys per `IN (…)` list. */
  keysPerList: number;
  /** UPDATE … RETURNING (SQLite ≥ 3.35, PostgreSQL); else update, then read back. */
  returning: boolean;
  /**
   * The transactions of several uploads run at once (PostgreSQL), so the store locks what they
   * share: the repository (advisory locks) and the tests detection reads and writes (row locks).
   * SQLite needs no locks: it has one writer, so two uploads' transactions never overlap there.
   */
  concurrentWriters: boolean;
  /**
   * Rows or keys per statement that passes them as one array per column (PostgreSQL's `unnest`),
   * or 0 where the database has no arrays (SQLite: multi-row VALUES and IN lists instead).
   */
  rowsPerArray: number;
}

/**
 * The one place where the store picks statements by database. SQLite allows 32,766 bound
 * parameters, PostgreSQL 65,535; 500 rows per statement measured fastest for ingest on SQLite
 * (bench/flaky.md) and stays well inside both. ON CONFLICT … DO NOTHING is shared by both.
 * PostgreSQL takes rows and keys as arrays instead: a handful of parameters whatever the number of
 * rows (a VALUES list of 500 rows of 10 columns binds 5,000 that it parses and plans every time).
 */
function flavourOf(db: Kysely<SchemaTables>): Flavour {
  const adapter = db.getExecutor().adapter;
  const maxParams = 32_766;
  return {
    rowsPerInsert: (columns) => Math.min(500, Math.floor(maxParams / columns)),
    keysPerList: 500,
    returning: adapter.supportsReturning,
    concurrentWriters: adapter instanceof PostgresAdapter,
    rowsPerArray: adapter instanceof PostgresAdapter ? 5_000 : 0,
  };
}

export interface FlakyStoreOptions {
  /**
   * Awaited between the statements of a bulk read or write (one per chunk). The SQLite driver runs
   * each statement on the event loop: the server passes a pause that yields to other requests.
   */
  pause?: () => Promise<void>;
}

type Cases = ExpressionBuilder<SchemaTables, 'test_cases'>;
type CaseFilter = (eb: Cases) => Expression<SqlBool>;

/**
 * Tests a monitor ever marked: the condition of the partial index test_cases_marked, written out
 * literally (not as bound values) so that the database can see that a query implies it.
 */
const MARKED = sql<SqlBool>`(rate_status <> 'healthy' OR por_until IS NOT NULL)`;

/**
 * The conditions of the partial indexes test_cases_status, test_cases_por and test_cases_override
 * (migration 008), written literally and added to the queries that read them: SQLite uses a
 * partial index only when the query's WHERE clause contains its condition (or, for IS NOT NULL,
 * a comparison of the column).
 */
const NOT_HEALTHY = sql<SqlBool>`rate_status <> 'healthy'`;
const POR_SET = sql<SqlBool>`por_until IS NOT NULL`;

const num = (value: unknown): number => Number(value);
const numOrNull = (value: unknown): number | null =>
  value === null || value === undefined ? null : Number(value);

const STATUSES: readonly string[] = ['healthy', 'flaky', 'broken'];
const status = (value: string): TestStatus => (STATUSES.includes(value) ? (value as TestStatus) : 'healthy');
const override = (value: string | null): QuarantineOverride | null =>
  value === 'ALWAYS_QUARANTINE' || value === 'NEVER_QUARANTINE' ? value : null;

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Rows as one array per column, for `unnest`. */
function columns<R, K extends keyof R>(rows: readonly R[], keys: readonly K[]): { [P in K]: Array<R[P]> } {
  const out = {} as { [P in K]: Array<R[P]> };
  for (const key of keys) out[key] = rows.map((row) => row[key]);
  return out;
}

function toCaseRow(row: Selectable<TestCasesTable>): CaseRow {
  return {
    id: row.id,
    seq: num(row.seq),
    repo_id: row.repo_id,
    name: row.name,
    file: row.file,
    classname: row.classname,
    parent: row.parent,
    variant: row.variant,
    first_seen_at: num(row.first_seen_at),
    rate_status: status(row.rate_status),
    rate_reason: row.rate_reason,
    rate_changed_at: numOrNull(row.rate_changed_at),
    por_since: numOrNull(row.por_since),
    por_until: numOrNull(row.por_until),
    por_reason: row.por_reason,
    override: override(row.override),
    override_at: numOrNull(row.override_at),
    ticket: row.ticket,
  };
}

export class FlakyStore {
  private readonly flavour: Flavour;
  private readonly pause: () => Promise<void>;

  constructor(
    private readonly db: Kysely<SchemaTables>,
    private readonly options: FlakyStoreOptions = {},
  ) {
    this.flavour = flavourOf(db);
    this.pause = options.pause ?? (() => Promise.resolve());
  }

  /** Puts webhook events of `org` in the outbox, in this store's transaction (src/store/webhooks.ts). */
  async writeWebhookEvents(org: string, events: readonly OutboxEvent[]): Promise<void> {
    await writeWebhookEvents(this.db, org, events);
  }

  /** Runs `work` in one transaction: all of it is stored, or (if it throws) none. */
  transaction<T>(work: (store: FlakyStore) => Promise<T>): Promise<T> {
    return this.db.transaction().execute((trx) => work(new FlakyStore(trx, this.options)));
  }

  /**
   * `column IN (seqs)`. On PostgreSQL `= ANY` of one array parameter: the statements an upload runs
   * per 500 tests took 500 parameters each for Kysely to compile, pg to serialize and PostgreSQL to
   * parse (the plan is the same: PostgreSQL reads an IN list as `= ANY` of an array).
   */
  private seqIn(column: 'test_seq' | 'seq', seqs: readonly number[]): RawBuilder<SqlBool> {
    return this.flavour.rowsPerArray
      ? sql<SqlBool>`${sql.ref(column)} = ANY(${seqs}::bigint[])`
      : sql<SqlBool>`${sql.ref(column)} IN (${sql.join(seqs)})`;
  }

  /** Runs `each` over `items` in chunks of `size`, pausing between chunks. */
  private async inChunks<T>(
    items: readonly T[],
    size: number,
    each: (chunk: T[]) => Promise<void>,
  ): Promise<void> {
    let first = true;
    for (const chunk of chunks(items, size)) {
      if (!first) await this.pause();
      first = false;
      await each(chunk);
    }
  }

  // ---------------------------------------------------------------------- repositories

  /**
   * The repository; with `lock`, found and locked as `lockRepository` does in one statement (one
   * round trip less while uploads of the repository wait; its row is read as before the lock).
   */
  async findRepository(org: string, key: string, lock = false): Promise<RepositoryRow | null> {
    const row = await this.db
      .selectFrom('flaky_repositories')
      .select(['id', 'org_slug', 'host', 'owner', 'name', 'settings', 'codeowners'])
      .$if(lock && this.flavour.concurrentWriters, (q) =>
        q.select(sql<unknown>`pg_advisory_xact_lock_shared(hashtextextended('flaky:' || id, 0))`.as('locked')),
      )
      .where('org_slug', '=', org)
      .where('repo_key', '=', key)
      .executeTakeFirst();
    if (!row) return null;
    return {
      id: row.id,
      org: row.org_slug,
      repo: { host: row.host, owner: row.owner, name: row.name },
      settings: row.settings,
      codeowners: row.codeowners || null,
    };
  }

  /** Creates the organisation and the repository (default settings) unless they exist. */
  async ensureRepository(org: string, key: string, repo: Repo, id: string, at: number): Promise<void> {
    await this.db
      .insertInto('organisations')
      .values({ slug: org, created_at: at })
      .onConflict((oc) => oc.column('slug').doNothing())
      .execute();
    await this.db
      .insertInto('flaky_repositories')
      .values({
        id,
        org_slug: org,
        repo_key: key,
        host: repo.host.toLowerCase(),
        owner: repo.owner,
        name: repo.name,
        settings: '{}',
        codeowners: null,
        created_at: at,
        updated_at: at,
      })
      .onConflict((oc) => oc.columns(['org_slug', 'repo_key']).doNothing())
      .execute();
  }

  async setRepositorySettings(repoId: string, settings: string, at: number): Promise<void> {
    await this.db
      .updateTable('flaky_repositories')
      .set({ settings, updated_at: at })
      .where('id', '=', repoId)
      .execute();
  }

  /**
   * Stores the repository's CODEOWNERS file unless it is stored already. The comparison is made
   * by the database against the row as it is now (PostgreSQL rechecks it after waiting for a
   * writer), so an unchanged file neither locks the row nor loses to a change made meanwhile.
   */
  async setCodeowners(repoId: string, codeowners: string, at: number): Promise<void> {
    await this.db
      .updateTable('flaky_repositories')
      .set({ codeowners, updated_at: at })
      .where('id', '=', repoId)
      .where('codeowners', 'is distinct from', codeowners)
      .execute();
  }

  // ---------------------------------------------------------------------- ingest

  /**
   * Holds the repository, shared with the other uploads of it, until this transaction ends
   * (PostgreSQL's transaction-scoped advisory locks; SQLite has one writer and needs none). Uploads
   * share it: what they both write they hold test by test (`insertCases`, `holdCases`). Until
   * 2026-11-23 each upload held it alone, under the same key; shared, it still keeps every upload
   * out while a replica not yet upgraded stores one, so a rolling upgrade stays safe.
   */
  async lockRepository(repoId: string): Promise<void> {
    if (!this.flavour.concurrentWriters) return;
    // The same key as findRepository's `'flaky:' || id`.
    await sql`SELECT pg_advisory_xact_lock_shared(hashtextextended(${`flaky:${repoId}`}, 0))`.execute(this.db);
  }

  /**
   * The first of `n` new sequence numbers of `name`. Inside a transaction the counter's row stays
   * locked until it ends: the service numbers new tests that way, so they are committed in the
   * order of their numbers (page tokens rely on it), and takes upload numbers, which need only be
   * unique, outside any transaction, so that uploads of known tests never wait there. A number
   * taken by an upload that then fails is not used again.
   */
  async nextSeqs(name: 'test' | 'upload', n: number): Promise<number> {
    const bump = this.db
      .updateTable('flaky_counters')
      .set((eb) => ({ value: eb('value', '+', n) }))
      .where('name', '=', name);
    let value: number;
    if (this.flavour.returning) value = num((await bump.returning('value').executeTakeFirstOrThrow()).value);
    else {
      await bump.execute();
      const row = await this.db
        .selectFrom('flaky_counters')
        .select('value')
        .where('name', '=', name)
        .executeTakeFirstOrThrow();
      value = num(row.value);
    }
    return value - n + 1;
  }

  /**
   * Holds these tests of the repository until the transaction ends (PostgreSQL: row locks, taken
   * in ascending seq order so that two uploads sharing tests never wait for each other in a
   * circle), and returns the detection state of the ones a monitor ever marked (the others are
   * healthy), read after the locks: what an upload that held a test before this one decided.
   * Detection is a function of each test's own results and state, so uploads holding disjoint tests
   * (the shards of one CI run) store and detect in parallel, and ones sharing a test take turns.
   */
  async holdCases(repoId: string, seqs: readonly number[]): Promise<KnownCase[]> {
    if (!this.flavour.concurrentWriters) return this.markedCases(seqs);
    const out: KnownCase[] = [];
    const sorted = [...seqs].sort((a, b) => a - b);
    await this.inChunks(sorted, this.flavour.rowsPerArray, async (chunk) => {
      // One index probe and lock per key (see markedCases for why the LATERAL … LIMIT 1); the
      // LIMIT also keeps the outer filter out of the subquery, so unmarked tests are locked too.
      const { rows } = await sql<{ seq: string; rate_status: string; por_until: string | null }>`
        SELECT c.seq, c.rate_status, c.por_until FROM unnest(${chunk}::bigint[]) AS k(seq)
        CROSS JOIN LATERAL (SELECT seq, rate_status, por_until FROM test_cases WHERE repo_id = ${repoId} AND seq = k.seq
          LIMIT 1 FOR NO KEY UPDATE) AS c
        WHERE ${MARKED}`.execute(this.db);
      for (const row of rows) out.push({ seq: num(row.seq), rate_status: status(row.rate_status), por_until: numOrNull(row.por_until) });
    });
    return out;
  }

  /**
   * Of the tests with these seqs, the ones a monitor ever marked (the partial index test_cases_marked).
   *
   * On PostgreSQL this and `casesById` are written as a nested loop over the keys, each one read
   * through its index: `unnest(keys) CROSS JOIN LATERAL (… WHERE key = k.key LIMIT 1)`. As
   * `key IN (…)` the planner chose a sequential scan of test_cases whenever the table's statistics
   * were missing or stale — right after the tests were stored, before autovacuum had analysed it:
   * one scan of 100,000 tests (~50 ms) per upload, with the repository locked. The LIMIT keeps the
   * planner from flattening the subquery into a join it may plan as a scan, and tells it that a
   * key finds at most one test (without statistics it guessed 181, a cost that JIT-compiled the
   * query: 5–40 ms).
   */
  async markedCases(seqs: readonly number[]): Promise<KnownCase[]> {
    const out: KnownCase[] = [];
    const add = (row: { seq: unknown; rate_status: string; por_until: unknown }) =>
      out.push({ seq: num(row.seq), rate_status: status(row.rate_status), por_until: numOrNull(row.por_until) });
    if (this.flavour.rowsPerArray) {
      await this.inChunks(seqs, this.flavour.rowsPerArray, async (chunk) => {
        const { rows } = await sql<{ seq: string; rate_status: string; por_until: string | null }>`
          SELECT c.seq, c.rate_status, c.por_until FROM unnest(${chunk}::bigint[]) AS k(seq)
          CROSS JOIN LATERAL (SELECT seq, rate_status, por_until FROM test_cases WHERE seq = k.seq AND ${MARKED} LIMIT 1) AS c`.execute(
          this.db,
        );
        rows.forEach(add);
      });
      return out;
    }
    await this.inChunks(seqs, this.flavour.keysPerList, async (chunk) => {
      const rows = await this.db
        .selectFrom('test_cases')
        .select(['seq', 'rate_status', 'por_until'])
        .where('seq', 'in', chunk)
        .where(MARKED)
        .execute();
      rows.forEach(add);
    });
    return out;
  }

  /** The stored tests among these ids, by id. */
  async casesById(ids: readonly string[]): Promise<Map<string, KnownCase>> {
    const out = new Map<string, KnownCase>();
    const add = (row: { id: string; seq: unknown; rate_status: string; por_until: unknown }) =>
      out.set(row.id, { seq: num(row.seq), rate_status: status(row.rate_status), por_until: numOrNull(row.por_until) });
    if (this.flavour.rowsPerArray) {
      await this.inChunks(ids, this.flavour.rowsPerArray, async (chunk) => {
        const { rows } = await sql<{ id: string; seq: string; rate_status: string; por_until: string | null }>`
          SELECT c.id, c.seq, c.rate_status, c.por_until FROM unnest(${chunk}::text[]) AS k(id)
          CROSS JOIN LATERAL (SELECT id, seq, rate_status, por_until FROM test_cases WHERE id = k.id LIMIT 1) AS c`.execute(this.db);
        rows.forEach(add);
      });
      return out;
    }
    await this.inChunks(ids, this.flavour.keysPerList, async (chunk) => {
      const rows = await this.db
        .selectFrom('test_cases')
        .select(['id', 'seq', 'rate_status', 'por_until'])
        .where('id', 'in', chunk)
        .execute();
      rows.forEach(add);
    });
    return out;
  }

  /**
   * Stores new tests; `toRow` makes the rows of one statement at a time (an upload may bring
   * 200,000). A test another upload stored first is left as it is (one still storing it is waited
   * for): the ids of the tests this call stored are returned. On PostgreSQL the rows go in by ascending id,
   * so two uploads storing the same new tests never wait for each other in a circle.
   */
  async insertCases<T extends { id: string }>(items: readonly T[], toRow: (item: T) => NewCase): Promise<Set<string>> {
    const stored = new Set<string>();
    if (this.flavour.rowsPerArray) {
      const byId = [...items].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      await this.inChunks(byId, this.flavour.rowsPerArray, async (chunk) => {
        const c = columns(chunk.map(toRow), ['id', 'seq', 'repo_id', 'name', 'file', 'classname', 'parent', 'variant', 'first_seen_at']);
        const { rows } = await sql<{ id: string }>`
          INSERT INTO test_cases (id, seq, repo_id, name, file, classname, parent, variant, first_seen_at, rate_status)
          SELECT *, 'healthy' FROM unnest(${c.id}::text[], ${c.seq}::bigint[], ${c.repo_id}::text[], ${c.name}::text[],
            ${c.file}::text[], ${c.classname}::text[], ${c.parent}::text[], ${c.variant}::text[], ${c.first_seen_at}::bigint[])
          ON CONFLICT (id) DO NOTHING RETURNING id`.execute(this.db);
        for (const row of rows) stored.add(row.id);
      });
      return stored;
    }
    await this.inChunks(items, this.flavour.rowsPerInsert(10), async (chunk) => {
      const rows = await this.db
        .insertInto('test_cases')
        .values(chunk.map((item) => ({ ...toRow(item), rate_status: 'healthy' })))
        .onConflict((oc) => oc.column('id').doNothing())
        .returning('id')
        .execute();
      for (const row of rows) stored.add(row.id);
    });
    return stored;
  }

  async insertUpload(upload: NewUpload): Promise<void> {
    await this.db
      .insertInto('test_uploads')
      .values({ ...upload, excluded: upload.excluded ? 1 : 0 })
      .execute();
  }

  async insertResults<T>(items: readonly T[], toRow: (item: T) => NewResult): Promise<void> {
    const row = (item: T) => {
      const r = toRow(item);
      return { ...r, stable: r.stable ? 1 : 0, excluded: r.excluded ? 1 : 0 };
    };
    if (this.flavour.rowsPerArray) {
      await this.inChunks(items, this.flavour.rowsPerArray, async (chunk) => {
        const c = columns(chunk.map(row), ['test_seq', 'at', 'upload_seq', 'outcome', 'stable', 'excluded', 'duration_ms', 'attempts']);
        await sql`
          INSERT INTO flaky_results (test_seq, at, upload_seq, outcome, stable, excluded, duration_ms, attempts)
          SELECT * FROM unnest(${c.test_seq}::bigint[], ${c.at}::bigint[], ${c.upload_seq}::bigint[], ${c.outcome}::text[],
            ${c.stable}::integer[], ${c.excluded}::integer[], ${c.duration_ms}::bigint[], ${c.attempts}::integer[])`.execute(this.db);
      });
      return;
    }
    await this.inChunks(items, this.flavour.rowsPerInsert(8), async (chunk) => {
      await this.db.insertInto('flaky_results').values(chunk.map(row)).execute();
    });
  }

  async insertFailures<T>(items: readonly T[], toRow: (item: T) => NewFailure): Promise<void> {
    if (this.flavour.rowsPerArray) {
      await this.inChunks(items, this.flavour.rowsPerArray, async (chunk) => {
        const c = columns(chunk.map(toRow), ['test_seq', 'at', 'upload_seq', 'repo_id', 'pr_number', 'failure_key', 'failure_line']);
        await sql`
          INSERT INTO flaky_failures (test_seq, at, upload_seq, repo_id, pr_number, failure_key, failure_line)
          SELECT * FROM unnest(${c.test_seq}::bigint[], ${c.at}::bigint[], ${c.upload_seq}::bigint[], ${c.repo_id}::text[],
            ${c.pr_number}::bigint[], ${c.failure_key}::text[], ${c.failure_line}::text[])`.execute(this.db);
      });
      return;
    }
    await this.inChunks(items, this.flavour.rowsPerInsert(7), async (chunk) => {
      await this.db.insertInto('flaky_failures').values(chunk.map(toRow)).execute();
    });
  }

  /**
   * Stores an upload with its results and failures. On PostgreSQL that is one statement
   * (data-modifying WITH over arrays, up to rowsPerArray results and failures; more follow in
   * statements of their own), where it was three round trips — and on a busy machine each round
   * trip waits for both processes to get a core.
   */
  async storeUpload<T>(write: UploadWrite<T>): Promise<void> {
    const size = this.flavour.rowsPerArray;
    const u = write.upload;
    let stored = 0;
    if (!size) await this.insertUpload(u);
    else {
      const r = columns(
        write.results.slice(0, size).map((item) => {
          const row = write.result(item);
          return { ...row, stable: row.stable ? 1 : 0, excluded: row.excluded ? 1 : 0 };
        }),
        ['test_seq', 'at', 'outcome', 'stable', 'excluded', 'duration_ms', 'attempts'],
      );
      const f = columns(write.failures.slice(0, size).map(write.failure), [
        'test_seq',
        'at',
        'repo_id',
        'pr_number',
        'failure_key',
        'failure_line',
      ]);
      await sql`
        WITH u AS (
          INSERT INTO test_uploads (id, seq, repo_id, branch, sha, pr_number, job, attempt, variant, started_at, first_at, last_at, created_at, counts, excluded)
          VALUES (${u.id}::text, ${u.seq}::bigint, ${u.repo_id}::text, ${u.branch}::text, ${u.sha}::text, ${u.pr_number}::bigint, ${u.job}::text,
            ${u.attempt}::integer, ${u.variant}::text, ${u.started_at}::bigint, ${u.first_at}::bigint, ${u.last_at}::bigint,
            ${u.created_at}::bigint, ${u.counts}::text, ${u.excluded ? 1 : 0}::integer)),
        r AS (
          INSERT INTO flaky_results (test_seq, at, upload_seq, outcome, stable, excluded, duration_ms, attempts)
          SELECT r.test_seq, r.at, ${u.seq}::bigint, r.outcome, r.stable, r.excluded, r.duration_ms, r.attempts
          FROM unnest(${r.test_seq}::bigint[], ${r.at}::bigint[], ${r.outcome}::text[], ${r.stable}::integer[], ${r.excluded}::integer[],
            ${r.duration_ms}::bigint[], ${r.attempts}::integer[]) AS r(test_seq, at, outcome, stable, excluded, duration_ms, attempts))
        INSERT INTO flaky_failures (test_seq, at, upload_seq, repo_id, pr_number, failure_key, failure_line)
        SELECT f.test_seq, f.at, ${u.seq}::bigint, f.repo_id, f.pr_number, f.failure_key, f.failure_line
        FROM unnest(${f.test_seq}::bigint[], ${f.at}::bigint[], ${f.repo_id}::text[], ${f.pr_number}::bigint[], ${f.failure_key}::text[],
          ${f.failure_line}::text[]) AS f(test_seq, at, repo_id, pr_number, failure_key, failure_line)`.execute(this.db);
      stored = size;
    }
    // The rows as made, numbered in place (a copy of each row per statement cost SQLite's ingest ~5 % more CPU).
    const numbered = <R extends object>(row: R): R & { upload_seq: number } => Object.assign(row, { upload_seq: u.seq });
    const rest = <I>(items: readonly I[]) => (stored ? items.slice(stored) : items);
    await this.insertResults(rest(write.results), (item) => numbered(write.result(item)));
    await this.insertFailures(rest(write.failures), (item) => numbered(write.failure(item)));
  }

  /** The other stored uploads of this commit that detection used (not excluded): every one but `self`. */
  async uploadsOfCommit(repoId: string, sha: string, self: number): Promise<EarlierUpload[]> {
    const rows = await this.db
      .selectFrom('test_uploads')
      .select(['seq', 'first_at', 'last_at'])
      .where('repo_id', '=', repoId)
      .where('sha', '=', sha)
      .where('excluded', '=', 0)
      .where('seq', '!=', self)
      .execute();
    return rows.map((r) => ({ seq: num(r.seq), first_at: num(r.first_at), last_at: num(r.last_at) }));
  }

  /** The outcomes an earlier upload stored for these tests. */
  async outcomesIn(
    upload: EarlierUpload,
    seqs: readonly number[],
  ): Promise<Array<{ seq: number; outcome: string }>> {
    const out: Array<{ seq: number; outcome: string }> = [];
    await this.inChunks(seqs, this.flavour.keysPerList, async (chunk) => {
      const rows = await this.db
        .selectFrom('flaky_results')
        .select(['test_seq', 'outcome'])
        .where(this.seqIn('test_seq', chunk))
        .where('at', '>=', upload.first_at)
        .where('at', '<=', upload.last_at)
        .where('upload_seq', '=', upload.seq)
        .execute();
      for (const r of rows) out.push({ seq: num(r.test_seq), outcome: r.outcome });
    });
    return out;
  }

  /** Of these tests, the ones with a failure in the window (since, until]. */
  async failedIn(seqs: readonly number[], since: number, until: number): Promise<Set<number>> {
    const out = new Set<number>();
    await this.inChunks(seqs, this.flavour.keysPerList, async (chunk) => {
      const rows = await this.db
        .selectFrom('flaky_failures')
        .select('test_seq')
        .distinct()
        .where(this.seqIn('test_seq', chunk))
        .where('at', '>', since)
        .where('at', '<=', until)
        .execute();
      for (const row of rows) out.add(num(row.test_seq));
    });
    return out;
  }

  /** Runs and failures on stable branches, not excluded, in the window (since, until], by test seq. */
  async stableRates(
    seqs: readonly number[],
    since: number,
    until: number,
  ): Promise<Map<number, { runs: number; fails: number }>> {
    const out = new Map<number, { runs: number; fails: number }>();
    await this.inChunks(seqs, this.flavour.keysPerList, async (chunk) => {
      const rows = await this.db
        .selectFrom('flaky_results')
        .select((eb) => [
          'test_seq',
          eb.fn.countAll<number>().as('runs'),
          eb.fn.sum<number>(eb.case().when('outcome', '!=', 'passed').then(1).else(0).end()).as('fails'),
        ])
        .where(this.seqIn('test_seq', chunk))
        .where('at', '>', since)
        .where('at', '<=', until)
        .where('stable', '=', 1)
        .where('excluded', '=', 0)
        .groupBy('test_seq')
        .execute();
      for (const row of rows) out.set(num(row.test_seq), { runs: num(row.runs), fails: num(row.fails) });
    });
    return out;
  }

  /**
   * Writes what detection changed: on SQLite one statement per test; on PostgreSQL one per 100
   * tests (UPDATE … FROM unnest, each column written only where the change has it), since every
   * round trip is made with the repository locked and detection rewrites the reason of every
   * flaky or broken test an upload on a stable branch ran. (100, not more: PostgreSQL joins the
   * keys to test_cases, and from ~300 keys on a table of 100,000 tests its cost model prefers a
   * hash join over a scan of the whole table — 100 ms — to a probe of the primary key per key.)
   */
  async updateMonitors(changes: ReadonlyArray<{ id: string; change: MonitorChange }>): Promise<void> {
    if (this.flavour.rowsPerArray) {
      // One row per test (a test changed twice: the later change over the earlier, as statements in turn would).
      const byId = new Map<string, MonitorChange>();
      for (const { id, change } of changes) {
        const merged: MonitorChange = { ...byId.get(id) };
        for (const [key, value] of Object.entries(change)) if (value !== undefined) Object.assign(merged, { [key]: value });
        byId.set(id, merged);
      }
      await this.inChunks([...byId], 100, async (chunk) => {
        const set = <K extends keyof MonitorChange>(key: K) => chunk.map(([, change]) => change[key] !== undefined);
        const value = <K extends keyof MonitorChange>(key: K) => chunk.map(([, change]) => change[key] ?? null);
        await sql`
          UPDATE test_cases AS t SET
            por_since = CASE WHEN c.set_por_since THEN c.por_since ELSE t.por_since END,
            por_until = CASE WHEN c.set_por_until THEN c.por_until ELSE t.por_until END,
            por_reason = CASE WHEN c.set_por_reason THEN c.por_reason ELSE t.por_reason END,
            rate_status = CASE WHEN c.set_rate_status THEN c.rate_status ELSE t.rate_status END,
            rate_changed_at = CASE WHEN c.set_rate_changed_at THEN c.rate_changed_at ELSE t.rate_changed_at END,
            rate_reason = CASE WHEN c.set_rate_reason THEN c.rate_reason ELSE t.rate_reason END
          FROM unnest(${chunk.map(([id]) => id)}::text[],
            ${set('porSince')}::boolean[], ${value('porSince')}::bigint[],
            ${set('porUntil')}::boolean[], ${value('porUntil')}::bigint[],
            ${set('porReason')}::boolean[], ${value('porReason')}::text[],
            ${set('rateStatus')}::boolean[], ${value('rateStatus')}::text[],
            ${set('rateChangedAt')}::boolean[], ${value('rateChangedAt')}::bigint[],
            ${set('rateReason')}::boolean[], ${value('rateReason')}::text[])
            AS c(id, set_por_since, por_since, set_por_until, por_until, set_por_reason, por_reason,
                 set_rate_status, rate_status, set_rate_changed_at, rate_changed_at, set_rate_reason, rate_reason)
          WHERE t.id = c.id`.execute(this.db);
      });
      return;
    }
    await this.inChunks(changes, this.flavour.keysPerList, async (chunk) => {
      for (const { id, change } of chunk) {
        await this.db
          .updateTable('test_cases')
          .set({
            por_since: change.porSince,
            por_until: change.porUntil,
            por_reason: change.porReason,
            rate_status: change.rateStatus,
            rate_changed_at: change.rateChangedAt,
            rate_reason: change.rateReason,
          })
          .where('id', '=', id)
          .execute();
      }
    });
  }

  // ---------------------------------------------------------------------- reading

  /**
   * The repository's tests in any of `parts`, as `repo_id = ? AND seq IN (part₁ UNION ALL part₂ …)`:
   * each part reads its own index, where one OR over the repository's tests would scan them all.
   */
  private testsIn(repoId: string, parts: CaseFilter[]): CaseFilter {
    return (eb) => {
      if (!parts.length) return sql<SqlBool>`1 = 0`;
      const part = (filter: CaseFilter) =>
        eb.selectFrom('test_cases').select('seq').where('repo_id', '=', repoId).where(filter);
      const [first, ...rest] = parts.map(part);
      return eb.and([
        eb('repo_id', '=', repoId),
        eb(
          'seq',
          'in',
          rest.reduce((union, p) => union.unionAll(p), first),
        ),
      ]);
    };
  }

  /** Flaky at `now` (effectiveStatus): the failure-rate monitor says flaky, or healthy with pass-on-retry active. */
  private flakyParts(now: number, extra: CaseFilter = (eb) => eb.lit(true)): CaseFilter[] {
    return [
      (eb) => eb.and([extra(eb), NOT_HEALTHY, eb('rate_status', '=', 'flaky')]),
      (eb) => eb.and([extra(eb), eb('rate_status', '=', 'healthy'), POR_SET, eb('por_until', '>', now)]),
    ];
  }

  private filterOf(set: CaseSet): CaseFilter {
    switch (set.kind) {
      case 'failedBetween': {
        const failed = this.db
          .selectFrom('flaky_failures')
          .select('test_seq')
          .where('repo_id', '=', set.repoId)
          .where('at', '>=', set.start)
          .where('at', '<', set.end);
        return (eb) => eb.and([eb('repo_id', '=', set.repoId), eb('seq', 'in', failed)]);
      }
      case 'broken':
        return (eb) => eb.and([eb('repo_id', '=', set.repoId), NOT_HEALTHY, eb('rate_status', '=', 'broken')]);
      case 'flaky':
        return this.testsIn(set.repoId, this.flakyParts(set.now));
      case 'quarantined': {
        const parts = set.matches.flatMap((m): CaseFilter[] => {
          const overridden: CaseFilter =
            m.override === null
              ? (eb) => eb('override', 'is', null)
              : (eb) => eb('override', '=', m.override);
          return m.flakyOnly ? this.flakyParts(set.now, overridden) : [overridden];
        });
        return this.testsIn(set.repoId, parts);
      }
    }
  }

  async countCases(set: CaseSet): Promise<number> {
    const row = await this.db
      .selectFrom('test_cases')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where(this.filterOf(set))
      .executeTakeFirstOrThrow();
    return num(row.n);
  }

  /** Up to `limit` tests of the set in arrival order: after seq `after` (or from the start), or the last ones before seq `before` (or the very last). */
  async casesInOrder(
    set: CaseSet,
    range: { after?: number; before?: number; last?: boolean },
    limit: number,
  ): Promise<CaseRow[]> {
    const base = this.db.selectFrom('test_cases').selectAll().where(this.filterOf(set));
    if (range.last || range.before !== undefined) {
      const q = range.before !== undefined ? base.where('seq', '<', range.before) : base;
      return (await q.orderBy('seq', 'desc').limit(limit).execute()).reverse().map(toCaseRow);
    }
    const q = range.after !== undefined ? base.where('seq', '>', range.after) : base;
    return (await q.orderBy('seq', 'asc').limit(limit).execute()).map(toCaseRow);
  }

  /** Which of these test ids are in the set. */
  async idsIn(set: CaseSet, ids: readonly string[]): Promise<string[]> {
    const filter = this.filterOf(set);
    const out: string[] = [];
    await this.inChunks(ids, this.flavour.keysPerList, async (chunk) => {
      const rows = await this.db
        .selectFrom('test_cases')
        .select('id')
        .where((eb) => eb.and([filter(eb), eb('id', 'in', chunk)]))
        .execute();
      out.push(...rows.map((r) => r.id));
    });
    return out;
  }

  async findCase(repoId: string, id: string): Promise<CaseRow | null> {
    const row = await this.db
      .selectFrom('test_cases')
      .selectAll()
      .where('id', '=', id)
      .where('repo_id', '=', repoId)
      .executeTakeFirst();
    return row ? toCaseRow(row) : null;
  }

  async setTicket(id: string, ticket: string): Promise<void> {
    await this.db.updateTable('test_cases').set({ ticket }).where('id', '=', id).execute();
  }

  async setOverride(id: string, value: QuarantineOverride | null, at: number | null): Promise<void> {
    await this.db
      .updateTable('test_cases')
      .set({ override: value, override_at: at })
      .where('id', '=', id)
      .execute();
  }

  /** Distinct pull requests each test failed on in [since, until], by test seq. */
  async impactedPullRequests(
    seqs: readonly number[],
    since: number,
    until: number,
  ): Promise<Map<number, number>> {
    const out = new Map<number, number>();
    if (!seqs.length) return out;
    const rows = await this.db
      .selectFrom('flaky_failures')
      .select((eb) => ['test_seq', eb.fn.count<number>('pr_number').distinct().as('prs')])
      .where('test_seq', 'in', seqs)
      .where('at', '>=', since)
      .where('at', '<=', until)
      .where('pr_number', 'is not', null)
      .groupBy('test_seq')
      .execute();
    for (const row of rows) out.set(num(row.test_seq), num(row.prs));
    return out;
  }

  /** Runs and failures (not excluded) in [since, until] and in [day, until], by test seq. */
  async recentRates(
    seqs: readonly number[],
    since: number,
    day: number,
    until: number,
  ): Promise<Map<number, RecentRates>> {
    const out = new Map<number, RecentRates>();
    if (!seqs.length) return out;
    const rows = await this.db
      .selectFrom('flaky_results')
      .select((eb) => {
        const failed = eb.case().when('outcome', '!=', 'passed').then(1).else(0).end();
        return [
          'test_seq',
          eb.fn.countAll<number>().as('runs7'),
          eb.fn.sum<number>(failed).as('fails7'),
          eb.fn.sum<number>(eb.case().when('at', '>=', day).then(1).else(0).end()).as('runs1'),
          eb.fn
            .sum<number>(
              eb
                .case()
                .when(eb.and([eb('at', '>=', day), eb('outcome', '!=', 'passed')]))
                .then(1)
                .else(0)
                .end(),
            )
            .as('fails1'),
        ];
      })
      .where('test_seq', 'in', seqs)
      .where('at', '>=', since)
      .where('at', '<=', until)
      .where('excluded', '=', 0)
      .groupBy('test_seq')
      .execute();
    for (const r of rows)
      out.set(num(r.test_seq), {
        runs7: num(r.runs7),
        fails7: num(r.fails7),
        runs1: num(r.runs1),
        fails1: num(r.fails1),
      });
    return out;
  }

  /**
   * One test's runs and failures (not excluded) in [since, until], by UTC day number (epoch ms / 86 400 000):
   * integer division of the bigint `at`, the same on SQLite and PostgreSQL. Days without runs are absent.
   */
  async dailyRates(
    seq: number,
    since: number,
    until: number,
  ): Promise<Map<number, { runs: number; fails: number }>> {
    const day = sql<number>`at / 86400000`;
    const rows = await this.db
      .selectFrom('flaky_results')
      .select((eb) => [
        day.as('day'),
        eb.fn.countAll<number>().as('runs'),
        eb.fn.sum<number>(eb.case().when('outcome', '!=', 'passed').then(1).else(0).end()).as('fails'),
      ])
      .where('test_seq', '=', seq)
      .where('at', '>=', since)
      .where('at', '<=', until)
      .where('excluded', '=', 0)
      .groupBy(day)
      .execute();
    const out = new Map<number, { runs: number; fails: number }>();
    for (const r of rows) out.set(num(r.day), { runs: num(r.runs), fails: num(r.fails) });
    return out;
  }

  /** Failures of these tests in [since, until], grouped by failure key. */
  async failureGroups(seqs: readonly number[], since: number, until: number): Promise<FailureGroup[]> {
    if (!seqs.length) return [];
    const rows = await this.db
      .selectFrom('flaky_failures')
      .select((eb) => [
        'test_seq',
        'failure_key',
        eb.fn.countAll<number>().as('n'),
        eb.fn.max('at').as('last'),
      ])
      .where('test_seq', 'in', seqs)
      .where('at', '>=', since)
      .where('at', '<=', until)
      .where('failure_key', 'is not', null)
      .groupBy(['test_seq', 'failure_key'])
      .execute();
    return rows.map((r) => ({
      testSeq: num(r.test_seq),
      key: String(r.failure_key),
      count: num(r.n),
      last: num(r.last),
    }));
  }
}
