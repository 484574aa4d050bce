import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { Piscina } from 'piscina';
import { readReports, type IngestOutcome, type IngestTask } from '../flaky/ingest.js';

/** Reads upload reports on worker threads, so parsing runs beside the database work of other uploads. */
export interface ReportReaderPool {
  read(task: IngestTask): Promise<IngestOutcome>;
  close(): Promise<void>;
}

/**
 * The worker entry next to this module once built (`build/flaky/ingest-worker.js`); undefined when
 * running from the TypeScript sources, where a worker thread could not load it.
 */
export function builtWorkerFile(): string | undefined {
  const file = fileURLToPath(new URL('../flaky/ingest-worker.js', import.meta.url));
  return existsSync(file) ? file : undefined;
}

export interface ReportReaderOptions {
  /** Worker threads; default one fewer than the cores, at least one. */
  threads?: number;
  /** Told once if the workers cannot run (e.g. the entry fails to load): reports are then read in-thread. */
  onBroken?: (error: Error) => void;
}

/**
 * A pool of worker threads running `workerFile` (piscina). Threads start with the first upload
 * and stop after a minute without one. If a worker fails outside a task, the pool is given up and
 * every upload, including the ones waiting, is read on the calling thread: slower, never stuck.
 */
export function reportReaderPool(workerFile: string, options: ReportReaderOptions = {}): ReportReaderPool {
  const threads = options.threads ?? Math.max(1, availableParallelism() - 1);
  let pool: Promise<Piscina> | undefined;
  let broken: Error | undefined;
  /** The uploads waiting on a worker: read in-thread if the pool breaks under them. */
  const waiting = new Set<() => void>();

  const start = async () => {
    const { Piscina } = await import('piscina');
    const created = new Piscina({ filename: workerFile, minThreads: 0, maxThreads: threads, idleTimeout: 60_000 });
    created.on('error', (error: Error) => {
      if (broken) return;
      broken = error;
      options.onBroken?.(error);
      for (const fallBack of waiting) fallBack();
      void created.destroy().catch(() => undefined);
    });
    return created;
  };
  return {
    async read(task) {
      if (broken) return readReports(task);
      const workers = await (pool ??= start());
      // Per-upload listeners only (a race against one long-lived promise would keep every answer).
      return new Promise<IngestOutcome>((resolve, reject) => {
        const fallBack = () => {
          if (!waiting.delete(fallBack)) return; // already answered
          try {
            resolve(readReports(task));
          } catch (error) {
            reject(error);
          }
        };
        waiting.add(fallBack);
        workers.run(task).then(
          (outcome: IngestOutcome) => {
            waiting.delete(fallBack);
            resolve(outcome);
          },
          (error: unknown) => {
            if (broken) fallBack();
            else {
              waiting.delete(fallBack);
              reject(error);
            }
          },
        );
      });
    },
    async close() {
      if (pool && !broken) await (await pool).destroy();
    },
  };
}
