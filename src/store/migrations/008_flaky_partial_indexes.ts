/** Store migration 008 (flaky partial indexes): test_cases' status, pass-on-retry and override indexes hold only the tests the lists ask for. */
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
const PARTIAL: [name: string, columns: string[], only: string][] = [
  ['test_cases_status', ['repo_id', 'rate_status', 'seq'], "rate_status <> 'healthy'"],
  ['test_cases_por', ['repo_id', 'por_until'], 'por_until IS NOT NULL'],
  ['test_cases_override', ['repo_id', 'override'], 'override IS NOT NULL'],
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const [name, columns, only] of PARTIAL) {
    await db.schema.dropIndex(name).execute();
    await db.schema.createIndex(name).on('test_cases').columns(columns).where(sql.raw<boolean>(only)).execute();
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const [name, columns] of PARTIAL) {
    await db.schema.dropIndex(name).execute();
    await db.schema.createIndex(name).on('test_cases').columns(columns).execute();
  }
}
