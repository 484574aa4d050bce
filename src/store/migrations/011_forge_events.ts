/** Store migration 011 (forge events): creates forge_events. */
import type { Kysely } from 'kysely';

/**
 * What a forge told the server that it has acted on already, so nothing acts twice — also after a
 * restart, and on another replica: webhook deliveries by id, command comments by id. One row per
 * (forge, repository, kind, key), kept bounded per repository and kind (the oldest go first).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('forge_events')
    .addColumn('forge', 'text', (c) => c.notNull())
    .addColumn('repo_key', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('forge_events_pk', ['forge', 'repo_key', 'kind', 'key'])
    .execute();
  await db.schema.createIndex('forge_events_age').on('forge_events').columns(['forge', 'repo_key', 'kind', 'at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('forge_events').execute();
}
