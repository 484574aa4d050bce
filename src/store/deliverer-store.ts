/**
 * The webhook deliverer's own connection to the server's SQLite file, for the deliverer's worker
 * thread (src/server/webhooks/deliverer-thread.ts): claims and attempt records run there, beside
 * the server's request thread, instead of on it. The schema is the server's (it migrated it).
 * Both connections take the server's write lock for the file (write-lock.ts) around their
 * transactions: the thread receives its SharedArrayBuffer.
 */
import { Kysely } from 'kysely';
import { sqliteSideDialect } from './connect.js';
import type { SchemaTables } from './schema.js';
import { WebhookStore } from './webhooks.js';
import { WriteLock } from './write-lock.js';

export { sharedWriteLock, WriteLock } from './write-lock.js';

export interface DelivererStore {
  webhooks: WebhookStore;
  close(): Promise<void>;
}

/** `writeLock`: the buffer of the server's sharedWriteLock(sqliteFile), passed to the thread. */
export function openDelivererStore(sqliteFile: string, writeLock?: SharedArrayBuffer): DelivererStore {
  const db = new Kysely<SchemaTables>({ dialect: sqliteSideDialect(sqliteFile, 5000, writeLock && new WriteLock(writeLock)) });
  return { webhooks: new WebhookStore(db, 'sqlite'), close: () => db.destroy() };
}
