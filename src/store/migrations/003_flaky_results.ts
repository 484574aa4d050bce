/** Store migration 003 (flaky results): creates flaky_counters, flaky_results, flaky_failures; changes test_cases, test_uploads. */
import { sql, type Kysely } from 'kysely';

/**
 * Test results stored for fast ingest. 002 kept one row per result keyed by random UUID text
 * (test id, upload id) and indexed it three ways, so each upload of 500 tests dirtied ~500 index
 * pages per index. Now:
 *  - tests and uploads get integer sequence numbers, handed out in arrival order from
 *    `flaky_counters`, so the tests of one suite sit next to each other in every index;
 *  - `flaky_results` holds what detection and the rates read (no text, no skipped results) with one
 *    covering index by (test, time);
 *  - failures, a small share of the results, keep their message in `flaky_failures`, indexed for
 *    list-failing-tests (repository, time) and for a test's most common failures (test, time);
 *  - pass-on-retry finds earlier uploads of the same commit through `test_uploads (repo_id, sha)`;
 *  - lists page through tests by seq, not by id.
 * Existing results are copied over.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('flaky_counters')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('value', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema.alterTable('test_cases').addColumn('seq', 'bigint').execute();
  await sql`UPDATE test_cases SET seq = n.rn
            FROM (SELECT id, row_number() OVER (ORDER BY first_seen_at, id) AS rn FROM test_cases) AS n
            WHERE n.id = test_cases.id`.execute(db);
  // Lists page through a repository's tests in arrival order, so new tests land at the end of these
  // indexes instead of at a random place (the UUID order of 002).
  await db.schema.dropIndex('test_cases_repo').execute();
  await db.schema.dropIndex('test_cases_status').execute();
  await db.schema.createIndex('test_cases_repo').on('test_cases').columns(['repo_id', 'seq']).unique().execute();
  await db.schema.createIndex('test_cases_status').on('test_cases').columns(['repo_id', 'rate_status', 'seq']).execute();
  // The tests a monitor ever marked, usually few: an upload reads the state of only these. (No
  // index on seq alone: the database would prefer it to this one.)
  await db.schema
    .createIndex('test_cases_marked')
    .on('test_cases')
    .column('seq')
    .where(sql<boolean>`(rate_status <> 'healthy' OR por_until IS NOT NULL)`)
    .execute();

  await db.schema.alterTable('test_uploads').addColumn('seq', 'bigint').execute();
  await db.schema.alterTable('test_uploads').addColumn('first_at', 'bigint').execute();
  await db.schema.alterTable('test_uploads').addColumn('last_at', 'bigint').execute();
  await sql`UPDATE test_uploads SET seq = n.rn
            FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) AS rn FROM test_uploads) AS n
            WHERE n.id = test_uploads.id`.execute(db);
  await sql`UPDATE test_uploads SET first_at = r.first_at, last_at = r.last_at
            FROM (SELECT upload_id, min(at) AS first_at, max(at) AS last_at FROM test_results GROUP BY upload_id) AS r
            WHERE r.upload_id = test_uploads.id`.execute(db);
  await sql`UPDATE test_uploads SET first_at = started_at, last_at = started_at WHERE first_at IS NULL`.execute(db);
  await db.schema.createIndex('test_uploads_seq').on('test_uploads').column('seq').unique().execute();
  await db.schema.createIndex('test_uploads_sha').on('test_uploads').columns(['repo_id', 'sha']).execute();

  await sql`INSERT INTO flaky_counters (name, value)
            SELECT 'test', coalesce(max(seq), 0) FROM test_cases
            UNION ALL SELECT 'upload', coalesce(max(seq), 0) FROM test_uploads`.execute(db);

  await db.schema
    .createTable('flaky_results')
    .addColumn('test_seq', 'bigint', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('upload_seq', 'bigint', (c) => c.notNull())
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('stable', 'integer', (c) => c.notNull())
    .addColumn('excluded', 'integer', (c) => c.notNull())
    .addColumn('duration_ms', 'bigint', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .execute();
  // Detection's failure rate, the 24 h / 7 d rates and pass-on-retry read this index alone.
  await db.schema
    .createIndex('flaky_results_test_at')
    .on('flaky_results')
    .columns(['test_seq', 'at', 'outcome', 'excluded', 'stable', 'upload_seq'])
    .execute();

  await db.schema
    .createTable('flaky_failures')
    .addColumn('test_seq', 'bigint', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('upload_seq', 'bigint', (c) => c.notNull())
    .addColumn('repo_id', 'text', (c) => c.notNull())
    .addColumn('pr_number', 'bigint')
    .addColumn('failure_key', 'text')
    .addColumn('failure_line', 'text')
    .execute();
  await db.schema.createIndex('flaky_failures_repo_at').on('flaky_failures').columns(['repo_id', 'at', 'test_seq']).execute();
  await db.schema.createIndex('flaky_failures_test_at').on('flaky_failures').columns(['test_seq', 'at']).execute();

  await sql`INSERT INTO flaky_results (test_seq, at, upload_seq, outcome, stable, excluded, duration_ms, attempts)
            SELECT c.seq, r.at, u.seq, r.outcome, r.stable, r.excluded, r.duration_ms, r.attempts
            FROM test_results r JOIN test_cases c ON c.id = r.test_id JOIN test_uploads u ON u.id = r.upload_id
            WHERE r.outcome <> 'skipped'
            ORDER BY u.seq, c.seq`.execute(db);
  await sql`INSERT INTO flaky_failures (test_seq, at, upload_seq, repo_id, pr_number, failure_key, failure_line)
            SELECT c.seq, r.at, u.seq, r.repo_id, r.pr_number, r.failure_key, r.failure_line
            FROM test_results r JOIN test_cases c ON c.id = r.test_id JOIN test_uploads u ON u.id = r.upload_id
            WHERE r.outcome IN ('failed', 'flaky')
            ORDER BY u.seq, c.seq`.execute(db);
  await db.schema.dropTable('test_results').execute();
}

export async function down(): Promise<void> {
  throw new Error('003_flaky_results cannot be undone: the old results table is gone');
}
