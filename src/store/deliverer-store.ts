/**
 * The webhook deliverer's own connection to the server's SQLite file, for the deliverer's worker
 * thread (src/server/webhooks/deliverer-thread.ts): claims and attempt records run there, beside
 * the server's request thread, instead of on it. The schema is the server's (it migrated it).
 */
import { Kysely } from 'kysely';
import { sqliteSideDialect } from './connect.js';
import type { SchemaTables } from './schema.js';
import { WebhookStore } from './webhooks.js';

export interface DelivererStore {
  webhooks: WebhookStore;
  close(): Promise<void>;
}

export function openDelivererStore(sqliteFile: string): DelivererStore {
  const db = new Kysely<SchemaTables>({ dialect: sqliteSideDialect(sqliteFile) });
  return { webhooks: new WebhookStore(db, 'sqlite'), close: () => db.destroy() };
}
