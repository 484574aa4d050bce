/** Store migration 007 (pr history): creates pr_transitions. */
import { sql, type Kysely } from 'kysely';

/**
 * The history of every pull request: one row per state change, with its time, reason and the test
 * run of the entry at that moment, and for failures a detail for people (the conflicting PR and
 * files, what is wrong in railyard.json, the checks that failed). `seq` orders the rows (several changes may share a millisecond).
 * Entries that exist already start their history with the state they are in now (reason unknown).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('pr_transitions')
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('queue_id', 'text', (c) => c.notNull())
    .addColumn('entry_id', 'text', (c) => c.notNull())
    .addColumn('pr_number', 'bigint', (c) => c.notNull())
    .addColumn('from_state', 'text')
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('test_run_id', 'text')
    .addColumn('detail', 'text')
    .addColumn('at', 'bigint', (c) => c.notNull())
    // Numbered per queue: replicas on PostgreSQL number a queue's rows under its row lock.
    .addPrimaryKeyConstraint('pr_transitions_pk', ['queue_id', 'seq'])
    .execute();
  await db.schema
    .createIndex('pr_transitions_pr')
    .on('pr_transitions')
    .columns(['queue_id', 'pr_number', 'seq'])
    .execute();
  await sql`INSERT INTO pr_transitions (seq, queue_id, entry_id, pr_number, from_state, state, reason, test_run_id, at)
            SELECT row_number() OVER (ORDER BY queue_id, seq), queue_id, id, pr_number, NULL, state, NULL, NULL, state_changed_at
            FROM pull_requests`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('pr_transitions').execute();
}
