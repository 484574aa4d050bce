/**
 * The GitHub writes of one token (or one App installation), one at a time and at most one per
 * `intervalMs` (GitHub's guidance for content-creating requests), ordered by what people see
 * first rather than first-in-first-out: a landing, then what shows a PR's fate (its final status,
 * closing and comment, PR after PR in the order their fates were decided), then other statuses and
 * comments, then draft PRs and clean-up. A write that a newer one with the same `key` replaces before it is sent (a status or
 * comment edit of the same PR) is dropped, as is one whose `stillWanted()` says no when its turn
 * comes (a draft PR for a run that has ended).
 */

/** Lower goes first. */
export const WritePriority = {
  /** The compare-and-swap that lands a run. */
  land: 0,
  /** The status, closing and comment of a PR whose fate is decided (merged, failed, cancelled). */
  final: 1,
  /** Statuses and comments of PRs still in the queue. */
  update: 2,
  /** Draft PRs for test branches and closing them. */
  background: 3,
} as const;
export type WritePriority = (typeof WritePriority)[keyof typeof WritePriority];

export interface WriteOptions {
  priority?: WritePriority;
  /** Writes with the same key replace each other while waiting: only the newest is sent. */
  key?: string;
  /** Asked when the write's turn comes: false drops it. */
  stillWanted?: () => boolean;
}

/** What a dropped write resolves with. */
export const DROPPED = Symbol('dropped');

interface Job {
  priority: number;
  seq: number;
  key: string | undefined;
  stillWanted: (() => boolean) | undefined;
  run: () => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

export class WriteLine {
  private readonly waiting: Job[] = [];
  private seq = 0;
  private last = 0;
  private busy = false;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  /** Writes sent and dropped (for logs and tests). */
  sent = 0;
  dropped = 0;

  constructor(private readonly intervalMs: number) {}

  /** Queues `run`; resolves with its answer, or DROPPED when superseded or no longer wanted. */
  schedule<T>(run: () => Promise<T>, options: WriteOptions = {}): Promise<T | typeof DROPPED> {
    if (this.closed) return Promise.resolve(DROPPED);
    return new Promise<T | typeof DROPPED>((resolve, reject) => {
      let seq = this.seq++;
      if (options.key !== undefined) {
        const i = this.waiting.findIndex((j) => j.key === options.key);
        if (i >= 0) {
          // The newer write takes the older one's place in the line (a write that became more urgent
          // queues from now among its new peers: fates are shown in the order they were decided).
          const [old] = this.waiting.splice(i, 1);
          if (old.priority === (options.priority ?? WritePriority.update)) seq = old.seq;
          this.dropped++;
          old.resolve(DROPPED);
        }
      }
      this.waiting.push({
        priority: options.priority ?? WritePriority.update,
        seq,
        key: options.key,
        stillWanted: options.stillWanted,
        run,
        resolve: resolve as (value: unknown) => void,
        reject,
      });
      this.pump();
    });
  }

  /** How many writes wait. */
  get length(): number {
    return this.waiting.length;
  }

  private next(): Job | undefined {
    let best = -1;
    for (let i = 0; i < this.waiting.length; i++) {
      const j = this.waiting[i];
      const b = this.waiting[best];
      if (best < 0 || j.priority < b.priority || (j.priority === b.priority && j.seq < b.seq)) best = i;
    }
    return best < 0 ? undefined : this.waiting.splice(best, 1)[0];
  }

  private pump(): void {
    if (this.busy || this.timer || this.closed || this.waiting.length === 0) return;
    const wait = this.last + this.intervalMs - Date.now();
    if (wait > 0) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.pump();
      }, wait);
      return;
    }
    const job = this.next();
    if (!job) return;
    if (job.stillWanted && !job.stillWanted()) {
      this.dropped++;
      job.resolve(DROPPED);
      this.pump();
      return;
    }
    this.busy = true;
    this.last = Date.now();
    this.sent++;
    job
      .run()
      .then(job.resolve, job.reject)
      .finally(() => {
        this.busy = false;
        // The interval counts from the start of a write; a slow answer does not add to it.
        this.pump();
      });
  }

  /** Drops what waits (the server stops). */
  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    for (const job of this.waiting.splice(0)) job.resolve(DROPPED);
  }
}
