/** Store migration 012 (queue history): changes queues. */
import type { Kysely } from 'kysely';

/**
 * A deleted queue keeps its row (marked `deleted_at`), its pull requests, test runs and their
 * history. Creating the queue again for the same repository and branch brings that row back, so
 * `mq history` still tells what happened before, and a pull request that merged through the old
 * queue is still merged for the new one (it can never be submitted again because of a re-create).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('queues').addColumn('deleted_at', 'bigint').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('queues').dropColumn('deleted_at').execute();
}
