/** Store migration 015 (webhook lines): adds webhook_deliveries.head and the index of due line heads. */
import { sql, type Kysely } from 'kysely';

/**
 * Deliveries of one endpoint and order key (one pull request, one test) form a line that goes out
 * in id order. Before, the deliverer found the first of each line by scanning every due pending
 * delivery and asking whether an older one of its line was still pending: with a backlog behind a
 * receiver outage that scan grew with the backlog and ran several times a second. Now the first
 * pending delivery of each line is marked (`head = 1`), written when it is inserted or when the
 * one before it finishes, and a claim reads only line heads, per endpoint, in due order, from
 * `webhook_deliveries_heads`: its cost no longer depends on how many deliveries wait behind them.
 * The old due index (every pending delivery by next_at) has no reader any more and is dropped.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('webhook_deliveries').addColumn('head', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await sql`UPDATE webhook_deliveries SET head = 1 WHERE id IN (
      SELECT min(id) FROM webhook_deliveries WHERE state = 'pending' GROUP BY endpoint_id, order_key)`.execute(db);
  await db.schema
    .createIndex('webhook_deliveries_heads')
    .on('webhook_deliveries')
    .columns(['endpoint_id', 'next_at', 'id'])
    .where(sql<boolean>`state = 'pending' AND head = 1`)
    .execute();
  await db.schema.dropIndex('webhook_deliveries_due').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('webhook_deliveries_due')
    .on('webhook_deliveries')
    .columns(['next_at', 'id'])
    .where(sql.ref('state'), '=', 'pending')
    .execute();
  await db.schema.dropIndex('webhook_deliveries_heads').execute();
  await db.schema.alterTable('webhook_deliveries').dropColumn('head').execute();
}
