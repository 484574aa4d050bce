import type { SubmittedPullRequest } from '../contract/index.js';

export const TERMINAL = new Set(['merged', 'failed', 'cancelled']);

export interface WaitOptions {
  /** Reads the PR; throws on failure. */
  read: () => Promise<SubmittedPullRequest>;
  /** Whether an error from `read` is worth another try (429, 5xx, network). */
  isTransient: (error: unknown) => boolean;
  timeoutMs: number;
  intervalMs: number;
  /** Longest pause between polls. */
  maxIntervalMs?: number;
  signal?: AbortSignal;
  onState?: (pr: SubmittedPullRequest) => void;
  onRetry?: (error: unknown, attempt: number, delayMs: number) => void;
  /** Consecutive transient errors tolerated before giving up. */
  maxConsecutiveErrors?: number;
  random?: () => number;
}

export type WaitOutcome =
  | { kind: 'terminal'; pr: SubmittedPullRequest }
  | { kind: 'timeout'; pr: SubmittedPullRequest | null }
  | { kind: 'aborted'; pr: SubmittedPullRequest | null };

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * Polls until the PR reaches a terminal state, the timeout passes or the signal aborts.
 * The pause grows by half each poll up to `maxIntervalMs`, with ±20 % jitter; transient
 * errors back off the same way and are retried until `maxConsecutiveErrors` in a row.
 * Each state change is reported once through `onState`.
 */
export async function waitForTerminal(options: WaitOptions): Promise<WaitOutcome> {
  const random = options.random ?? Math.random;
  const maxInterval = options.maxIntervalMs ?? options.intervalMs * 6;
  const maxErrors = options.maxConsecutiveErrors ?? 8;
  const deadline = Date.now() + options.timeoutMs;
  let interval = options.intervalMs;
  let last: SubmittedPullRequest | null = null;
  let lastKey = '';
  let errors = 0;

  for (;;) {
    if (options.signal?.aborted) return { kind: 'aborted', pr: last };
    try {
      const pr = await options.read();
      errors = 0;
      last = pr;
      const key = `${pr.state}|${pr.stateReason ?? ''}`;
      if (key !== lastKey) {
        lastKey = key;
        options.onState?.(pr);
      }
      if (pr.state && TERMINAL.has(pr.state)) return { kind: 'terminal', pr };
    } catch (error) {
      if (options.signal?.aborted) return { kind: 'aborted', pr: last };
      if (!options.isTransient(error)) throw error;
      errors++;
      if (errors >= maxErrors) throw error;
      options.onRetry?.(error, errors, interval);
    }
    const remaining = deadline - Date.now();
    if (remaining <= 0) return { kind: 'timeout', pr: last };
    const jittered = interval * (0.8 + 0.4 * random());
    await sleep(Math.min(jittered, remaining), options.signal);
    if (Date.now() >= deadline && !options.signal?.aborted) {
      // One last read so a state reached right at the deadline is not reported as a timeout.
      try {
        const pr = await options.read();
        last = pr;
        if (pr.state && TERMINAL.has(pr.state)) {
          if (`${pr.state}|${pr.stateReason ?? ''}` !== lastKey) options.onState?.(pr);
          return { kind: 'terminal', pr };
        }
      } catch {
        // the timeout stands
      }
      return { kind: 'timeout', pr: last };
    }
    interval = Math.min(interval * 1.5, maxInterval);
  }
}
