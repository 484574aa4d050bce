/** Store migration 010 (risk facts): creates risk_facts. */
import type { Kysely } from 'kysely';

/**
 * What the risk model knows of each submission (the server's `riskEstimate`): the PR's
 * author, the paths it touches (or its impacted targets) and its size, recorded when it is
 * submitted. Its outcome is not stored twice: the model pairs these rows with the submission's
 * final state in `pr_transitions` (007).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('risk_facts')
    .addColumn('queue_id', 'text', (c) => c.notNull())
    .addColumn('entry_id', 'text', (c) => c.notNull())
    .addColumn('pr_number', 'bigint', (c) => c.notNull())
    .addColumn('author', 'text', (c) => c.notNull())
    // JSON array of strings (bounded by the writer).
    .addColumn('paths', 'text', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('risk_facts_pk', ['queue_id', 'entry_id'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('risk_facts').execute();
}
