/**
 * The write lock that the threads of one process share for one SQLite file: the server's request
 * thread and the webhook deliverer's thread (its own connection) take it before `BEGIN IMMEDIATE`
 * and give it back after COMMIT or ROLLBACK (see keepingStatements in connect.ts).
 *
 * Why: SQLite's busy handler does not wake when the lock is freed; it sleeps 1, 2, 5, 10, 15, 20,
 * 25 … ms between tries. A request whose transaction met one of the deliverer's (a commit of a
 * millisecond or two) lost 1–8 ms sleeping, which was most of phase B's p99 in bench/webhooks.ts.
 * A waiter here sleeps in Atomics.wait and is woken by the holder's Atomics.notify the moment it
 * gives the lock back. SQLite's own lock and busy_timeout stay underneath for every other writer
 * (the checkpointer's TRUNCATE, another process such as `railyard token`).
 *
 * The lock is a futex-style mutex in a SharedArrayBuffer (Drepper's "mutex 2": 0 free, 1 held,
 * 2 held with waiters) and the holder's thread id. It never deadlocks a thread against itself: a
 * thread that finds the lock held by its own thread (a second connection of that thread to the
 * same file) does not wait for it. A waiter gives up after `timeoutMs` and goes on without it, as
 * before the lock existed (SQLite's busy handler then waits as it always did). A thread that died
 * while holding it is released by the one that watched it exit (releaseIfHeldBy).
 */
import { resolve } from 'node:path';
import { threadId } from 'node:worker_threads';

const FREE = 0;
const HELD = 1;
const CONTENDED = 2;

export class WriteLock {
  /** [0]: FREE, HELD or CONTENDED; [1]: the holder's thread id + 1 (0: none). */
  private readonly cells: Int32Array;
  private readonly me = threadId + 1;

  constructor(readonly buffer: SharedArrayBuffer = new SharedArrayBuffer(8)) {
    this.cells = new Int32Array(buffer);
  }

  /**
   * Takes the lock, waiting at most `timeoutMs`. Answers whether this thread now holds it (false:
   * held by this same thread through another connection, or the wait timed out: go on without it).
   */
  acquire(timeoutMs: number): boolean {
    let state = Atomics.compareExchange(this.cells, 0, FREE, HELD);
    if (state === FREE) return this.took();
    if (Atomics.load(this.cells, 1) === this.me) return false;
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      if (state === CONTENDED || Atomics.compareExchange(this.cells, 0, HELD, CONTENDED) !== FREE) {
        const left = deadline - performance.now();
        if (left <= 0) return false;
        Atomics.wait(this.cells, 0, CONTENDED, left);
      }
      state = Atomics.compareExchange(this.cells, 0, FREE, CONTENDED);
      if (state === FREE) return this.took();
    }
  }

  /** Gives the lock back (only by the thread that holds it) and wakes one waiter, if any. */
  release(): void {
    Atomics.store(this.cells, 1, 0);
    if (Atomics.sub(this.cells, 0, 1) !== HELD) {
      Atomics.store(this.cells, 0, FREE);
      Atomics.notify(this.cells, 0, 1);
    }
  }

  /** Releases the lock if the thread `id` (one that exited) held it; answers whether it did. */
  releaseIfHeldBy(id: number): boolean {
    if (Atomics.load(this.cells, 1) !== id + 1) return false;
    this.release();
    return true;
  }

  private took(): true {
    Atomics.store(this.cells, 1, this.me);
    return true;
  }
}

/** One lock per SQLite file in this process (the threads receive its buffer). */
const locks = new Map<string, WriteLock>();

/** The write lock of the SQLite file `path` in this process: the same object for every caller. */
export function sharedWriteLock(path: string): WriteLock {
  const key = resolve(path);
  let lock = locks.get(key);
  if (!lock) locks.set(key, (lock = new WriteLock()));
  return lock;
}
