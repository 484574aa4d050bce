/** Store migration 005 (token usage): changes api_tokens. */
import type { Kysely } from 'kysely';

/**
 * Tokens managed with `railyard token create|list|revoke`: a label to tell them apart and the time
 * each was last used (written at most once a minute per token).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('api_tokens').addColumn('label', 'text').execute();
  await db.schema.alterTable('api_tokens').addColumn('last_used_at', 'bigint').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('api_tokens').dropColumn('last_used_at').execute();
  await db.schema.alterTable('api_tokens').dropColumn('label').execute();
}
