/** Store migration 019 (doctor): when a queue's state last changed, so a queue paused for long can be named. */
import { sql, type Kysely } from 'kysely';

/**
 * `queues.state_since`: when the queue entered its current state (running, paused, draining…),
 * written by the step that changes the state. Queues stored before take their last change
 * (`updated_at`) as the best guess.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('queues').addColumn('state_since', 'bigint').execute();
  await sql`UPDATE queues SET state_since = updated_at`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('queues').dropColumn('state_since').execute();
}
