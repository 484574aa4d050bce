import { sql, type Kysely } from 'kysely';

/**
 * The indexes of test_cases by status, pass-on-retry and override hold only the tests they find.
 * The lists ask for flaky or broken tests, for pass-on-retry still active and for overridden
 * tests — a few hundred of 100,000 — yet every new test (healthy, never retried, no override)
 * went into all three, and PostgreSQL, with the healthy tests in the status index, read the
 * whole repository through it for "healthy with pass-on-retry active" (99,000 index entries per
 * list page) whenever it lacked statistics. Partial, they skip new tests (three index writes
 * less per new test) and hold nothing a list does not want. The queries state the condition
 * literally (SQLite uses a partial index only when the query's WHERE says so).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('test_cases_status').execute();
  await db.schema
    .createIndex('test_cases_status')
    .on('test_cases')
    .columns(['repo_id', 'rate_status', 'seq'])
    .where(sql<boolean>`rate_status <> 'healthy'`)
    .execute();
  await db.schema.dropIndex('test_cases_por').execute();
  await db.schema
    .createIndex('test_cases_por')
    .on('test_cases')
    .columns(['repo_id', 'por_until'])
    .where(sql<boolean>`por_until IS NOT NULL`)
    .execute();
  await db.schema.dropIndex('test_cases_override').execute();
  await db.schema
    .createIndex('test_cases_override')
    .on('test_cases')
    .columns(['repo_id', 'override'])
    .where(sql<boolean>`override IS NOT NULL`)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const name of ['test_cases_status', 'test_cases_por', 'test_cases_override']) await db.schema.dropIndex(name).execute();
  await db.schema.createIndex('test_cases_status').on('test_cases').columns(['repo_id', 'rate_status', 'seq']).execute();
  await db.schema.createIndex('test_cases_por').on('test_cases').columns(['repo_id', 'por_until']).execute();
  await db.schema.createIndex('test_cases_override').on('test_cases').columns(['repo_id', 'override']).execute();
}
