/**
 * The webhook deliverer's worker thread (entry of deliverer-thread.ts; SQLite only): opens its own
 * connection to the server's database file and runs the Deliverer there — claims, signing, the
 * HTTP attempts and their records — so none of it takes the request thread. The server kicks it
 * when it writes to the outbox; its log lines are sent back to the server's logger.
 */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { openDelivererStore } from '../../store/index.js';
import { Deliverer, type DelivererLog, type WebhookOptions } from './deliverer.js';

export type ToServer = { ready: true } | { closed: true } | { log: keyof DelivererLog; obj: object; msg: string };
export type ToDeliverer = 'kick' | 'close';

/**
 * This thread yields the CPU to the request thread: its work can wait milliseconds, a request's
 * should not (on 2 cores its attempts, signing and records competed with the requests of
 * bench/webhooks.ts phase B). Linux keeps a nice value per thread, and /proc/thread-self names
 * this thread's id; elsewhere the thread keeps the server's priority.
 */
const DELIVERER_NICE = 10;
try {
  const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
  if (Number.isInteger(tid) && tid > 0) setPriority(tid, DELIVERER_NICE);
} catch {
  // not Linux, or not allowed: same priority as the request thread
}

const port = parentPort!;
const { sqliteFile, options, writeLock } = workerData as { sqliteFile: string; options: WebhookOptions; writeLock?: SharedArrayBuffer };
const tell = (message: ToServer) => port.postMessage(message);

function logTo(level: keyof DelivererLog): (obj: object, msg: string) => void {
  return (obj, msg) => {
    try {
      tell({ log: level, obj, msg });
    } catch {
      // Not cloneable (a foreign error object): its text still says what happened.
      tell({ log: level, obj: JSON.parse(JSON.stringify(obj, (_k, v: unknown) => (v instanceof Error ? { message: v.message, code: (v as NodeJS.ErrnoException).code } : v))) as object, msg });
    }
  };
}

// The server's write lock for the file: its transactions and this thread's wake each other (write-lock.ts).
const store = openDelivererStore(sqliteFile, writeLock);
const deliverer = new Deliverer(store.webhooks, options, { info: logTo('info'), warn: logTo('warn'), error: logTo('error') });
let closing: Promise<void> | undefined;
port.on('message', (m: ToDeliverer) => {
  if (m === 'kick') deliverer.kick();
  else if (m === 'close')
    closing ??= (async () => {
      // In-flight attempts finish (each within its timeout) and are recorded before the connection closes.
      await deliverer.close();
      await store.close();
      tell({ closed: true });
      port.close();
    })();
});
await deliverer.start();
tell({ ready: true });
