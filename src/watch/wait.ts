/**
 * The ONE wait loop of the CLI (`mq status --wait`, `mq submit --wait`) and the Action (`wait`):
 * polling with backoff and jitter, retries of transient errors, abort, and a heartbeat.
 */
import { TERMINAL_STATES } from '../contract/constants.js';
import type { SubmittedPullRequest } from '../contract/index.js';
import { authorMustFix } from './blocked.js';

export const TERMINAL: ReadonlySet<string> = new Set(TERMINAL_STATES);

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
  /** After each read that did not end the wait (to show progress, e.g. the position in the queue). */
  onPoll?: (pr: SubmittedPullRequest) => void | Promise<void>;
  /** Called when nothing was reported for `heartbeatMs` (default 60 s), so a long wait never looks stuck. */
  onHeartbeat?: (pr: SubmittedPullRequest, waitedMs: number) => void | Promise<void>;
  heartbeatMs?: number;
  onRetry?: (error: unknown, attempt: number, delayMs: number) => void;
  /** Consecutive transient errors tolerated before giving up. */
  maxConsecutiveErrors?: number;
  random?: () => number;
}

export type WaitOutcome =
  | { kind: 'terminal'; pr: SubmittedPullRequest }
  /** Waiting outside the queue on something only its author can fix (a conflict): `reason` says what. */
  | { kind: 'blocked'; pr: SubmittedPullRequest; reason: string }
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
 * Polls until the PR reaches a terminal state, waits on something only its author can fix
 * (authorMustFix: waiting longer would change nothing), the timeout passes or the signal aborts.
 * The pause grows by half each poll up to `maxIntervalMs`, with ±20 % jitter; transient
 * errors back off the same way and are retried until `maxConsecutiveErrors` in a row.
 * Each state change is reported once through `onState`.
 */
export async function waitForTerminal(options: WaitOptions): Promise<WaitOutcome> {
  const random = options.random ?? Math.random;
  const maxInterval = options.maxIntervalMs ?? options.intervalMs * 6;
  const maxErrors = options.maxConsecutiveErrors ?? 8;
  const started = Date.now();
  const deadline = started + options.timeoutMs;
  const heartbeatMs = options.heartbeatMs ?? 60_000;
  let reported = started;
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
        reported = Date.now();
        options.onState?.(pr);
      }
      if (pr.state && TERMINAL.has(pr.state)) return { kind: 'terminal', pr };
      const blocked = authorMustFix(pr);
      if (blocked) return { kind: 'blocked', pr, reason: blocked };
      await options.onPoll?.(pr);
      if (options.onHeartbeat && Date.now() - reported >= heartbeatMs) {
        reported = Date.now();
        await options.onHeartbeat(pr, reported - started);
      }
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
    // Never sleep past the next heartbeat.
    const untilHeartbeat = options.onHeartbeat ? Math.max(0, reported + heartbeatMs - Date.now()) : Infinity;
    await sleep(Math.min(jittered, remaining, untilHeartbeat), options.signal);
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
