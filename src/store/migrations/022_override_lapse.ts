/** Store migration 022 (override lapse): which quarantine override's end was announced, and an index of those not yet announced. */
import { sql, type Kysely } from 'kysely';

/**
 * `override_lapse_sent`: the end (`override_until`) whose lapse the server announced with a
 * `test_case.quarantining_setting_changed` event (src/server/flaky/lapses.ts); NULL while the
 * override in force has not lapsed, or lapsed without being announced yet. Setting an override
 * makes it NULL again, so a new end is announced when it comes. Overrides that lapsed before this
 * migration were never announced: the first sweep announces them.
 *
 * `test_cases_override_lapse` holds only the overrides with an end not yet announced (a few of
 * the repository's tests), by end: the sweep reads those whose end has come. The queries state
 * its condition literally (SQLite uses a partial index only when the query's WHERE says so).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('test_cases').addColumn('override_lapse_sent', 'bigint').execute();
  await db.schema
    .createIndex('test_cases_override_lapse')
    .on('test_cases')
    .columns(['override_until'])
    .where(sql.raw<boolean>('override_until IS NOT NULL AND override_lapse_sent IS NULL'))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('test_cases_override_lapse').execute();
  await db.schema.alterTable('test_cases').dropColumn('override_lapse_sent').execute();
}
