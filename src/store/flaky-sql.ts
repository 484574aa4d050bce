/**
 * What the flaky-test store (src/store/flaky.ts) chooses by database — bulk sizes, RETURNING,
 * locks, arrays — and the literal index conditions and row conversions its statements share;
 * FlakyHandle, the database handle with those choices that each part of the flaky store works over.
 */
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
import type { TestStatus } from '../contract/index.js';
import type { QuarantineOverride } from '../flaky/quarantine.js';
import type { CaseRow } from './flaky-rows.js';
import type { SchemaTables, TestCasesTable } from './schema.js';

/** What the store needs to know of its database: found once, from Kysely's adapter. */
export interface Flavour {
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
export function flavourOf(db: Kysely<SchemaTables>): Flavour {
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

/** The flaky store's database handle (a transaction's, inside one), its flavour and its chunked statements. */
export class FlakyHandle {
  readonly flavour: Flavour;
  readonly pause: () => Promise<void>;

  constructor(
    readonly db: Kysely<SchemaTables>,
    readonly options: FlakyStoreOptions = {},
  ) {
    this.flavour = flavourOf(db);
    this.pause = options.pause ?? (() => Promise.resolve());
  }

  /**
   * `column IN (seqs)`. On PostgreSQL `= ANY` of one array parameter: the statements an upload runs
   * per 500 tests took 500 parameters each for Kysely to compile, pg to serialize and PostgreSQL to
   * parse (the plan is the same: PostgreSQL reads an IN list as `= ANY` of an array).
   */
  seqIn(column: 'test_seq' | 'seq', seqs: readonly number[]): RawBuilder<SqlBool> {
    return this.flavour.rowsPerArray
      ? sql<SqlBool>`${sql.ref(column)} = ANY(${seqs}::bigint[])`
      : sql<SqlBool>`${sql.ref(column)} IN (${sql.join(seqs)})`;
  }

  /** Runs `each` over `items` in chunks of `size`, pausing between chunks. */
  async inChunks<T>(items: readonly T[], size: number, each: (chunk: T[]) => Promise<void>): Promise<void> {
    let first = true;
    for (const chunk of chunks(items, size)) {
      if (!first) await this.pause();
      first = false;
      await each(chunk);
    }
  }
}

export type Cases = ExpressionBuilder<SchemaTables, 'test_cases'>;
export type CaseFilter = (eb: Cases) => Expression<SqlBool>;

/**
 * Tests a monitor ever marked: the condition of the partial index test_cases_marked, written out
 * literally (not as bound values) so that the database can see that a query implies it.
 */
export const MARKED = sql<SqlBool>`(rate_status <> 'healthy' OR por_until IS NOT NULL)`;

/**
 * The conditions of the partial indexes test_cases_status, test_cases_por and test_cases_override
 * (migration 008), written literally and added to the queries that read them: SQLite uses a
 * partial index only when the query's WHERE clause contains its condition (or, for IS NOT NULL,
 * a comparison of the column).
 */
export const NOT_HEALTHY = sql<SqlBool>`rate_status <> 'healthy'`;
export const POR_SET = sql<SqlBool>`por_until IS NOT NULL`;

export const num = (value: unknown): number => Number(value);
export const numOrNull = (value: unknown): number | null =>
  value === null || value === undefined ? null : Number(value);

export const STATUSES: readonly string[] = ['healthy', 'flaky', 'broken'];
export const status = (value: string): TestStatus =>
  STATUSES.includes(value) ? (value as TestStatus) : 'healthy';
export const override = (value: string | null): QuarantineOverride | null =>
  value === 'ALWAYS_QUARANTINE' || value === 'NEVER_QUARANTINE' ? value : null;

export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Rows as one array per column, for `unnest`. */
export function columns<R, K extends keyof R>(
  rows: readonly R[],
  keys: readonly K[],
): { [P in K]: Array<R[P]> } {
  const out = {} as { [P in K]: Array<R[P]> };
  for (const key of keys) out[key] = rows.map((row) => row[key]);
  return out;
}

export function toCaseRow(row: Selectable<TestCasesTable>): CaseRow {
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
    override_until: numOrNull(row.override_until),
    override_owner: row.override_owner,
    override_reason: row.override_reason,
    override_lapse_sent: numOrNull(row.override_lapse_sent),
    ticket: row.ticket,
  };
}
