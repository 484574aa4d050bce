/** Store migration 021 (quarantine until): a quarantine override gets an end, an owner and a reason. */
import type { Kysely } from 'kysely';

/**
 * `override_until`: when the override lapses by itself (epoch ms; NULL: never); from then the
 * repository's settings decide, as if it were AUTO. `override_owner`: who set it (the label of the
 * token of the request). `override_reason`: why, as they said. Overrides made before have NULL in
 * all three: they keep doing what they did.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('test_cases').addColumn('override_until', 'bigint').execute();
  await db.schema.alterTable('test_cases').addColumn('override_owner', 'text').execute();
  await db.schema.alterTable('test_cases').addColumn('override_reason', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('test_cases').dropColumn('override_reason').execute();
  await db.schema.alterTable('test_cases').dropColumn('override_owner').execute();
  await db.schema.alterTable('test_cases').dropColumn('override_until').execute();
}
