/** Store migration 002 (flaky): creates flaky_repositories, test_cases, test_uploads, test_results. */
import type { Kysely } from 'kysely';

/** Flaky tests: repositories with their settings, test cases, uploads and one row per test result. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('flaky_repositories')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_slug', 'text', (c) => c.notNull().references('organisations.slug').onDelete('cascade'))
    .addColumn('repo_key', 'text', (c) => c.notNull())
    .addColumn('host', 'text', (c) => c.notNull())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('settings', 'text', (c) => c.notNull())
    .addColumn('codeowners', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('flaky_repositories_key', ['org_slug', 'repo_key'])
    .execute();

  await db.schema
    .createTable('test_cases')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('repo_id', 'text', (c) => c.notNull().references('flaky_repositories.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('file', 'text')
    .addColumn('classname', 'text')
    .addColumn('parent', 'text')
    .addColumn('variant', 'text', (c) => c.notNull())
    .addColumn('first_seen_at', 'bigint', (c) => c.notNull())
    .addColumn('rate_status', 'text', (c) => c.notNull())
    .addColumn('rate_reason', 'text')
    .addColumn('rate_changed_at', 'bigint')
    .addColumn('por_since', 'bigint')
    .addColumn('por_until', 'bigint')
    .addColumn('por_reason', 'text')
    .addColumn('override', 'text')
    .addColumn('override_at', 'bigint')
    .addColumn('ticket', 'text')
    .execute();
  await db.schema.createIndex('test_cases_repo').on('test_cases').columns(['repo_id', 'id']).execute();
  // list-unhealthy-tests and the quarantine list read tests by status, not by scanning the repository.
  await db.schema.createIndex('test_cases_status').on('test_cases').columns(['repo_id', 'rate_status', 'id']).execute();
  await db.schema.createIndex('test_cases_por').on('test_cases').columns(['repo_id', 'por_until']).execute();
  await db.schema.createIndex('test_cases_override').on('test_cases').columns(['repo_id', 'override']).execute();

  await db.schema
    .createTable('test_uploads')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('repo_id', 'text', (c) => c.notNull().references('flaky_repositories.id').onDelete('cascade'))
    .addColumn('branch', 'text', (c) => c.notNull())
    .addColumn('sha', 'text', (c) => c.notNull())
    .addColumn('pr_number', 'bigint')
    .addColumn('job', 'text')
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('variant', 'text', (c) => c.notNull())
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('counts', 'text', (c) => c.notNull())
    .addColumn('excluded', 'integer', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('test_results')
    .addColumn('upload_id', 'text', (c) => c.notNull().references('test_uploads.id').onDelete('cascade'))
    .addColumn('test_id', 'text', (c) => c.notNull().references('test_cases.id').onDelete('cascade'))
    .addColumn('repo_id', 'text', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('stable', 'integer', (c) => c.notNull())
    .addColumn('excluded', 'integer', (c) => c.notNull())
    .addColumn('sha', 'text', (c) => c.notNull())
    .addColumn('pr_number', 'bigint')
    .addColumn('duration_ms', 'bigint', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('failure_key', 'text')
    .addColumn('failure_line', 'text')
    .addPrimaryKeyConstraint('test_results_pk', ['upload_id', 'test_id'])
    .execute();
  // A test's results in a time window: detection's failure rate, the 24 h / 7 d rates and the PRs
  // impacted are counted from this index alone (it covers the columns they read).
  await db.schema
    .createIndex('test_results_test_at')
    .on('test_results')
    .columns(['test_id', 'at', 'outcome', 'excluded', 'stable', 'pr_number'])
    .execute();
  // list-failing-tests walks only the failures of its window (outcome before time), and it grows at
  // its end as results arrive in time order.
  await db.schema.createIndex('test_results_outcome').on('test_results').columns(['repo_id', 'outcome', 'at', 'test_id']).execute();
  await db.schema.createIndex('test_results_repo_sha').on('test_results').columns(['repo_id', 'sha', 'test_id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['test_results', 'test_uploads', 'test_cases', 'flaky_repositories']) {
    await db.schema.dropTable(table).execute();
  }
}
