/** Store migration 001 (core): creates organisations, api_tokens, queues, pull_requests, test_runs, impacted_targets. */
import type { Kysely } from 'kysely';

/** Organisations and their tokens, queues, pull-request entries, test runs, impacted targets. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('organisations')
    .addColumn('slug', 'text', (c) => c.primaryKey())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('api_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('org_slug', 'text', (c) => c.notNull().references('organisations.slug').onDelete('cascade'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('queues')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_slug', 'text', (c) => c.notNull().references('organisations.slug').onDelete('cascade'))
    .addColumn('repo_host', 'text', (c) => c.notNull())
    .addColumn('repo_owner', 'text', (c) => c.notNull())
    .addColumn('repo_name', 'text', (c) => c.notNull())
    .addColumn('branch', 'text', (c) => c.notNull())
    .addColumn('config', 'text', (c) => c.notNull())
    .addColumn('next_seq', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('queues_repo_branch_unique', ['org_slug', 'repo_host', 'repo_owner', 'repo_name', 'branch'])
    .execute();

  await db.schema
    .createTable('pull_requests')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('queue_id', 'text', (c) => c.notNull().references('queues.id').onDelete('cascade'))
    .addColumn('pr_number', 'bigint', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('head_sha', 'text', (c) => c.notNull())
    .addColumn('head_branch', 'text', (c) => c.notNull())
    .addColumn('state_changed_at', 'bigint', (c) => c.notNull())
    .addColumn('concluded_at', 'bigint')
    .addColumn('data', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('pull_requests_queue_seq').on('pull_requests').columns(['queue_id', 'seq']).execute();
  await db.schema.createIndex('pull_requests_queue_state').on('pull_requests').columns(['queue_id', 'state']).execute();
  await db.schema
    .createIndex('pull_requests_queue_concluded')
    .on('pull_requests')
    .columns(['queue_id', 'concluded_at'])
    .execute();
  await db.schema.createIndex('pull_requests_queue_pr').on('pull_requests').columns(['queue_id', 'pr_number']).execute();

  await db.schema
    .createTable('test_runs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('queue_id', 'text', (c) => c.notNull().references('queues.id').onDelete('cascade'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('test_runs_queue').on('test_runs').columns(['queue_id', 'started_at']).execute();

  await db.schema
    .createTable('impacted_targets')
    .addColumn('queue_id', 'text', (c) => c.notNull().references('queues.id').onDelete('cascade'))
    .addColumn('pr_number', 'bigint', (c) => c.notNull())
    .addColumn('head_sha', 'text', (c) => c.notNull())
    .addColumn('targets', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('impacted_targets_pk', ['queue_id', 'pr_number', 'head_sha'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['impacted_targets', 'test_runs', 'pull_requests', 'queues', 'api_tokens', 'organisations']) {
    await db.schema.dropTable(table).execute();
  }
}
