/** Store migration 006 (replicas): creates queue_leases; changes queues. */
import type { Kysely } from 'kysely';

/**
 * Several replicas on one database: every queue carries a version (bumped by each committed
 * step, so a replica can tell its copy is stale), and a lease row names the replica that drives
 * it, with a fencing number that grows each time the lease changes hands.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('queues')
    .addColumn('version', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createTable('queue_leases')
    .addColumn('queue_id', 'text', (c) => c.primaryKey().references('queues.id').onDelete('cascade'))
    .addColumn('holder', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('fence', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('expires_at', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('queue_leases').execute();
  await db.schema.alterTable('queues').dropColumn('version').execute();
}
