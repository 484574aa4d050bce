/**
 * The GitHub writes of one token (or one App installation), one at a time (never two in flight),
 * within GitHub's documented secondary limits for content-creating requests — at most 80 a minute
 * and 500 an hour (sliding windows) — and while GitHub asked us to wait (`pausedUntil`: a
 * `Retry-After` or `x-ratelimit-reset`) none goes out; `intervalMs` is an extra floor between the
 * starts of two writes (default 0). Ordered by what people see first rather than
 * first-in-first-out: a landing, then what shows a PR's fate (its final status and closing, PR
 * after PR in the order their fates were decided), then comments of decided PRs, then other
 * statuses and comments, then draft PRs and clean-up. A write that a newer one with the same `key` replaces before it is sent (a status or
 * comment edit of the same PR) is dropped, as is one whose `stillWanted()` says no when its turn
 * comes (a draft PR for a run that has ended); a write may wait until a time (`notBefore`: a
 * progress edit, so that the next change replaces it instead of following it).
 */

/** Lower goes first. */
export const WritePriority = {
  /** The compare-and-swap that lands a run. */
  land: 0,
  /**
   * What shows the fate of a decided PR (merged, failed, cancelled): its status, its closing and
   * its comment, in line, so that each PR is shown final whole before the next one's writes.
   */
  final: 1,
  /** The status and comment of a PR that waits on its author (not ready); answers to commands. */
  finalComment: 2,
  /** Statuses and comments of PRs still in the queue. */
  update: 3,
  /** Draft PRs for test branches and closing them. */
  background: 4,
} as const;
export type WritePriority = (typeof WritePriority)[keyof typeof WritePriority];

export interface WriteOptions {
  priority?: WritePriority;
  /** Writes with the same key replace each other while waiting: only the newest is sent. */
  key?: string;
  /** Asked when the write's turn comes: false drops it. */
  stillWanted?: () => boolean;
  /**
   * Not sent before this time (ms since the epoch): a progress edit waits, and a newer write with
   * the same key replaces it meanwhile (a PR's comment changes its progress at most so often).
   */
  notBefore?: number;
}

// The windows are counted a little longer than GitHub's: its clock and ours see a request at
// slightly different times.
const MINUTE = 61_000;
const HOUR = 3_601_000;
/**
 * The share of the budget (a minute's, an hour's) each priority may use: landings and what shows
 * a fate (or asks its author to act) all of it; progress updates (replaced while they wait, so
 * they coalesce) at most 30 % of it, draft PRs 15 %: a burst of landings (about 4 writes each) finds budget left
 * for what people wait to see (measured: with half for updates, a 12-PR burst filled the minute
 * and held the last PR's comment 45 s).
 */
const SHARE: Record<number, number> = { 0: 1, 1: 1, 2: 1, 3: 0.3, 4: 0.15 };

/** What a dropped write resolves with. */
export const DROPPED = Symbol('dropped');

interface Job {
  priority: number;
  seq: number;
  key: string | undefined;
  stillWanted: (() => boolean) | undefined;
  notBefore: number;
  run: () => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** GitHub's documented secondary limits on content-creating requests (per token or installation). */
export interface WriteBudget {
  perMinute: number;
  perHour: number;
}
export const GITHUB_WRITE_BUDGET: WriteBudget = { perMinute: 80, perHour: 500 };

export interface WriteLineOptions {
  /** Floor between the starts of two writes (ms; `--github-write-interval-ms`). */
  intervalMs?: number;
  budget?: WriteBudget;
  /** Until when GitHub asked us to wait (ms since the epoch; a rate limit's Retry-After or reset). */
  pausedUntil?: () => number;
}

export class WriteLine {
  private readonly waiting: Job[] = [];
  /** Start times of the writes sent in the last hour, oldest first. */
  private readonly starts: Array<{ at: number; priority: number }> = [];
  private readonly intervalMs: number;
  private readonly budget: WriteBudget;
  private readonly pausedUntil: () => number;
  private seq = 0;
  private last = 0;
  private busy = false;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  /** Writes sent and dropped (for logs and tests). */
  sent = 0;
  dropped = 0;

  constructor(options: WriteLineOptions | number = {}) {
    const o = typeof options === 'number' ? { intervalMs: options } : options;
    this.intervalMs = o.intervalMs ?? 0;
    this.budget = o.budget ?? GITHUB_WRITE_BUDGET;
    this.pausedUntil = o.pausedUntil ?? (() => 0);
  }

  /**
   * When the next write of `priority` may start: after the floor, not while GitHub asked us to
   * wait, and within both windows: every write counts against the whole budget, and the less
   * visible writes (this priority or lower) may fill only their share of it (`SHARE`), so a
   * landing and the fates it decides always find budget left.
   */
  private nextStart(now: number, priority: number): number {
    while (this.starts.length && this.starts[0].at <= now - HOUR) this.starts.shift();
    let at = Math.max(this.last + this.intervalMs, this.pausedUntil());
    const within = (list: number[], limit: number, window: number) => {
      if (list.length >= limit) at = Math.max(at, list[list.length - limit] + window);
    };
    const hour = this.starts.map((s) => s.at);
    const minute = hour.filter((t) => t > now - MINUTE);
    within(hour, this.budget.perHour, HOUR);
    within(minute, this.budget.perMinute, MINUTE);
    const share = SHARE[priority] ?? 1;
    if (share < 1) {
      const mine = this.starts.filter((s) => s.priority >= priority).map((s) => s.at);
      within(mine, Math.max(1, Math.floor(this.budget.perHour * share)), HOUR);
      within(
        mine.filter((t) => t > now - MINUTE),
        Math.max(1, Math.floor(this.budget.perMinute * share)),
        MINUTE,
      );
    }
    return at;
  }

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
        notBefore: options.notBefore ?? 0,
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

  /** The index of the write to send next among those due: by priority, then in line (-1: none due). */
  private best(now: number): number {
    let best = -1;
    for (let i = 0; i < this.waiting.length; i++) {
      const j = this.waiting[i];
      if (j.notBefore > now) continue;
      const b = this.waiting[best];
      if (best < 0 || j.priority < b.priority || (j.priority === b.priority && j.seq < b.seq)) best = i;
    }
    return best;
  }

  private pump(): void {
    if (this.busy || this.closed || this.waiting.length === 0) return;
    // A newer, more urgent write may go before what the timer waited for.
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const now = Date.now();
    const i = this.best(now);
    // Nothing due yet: wake when the first held write is.
    const wait =
      i < 0
        ? Math.min(...this.waiting.map((j) => j.notBefore)) - now
        : this.nextStart(now, this.waiting[i].priority) - now;
    if (wait > 0) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.pump();
      }, wait);
      return;
    }
    const job = this.waiting.splice(i, 1)[0];
    if (job.stillWanted && !job.stillWanted()) {
      this.dropped++;
      job.resolve(DROPPED);
      this.pump();
      return;
    }
    this.busy = true;
    this.last = Date.now();
    this.starts.push({ at: this.last, priority: job.priority });
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
