/** Reading upload reports on worker threads (piscina), beside the database work of other uploads. */
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { Piscina } from 'piscina';
import { readReports, type IngestOutcome, type IngestResult, type IngestTask, type PackedOutcome } from '../../flaky/ingest.js';
import { Slices } from './slices.js';

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
  const file = fileURLToPath(new URL('../../flaky/ingest-worker.js', import.meta.url));
  return existsSync(file) ? file : undefined;
}

export interface ReportReaderOptions {
  /** Worker threads; default one fewer than the cores, at least two (so a second organisation always finds one). */
  threads?: number;
  /** Told once if the workers cannot run (e.g. the entry fails to load): reports are then read in-thread. */
  onBroken?: (error: Error) => void;
}

interface Job {
  task: IngestTask;
  resolve: (outcome: IngestOutcome) => void;
  reject: (error: unknown) => void;
}

/** The results of a packed outcome, parsed a piece at a time with other work between (packOutcome). */
async function unpack(packed: PackedOutcome): Promise<IngestOutcome> {
  if (!packed.ok) return packed;
  const slices = new Slices();
  const results: IngestResult[] = [];
  for (const piece of packed.pieces) {
    for (const result of JSON.parse(piece) as IngestResult[]) results.push(result);
    await slices.breathe();
  }
  return { ok: true, results };
}

/**
 * A pool of worker threads running `workerFile` (piscina). Threads start with the first upload
 * and stop after a minute without one. If a worker fails outside a task, the pool is given up and
 * every upload, including the ones waiting, is read on the calling thread: slower, never stuck.
 *
 * Fair between organisations: uploads wait in one queue per organisation, served round-robin, and
 * an organisation has at most `threads - 1` uploads on the workers (one with two threads): one
 * organisation's huge upload, or many, never makes another's wait for them — a free worker is
 * always left for the next organisation.
 */
export function reportReaderPool(workerFile: string, options: ReportReaderOptions = {}): ReportReaderPool {
  const threads = options.threads ?? Math.max(2, availableParallelism() - 1);
  const perOrg = Math.max(1, threads - 1);
  let pool: Promise<Piscina> | undefined;
  let broken: Error | undefined;
  /** Waiting uploads by organisation; the map's order is the round-robin order. */
  const waiting = new Map<string, Job[]>();
  /** Uploads on the workers, by organisation. */
  const running = new Map<string, number>();
  let runningTotal = 0;

  const readHere = (job: Job) => {
    try {
      job.resolve(readReports(job.task));
    } catch (error) {
      job.reject(error);
    }
  };
  /** Every waiting upload, read in-thread: the pool broke under them. */
  const fallBackAll = () => {
    for (const jobs of waiting.values()) for (const job of jobs) readHere(job);
    waiting.clear();
  };

  const start = async () => {
    const { Piscina } = await import('piscina');
    const created = new Piscina({ filename: workerFile, minThreads: 0, maxThreads: threads, idleTimeout: 60_000 });
    created.on('error', (error: Error) => {
      if (broken) return;
      broken = error;
      options.onBroken?.(error);
      fallBackAll();
      void created.destroy().catch(() => undefined);
    });
    return created;
  };

  const run = (workers: Piscina, job: Job) => {
    const { org } = job.task;
    running.set(org, (running.get(org) ?? 0) + 1);
    runningTotal++;
    let done = false;
    const finish = () => {
      if (done) return false;
      done = true;
      runningTotal--;
      const left = (running.get(org) ?? 1) - 1;
      if (left) running.set(org, left);
      else running.delete(org);
      pump(workers);
      return true;
    };
    workers.run(job.task).then(
      (packed: PackedOutcome) => {
        if (finish()) unpack(packed).then(job.resolve, job.reject);
      },
      (error: unknown) => {
        if (!finish()) return;
        if (broken) readHere(job);
        else job.reject(error);
      },
    );
  };

  /** Starts waiting uploads while workers are free: the next organisation in turn that is under its share. */
  const pump = (workers: Piscina) => {
    if (broken) return fallBackAll();
    while (runningTotal < threads) {
      let next: string | undefined;
      for (const org of waiting.keys()) {
        if ((running.get(org) ?? 0) < perOrg) {
          next = org;
          break;
        }
      }
      if (next === undefined) return;
      const jobs = waiting.get(next)!;
      const job = jobs.shift()!;
      // Served: to the back of the round-robin order (or out of it when it has no more).
      waiting.delete(next);
      if (jobs.length) waiting.set(next, jobs);
      run(workers, job);
    }
  };

  return {
    async read(task) {
      if (broken) return readReports(task);
      const workers = await (pool ??= start());
      if (broken) return readReports(task);
      return new Promise<IngestOutcome>((resolve, reject) => {
        const jobs = waiting.get(task.org);
        if (jobs) jobs.push({ task, resolve, reject });
        else waiting.set(task.org, [{ task, resolve, reject }]);
        pump(workers);
      });
    },
    async close() {
      if (pool && !broken) await (await pool).destroy();
    },
  };
}
