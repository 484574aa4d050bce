/** Store migration 016 (token permissions): adds api_tokens.permissions. */
import type { Kysely } from 'kysely';

/**
 * What each token may change (`railyard token create --permission`): the permission names joined
 * by commas, '' for a read-only token. Tokens made before have NULL, which counts as every
 * permission: they keep doing what they did.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('api_tokens').addColumn('permissions', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('api_tokens').dropColumn('permissions').execute();
}
