/**
 * Long loops on the request thread, cut into slices. An upload of 200,000 tests
 * walks its results a dozen times on the server's only request thread (seqs, new tests, rows,
 * detection); each walk took 20–200 ms at once, and `/v1/status`, probed every 20 ms from another
 * process, waited behind them (p99 ~480 ms). A `Slices` lets such a loop give the thread back
 * (setImmediate: after the I/O that is waiting) whenever it has run `budgetMs` since it last did:
 * the work is the same, other requests are answered between the slices.
 */

/** How long a loop may hold the thread before it lets other work run (ms). */
export const SLICE_MS = 8;

/** Items between two looks at the clock. */
const STRIDE = 256;

const nextTurn = () => new Promise<void>((resume) => setImmediate(resume));

export class Slices {
  private since = performance.now();

  constructor(private readonly budgetMs = SLICE_MS) {}

  /** Lets other work run if this slice has used its budget. */
  async breathe(): Promise<void> {
    if (performance.now() - this.since < this.budgetMs) return;
    await nextTurn();
    this.since = performance.now();
  }

  async each<T>(items: readonly T[], fn: (item: T) => void): Promise<void> {
    for (let i = 0; i < items.length; i++) {
      fn(items[i]!);
      if (i % STRIDE === STRIDE - 1) await this.breathe();
    }
  }

  async filter<T>(items: readonly T[], keep: (item: T) => boolean): Promise<T[]> {
    const out: T[] = [];
    await this.each(items, (item) => {
      if (keep(item)) out.push(item);
    });
    return out;
  }

  async map<T, U>(items: readonly T[], fn: (item: T) => U): Promise<U[]> {
    const out: U[] = [];
    await this.each(items, (item) => {
      out.push(fn(item));
    });
    return out;
  }
}
