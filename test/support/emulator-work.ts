/**
 * The background work of an emulator (GitHub's, GitLab's): promises it started (deliveries, CI,
 * mergeability checks) that idle() waits for, timers that fire later and are ended by close,
 * whether it is closed, and the per-repository lock that serialises git work on one repository.
 * Each emulator's world (its state class) extends it; its git is in test/support/emulator-git/.
 */
export abstract class EmulatorWork {
  readonly background = new Set<Promise<unknown>>();
  /** Pending timers and the resolver of the promise idle() waits on for each. */
  readonly timers = new Map<NodeJS.Timeout, () => void>();
  closed = false;

  /** Counts `p` as work in progress until it settles. */
  track<T>(p: Promise<T>): Promise<T> {
    this.background.add(p);
    const done = () => this.background.delete(p);
    p.then(done, done);
    return p;
  }

  /** Runs `fn` once the work queued on `holder`'s lock is done; the next waits for it (failures included). */
  locked<T>(holder: { lock: Promise<unknown> }, fn: () => Promise<T>): Promise<T> {
    const run = holder.lock.then(fn, fn);
    holder.lock = run.catch(() => undefined);
    return run;
  }

  /** Runs `fn` after `ms` unless the emulator closed meanwhile (idle() waits for it). */
  later(ms: number, fn: () => void): void {
    if (this.closed) return;
    let done!: () => void;
    this.track(new Promise<void>((resolve) => (done = resolve)));
    const t = setTimeout(() => {
      this.timers.delete(t);
      try {
        if (!this.closed) fn();
      } finally {
        done();
      }
    }, ms);
    this.timers.set(t, done);
  }

  /** Resolves once no work is left (work can start more work: a CI timer posts a status, whose delivery is queued…). */
  async idle(): Promise<void> {
    while (this.background.size > 0) await Promise.allSettled([...this.background]);
  }

  /** Marks it closed and ends the timers (their work counts as done). */
  protected endWork(): void {
    this.closed = true;
    for (const [t, done] of this.timers) {
      clearTimeout(t);
      done();
    }
    this.timers.clear();
  }
}
