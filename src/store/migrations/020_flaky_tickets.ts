/** Store migration 020 (flaky tickets): creates flaky_tickets, the ticket each unhealthy test has in a tracker. */
import type { Kysely } from 'kysely';

/**
 * One row per test that ever had a ticket (docs/flaky-tests.md, "Tickets"): the tracker and
 * project it lives in, its key and web address, and what Railyard last knew of it. `state` is
 * `creating` from just before the tracker is asked to open it until its answer is stored: a row
 * found in that state after a crash means the ticket may exist already, so it is looked for before
 * another is opened. Tickets are sent through the webhook outbox (a delivery line per repository,
 * `webhook_endpoints.kind = 'ticket'`), so this table holds no queue of its own.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('flaky_tickets')
    .addColumn('repo_id', 'text', (c) => c.notNull())
    .addColumn('test_id', 'text', (c) => c.notNull())
    .addColumn('system', 'text', (c) => c.notNull())
    .addColumn('project', 'text', (c) => c.notNull())
    .addColumn('ticket_key', 'text')
    .addColumn('url', 'text')
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('creating_at', 'bigint')
    .addColumn('opened_at', 'bigint')
    .addColumn('closed_at', 'bigint')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('flaky_tickets_pk', ['repo_id', 'test_id'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('flaky_tickets').execute();
}
