/**
 * The flaky-test store's ingest: the statements an upload runs (tests, uploads, results, failures,
 * the locks concurrent uploads share) and the monitor updates detection decides.
 */
import { sql } from 'kysely';
import type {
  EarlierUpload,
  KnownCase,
  MonitorChange,
  NewCase,
  NewFailure,
  NewResult,
  NewUpload,
  UploadWrite,
} from './flaky-rows.js';
import { columns, MARKED, num, numOrNull, status, type FlakyHandle } from './flaky-sql.js';

/** What uploads write and detection reads and decides (`store.flaky.ingest`). */
export class FlakyIngest {
  constructor(private readonly h: FlakyHandle) {}

  // ---------------------------------------------------------------------- ingest

  /**
   * Holds the repository, shared with the other uploads of it, until this transaction ends
   * (PostgreSQL's transaction-scoped advisory locks; SQLite has one writer and needs none). Uploads
   * share it: what they both write they hold test by test (`insertCases`, `holdCases`). Until
   * 2026-11-23 each upload held it alone, under the same key; shared, it still keeps every upload
   * out while a replica not yet upgraded stores one, so a rolling upgrade stays safe.
   */
  async lockRepository(repoId: string): Promise<void> {
    if (!this.h.flavour.concurrentWriters) return;
    // The same key as findRepository's `'flaky:' || id`.
    await sql`SELECT pg_advisory_xact_lock_shared(hashtextextended(${`flaky:${repoId}`}, 0))`.execute(
      this.h.db,
    );
  }

  /**
   * The first of `n` new sequence numbers of `name`. Inside a transaction the counter's row stays
   * locked until it ends: the service numbers new tests that way, so they are committed in the
   * order of their numbers (page tokens rely on it), and takes upload numbers, which need only be
   * unique, outside any transaction, so that uploads of known tests never wait there. A number
   * taken by an upload that then fails is not used again.
   */
  async nextSeqs(name: 'test' | 'upload', n: number): Promise<number> {
    const bump = this.h.db
      .updateTable('flaky_counters')
      .set((eb) => ({ value: eb('value', '+', n) }))
      .where('name', '=', name);
    let value: number;
    if (this.h.flavour.returning)
      value = num((await bump.returning('value').executeTakeFirstOrThrow()).value);
    else {
      await bump.execute();
      const row = await this.h.db
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
    if (!this.h.flavour.concurrentWriters) return this.markedCases(seqs);
    const out: KnownCase[] = [];
    const sorted = [...seqs].sort((a, b) => a - b);
    await this.h.inChunks(sorted, this.h.flavour.rowsPerArray, async (chunk) => {
      // One index probe and lock per key (see markedCases for why the LATERAL … LIMIT 1); the
      // LIMIT also keeps the outer filter out of the subquery, so unmarked tests are locked too.
      const { rows } = await sql<{ seq: string; rate_status: string; por_until: string | null }>`
        SELECT c.seq, c.rate_status, c.por_until FROM unnest(${chunk}::bigint[]) AS k(seq)
        CROSS JOIN LATERAL (SELECT seq, rate_status, por_until FROM test_cases WHERE repo_id = ${repoId} AND seq = k.seq
          LIMIT 1 FOR NO KEY UPDATE) AS c
        WHERE ${MARKED}`.execute(this.h.db);
      for (const row of rows)
        out.push({
          seq: num(row.seq),
          rate_status: status(row.rate_status),
          por_until: numOrNull(row.por_until),
        });
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
      out.push({
        seq: num(row.seq),
        rate_status: status(row.rate_status),
        por_until: numOrNull(row.por_until),
      });
    if (this.h.flavour.rowsPerArray) {
      await this.h.inChunks(seqs, this.h.flavour.rowsPerArray, async (chunk) => {
        const { rows } = await sql<{ seq: string; rate_status: string; por_until: string | null }>`
          SELECT c.seq, c.rate_status, c.por_until FROM unnest(${chunk}::bigint[]) AS k(seq)
          CROSS JOIN LATERAL (SELECT seq, rate_status, por_until FROM test_cases WHERE seq = k.seq AND ${MARKED} LIMIT 1) AS c`.execute(
          this.h.db,
        );
        rows.forEach(add);
      });
      return out;
    }
    await this.h.inChunks(seqs, this.h.flavour.keysPerList, async (chunk) => {
      const rows = await this.h.db
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
      out.set(row.id, {
        seq: num(row.seq),
        rate_status: status(row.rate_status),
        por_until: numOrNull(row.por_until),
      });
    if (this.h.flavour.rowsPerArray) {
      await this.h.inChunks(ids, this.h.flavour.rowsPerArray, async (chunk) => {
        const { rows } = await sql<{
          id: string;
          seq: string;
          rate_status: string;
          por_until: string | null;
        }>`
          SELECT c.id, c.seq, c.rate_status, c.por_until FROM unnest(${chunk}::text[]) AS k(id)
          CROSS JOIN LATERAL (SELECT id, seq, rate_status, por_until FROM test_cases WHERE id = k.id LIMIT 1) AS c`.execute(
          this.h.db,
        );
        rows.forEach(add);
      });
      return out;
    }
    await this.h.inChunks(ids, this.h.flavour.keysPerList, async (chunk) => {
      const rows = await this.h.db
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
  async insertCases<T extends { id: string }>(
    items: readonly T[],
    toRow: (item: T) => NewCase,
  ): Promise<Set<string>> {
    const stored = new Set<string>();
    if (this.h.flavour.rowsPerArray) {
      const byId = [...items].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      await this.h.inChunks(byId, this.h.flavour.rowsPerArray, async (chunk) => {
        const c = columns(chunk.map(toRow), [
          'id',
          'seq',
          'repo_id',
          'name',
          'file',
          'classname',
          'parent',
          'variant',
          'first_seen_at',
        ]);
        const { rows } = await sql<{ id: string }>`
          INSERT INTO test_cases (id, seq, repo_id, name, file, classname, parent, variant, first_seen_at, rate_status)
          SELECT *, 'healthy' FROM unnest(${c.id}::text[], ${c.seq}::bigint[], ${c.repo_id}::text[], ${c.name}::text[],
            ${c.file}::text[], ${c.classname}::text[], ${c.parent}::text[], ${c.variant}::text[], ${c.first_seen_at}::bigint[])
          ON CONFLICT (id) DO NOTHING RETURNING id`.execute(this.h.db);
        for (const row of rows) stored.add(row.id);
      });
      return stored;
    }
    await this.h.inChunks(items, this.h.flavour.rowsPerInsert(10), async (chunk) => {
      const rows = await this.h.db
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
    await this.h.db
      .insertInto('test_uploads')
      .values({ ...upload, excluded: upload.excluded ? 1 : 0 })
      .execute();
  }

  async insertResults<T>(items: readonly T[], toRow: (item: T) => NewResult): Promise<void> {
    const row = (item: T) => {
      const r = toRow(item);
      return { ...r, stable: r.stable ? 1 : 0, excluded: r.excluded ? 1 : 0 };
    };
    if (this.h.flavour.rowsPerArray) {
      await this.h.inChunks(items, this.h.flavour.rowsPerArray, async (chunk) => {
        const c = columns(chunk.map(row), [
          'test_seq',
          'at',
          'upload_seq',
          'outcome',
          'stable',
          'excluded',
          'duration_ms',
          'attempts',
        ]);
        await sql`
          INSERT INTO flaky_results (test_seq, at, upload_seq, outcome, stable, excluded, duration_ms, attempts)
          SELECT * FROM unnest(${c.test_seq}::bigint[], ${c.at}::bigint[], ${c.upload_seq}::bigint[], ${c.outcome}::text[],
            ${c.stable}::integer[], ${c.excluded}::integer[], ${c.duration_ms}::bigint[], ${c.attempts}::integer[])`.execute(
          this.h.db,
        );
      });
      return;
    }
    await this.h.inChunks(items, this.h.flavour.rowsPerInsert(8), async (chunk) => {
      await this.h.db.insertInto('flaky_results').values(chunk.map(row)).execute();
    });
  }

  async insertFailures<T>(items: readonly T[], toRow: (item: T) => NewFailure): Promise<void> {
    if (this.h.flavour.rowsPerArray) {
      await this.h.inChunks(items, this.h.flavour.rowsPerArray, async (chunk) => {
        const c = columns(chunk.map(toRow), [
          'test_seq',
          'at',
          'upload_seq',
          'repo_id',
          'pr_number',
          'failure_key',
          'failure_line',
        ]);
        await sql`
          INSERT INTO flaky_failures (test_seq, at, upload_seq, repo_id, pr_number, failure_key, failure_line)
          SELECT * FROM unnest(${c.test_seq}::bigint[], ${c.at}::bigint[], ${c.upload_seq}::bigint[], ${c.repo_id}::text[],
            ${c.pr_number}::bigint[], ${c.failure_key}::text[], ${c.failure_line}::text[])`.execute(
          this.h.db,
        );
      });
      return;
    }
    await this.h.inChunks(items, this.h.flavour.rowsPerInsert(7), async (chunk) => {
      await this.h.db.insertInto('flaky_failures').values(chunk.map(toRow)).execute();
    });
  }

  /**
   * Stores an upload with its results and failures. On PostgreSQL that is one statement
   * (data-modifying WITH over arrays, up to rowsPerArray results and failures; more follow in
   * statements of their own), where it was three round trips — and on a busy machine each round
   * trip waits for both processes to get a core.
   */
  async storeUpload<T>(write: UploadWrite<T>): Promise<void> {
    const size = this.h.flavour.rowsPerArray;
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
          ${f.failure_line}::text[]) AS f(test_seq, at, repo_id, pr_number, failure_key, failure_line)`.execute(
        this.h.db,
      );
      stored = size;
    }
    // The rows as made, numbered in place (a copy of each row per statement cost SQLite's ingest ~5 % more CPU).
    const numbered = <R extends object>(row: R): R & { upload_seq: number } =>
      Object.assign(row, { upload_seq: u.seq });
    const rest = <I>(items: readonly I[]) => (stored ? items.slice(stored) : items);
    await this.insertResults(rest(write.results), (item) => numbered(write.result(item)));
    await this.insertFailures(rest(write.failures), (item) => numbered(write.failure(item)));
  }

  /** The other stored uploads of this commit that detection used (not excluded): every one but `self`. */
  async uploadsOfCommit(repoId: string, sha: string, self: number): Promise<EarlierUpload[]> {
    const rows = await this.h.db
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
    await this.h.inChunks(seqs, this.h.flavour.keysPerList, async (chunk) => {
      const rows = await this.h.db
        .selectFrom('flaky_results')
        .select(['test_seq', 'outcome'])
        .where(this.h.seqIn('test_seq', chunk))
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
    await this.h.inChunks(seqs, this.h.flavour.keysPerList, async (chunk) => {
      const rows = await this.h.db
        .selectFrom('flaky_failures')
        .select('test_seq')
        .distinct()
        .where(this.h.seqIn('test_seq', chunk))
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
    await this.h.inChunks(seqs, this.h.flavour.keysPerList, async (chunk) => {
      const rows = await this.h.db
        .selectFrom('flaky_results')
        .select((eb) => [
          'test_seq',
          eb.fn.countAll<number>().as('runs'),
          eb.fn.sum<number>(eb.case().when('outcome', '!=', 'passed').then(1).else(0).end()).as('fails'),
        ])
        .where(this.h.seqIn('test_seq', chunk))
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
    if (this.h.flavour.rowsPerArray) {
      // One row per test (a test changed twice: the later change over the earlier, as statements in turn would).
      const byId = new Map<string, MonitorChange>();
      for (const { id, change } of changes) {
        const merged: MonitorChange = { ...byId.get(id) };
        for (const [key, value] of Object.entries(change))
          if (value !== undefined) Object.assign(merged, { [key]: value });
        byId.set(id, merged);
      }
      await this.h.inChunks([...byId], 100, async (chunk) => {
        const set = <K extends keyof MonitorChange>(key: K) =>
          chunk.map(([, change]) => change[key] !== undefined);
        const value = <K extends keyof MonitorChange>(key: K) =>
          chunk.map(([, change]) => change[key] ?? null);
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
          WHERE t.id = c.id`.execute(this.h.db);
      });
      return;
    }
    await this.h.inChunks(changes, this.h.flavour.keysPerList, async (chunk) => {
      for (const { id, change } of chunk) {
        await this.h.db
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
}
