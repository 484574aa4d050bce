/**
 * Runs the webhook deliverer on a worker thread with its own SQLite connection
 * (deliverer-worker.ts), for a server on an SQLite file: the deliverer's database work and HTTP
 * sending then leave the request thread alone (a long receiver outage saturated it).
 * Outbox writes kick it through a message. Its transactions and the server's take one write lock
 * (src/store/write-lock.ts), so each waits for the other's commit without SQLite's busy-handler sleeps. Should the thread fail, delivery falls back to the
 * request thread (slower, never stuck): claims on SQLite live in the deliverer's memory, so the
 * attempts the thread had in flight are simply sent again, with the same webhook-id.
 * On PostgreSQL, or without the built worker file (running from sources), the server runs the
 * Deliverer itself.
 *
 * With an empty outbox the thread starts with the first write to it, not with the server: it loads
 * its own copy of the store's modules and opens a connection (~250 ms of CPU), which a server
 * without webhook endpoints — most, and every test server — never needs.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { sharedWriteLock, type WebhookStore } from '../../store/index.js';
import { Deliverer, type DelivererLog, type WebhookOptions } from './deliverer.js';
import type { ToDeliverer, ToServer } from './deliverer-worker.js';

/** What the server starts and closes: the Deliverer itself or its thread. */
export interface DelivererHandle {
  start(): Promise<void>;
  close(): Promise<void>;
}

/** The built worker entry next to this module; undefined when running from the TypeScript sources. */
export function delivererWorkerFile(): string | undefined {
  const file = fileURLToPath(new URL('./deliverer-worker.js', import.meta.url));
  return existsSync(file) ? file : undefined;
}

export class DelivererThread implements DelivererHandle {
  private worker: Worker | undefined;
  private fallback: Deliverer | undefined;
  private closed = false;
  private readonly onWritten = () => this.send('kick');
  /** The thread's start when the first outbox write asked for it. */
  private starting: Promise<void> | undefined;
  private readonly onFirstWrite = () => {
    this.store.signals.off('written', this.onFirstWrite);
    if (this.closed) return;
    this.starting = this.startThread().catch((error: unknown) =>
      this.log.error({ err: error }, 'webhook deliverer could not start'),
    );
  };

  constructor(
    private readonly workerFile: string,
    private readonly sqliteFile: string,
    private readonly store: WebhookStore,
    private readonly options: WebhookOptions,
    private readonly log: DelivererLog,
  ) {}

  async start(): Promise<void> {
    if (await this.store.outboxEmpty()) {
      // Its Deliverer looks at the outbox when it starts: what was written meanwhile goes out then.
      this.store.signals.on('written', this.onFirstWrite);
      return;
    }
    await this.startThread();
  }

  private async startThread(): Promise<void> {
    // The thread's transactions and the server's share one write lock for the file (write-lock.ts).
    const lock = sharedWriteLock(this.sqliteFile);
    const worker = new Worker(this.workerFile, { workerData: { sqliteFile: this.sqliteFile, options: this.options, writeLock: lock.buffer } });
    this.worker = worker;
    const threadId = worker.threadId;
    // A thread that died inside a transaction (terminated, crashed) must not leave the lock held:
    // the server's next transaction would wait for it until its timeout, every time.
    worker.once('exit', () => lock.releaseIfHeldBy(threadId));
    const ready = new Promise<void>((resolve, reject) => {
      worker.on('message', (m: ToServer) => {
        if ('ready' in m) resolve();
        else if ('log' in m) this.log[m.log](m.obj, m.msg);
      });
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`the deliverer thread exited (code ${code}) before it started`)));
    });
    worker.on('error', (error) => void this.fallBack(error));
    worker.on('exit', (code) => {
      if (!this.closed && this.worker === worker) void this.fallBack(new Error(`the deliverer thread exited (code ${code})`));
    });
    this.store.signals.on('written', this.onWritten);
    await ready.then(
      () => this.log.info({}, 'webhook deliverer: on its own thread with its own database connection'),
      (error: unknown) => this.fallBack(error),
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    this.store.signals.off('written', this.onFirstWrite);
    await this.starting;
    this.store.signals.off('written', this.onWritten);
    const worker = this.worker;
    this.worker = undefined;
    if (worker) {
      const exited = new Promise<void>((done) => worker.once('exit', () => done()));
      try {
        worker.postMessage('close' satisfies ToDeliverer);
      } catch {
        // already gone
      }
      await exited;
    }
    await this.fallback?.close();
  }

  private send(message: ToDeliverer): void {
    try {
      this.worker?.postMessage(message);
    } catch {
      // the thread is going away: its exit starts the fallback, which looks at the outbox itself
    }
  }

  /** The thread failed: deliver on this thread from now on. */
  private async fallBack(error: unknown): Promise<void> {
    if (this.closed || this.fallback) return;
    const worker = this.worker;
    this.worker = undefined;
    this.store.signals.off('written', this.onWritten);
    this.log.error({ err: error }, 'webhook deliverer thread failed; delivering on the server thread');
    void worker?.terminate();
    this.fallback = new Deliverer(this.store, this.options, this.log);
    await this.fallback.start();
  }
}
