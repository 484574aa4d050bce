/**
 * The GitHub driver's CI role: a test commit's verdict is read from GitHub (check runs and commit
 * statuses of its SHA, through ETag-cached reads). A run waits until webhooks poke it, or the
 * poll does; with no required statuses, a commit no check reported on within `ciStartMs` fails
 * (TEST_RUN_NO_CHECKS_REPORTED). A run about to reach `testingTimeoutMinutes` is looked at once
 * more just before, and fails with TEST_RUN_TIMEOUT naming the required checks that never
 * reported and those still running (a renamed workflow job is found in seconds, not guessed at).
 */
import type { TestRun } from '../../engine/index.js';
import type { Ci, CiVerdict, DriverQueue } from '../types.js';
import { ciVerdict, type CheckRunLike, type StatusLike } from './checks.js';
import type { GitHubRuntime } from './runtime.js';

/** A run waiting for its CI on GitHub. */
interface Waiting {
  queue: DriverQueue;
  run: TestRun;
  sha: string;
  pushedAt: number;
  /** False until the test branch is on GitHub (its CI cannot be read before). */
  pushed: boolean;
  lastLook: number;
  result: Promise<CiVerdict | null>;
  finish: (result: CiVerdict | null) => void;
  looking: Promise<void> | null;
  again: boolean;
  timer: NodeJS.Timeout | null;
  /** Fires just before the queue's testing timeout: the last look, which names what is missing. */
  deadline: NodeJS.Timeout | null;
}

/** How long before the engine's own timeout the last look happens (its verdict must arrive first). */
const TIMEOUT_LEAD_MS = 3000;

export class GitHubCi implements Ci {
  private readonly waiting = new Map<string, Waiting>();

  constructor(private readonly rt: GitHubRuntime) {}

  /**
   * Starts listening for the CI of a test commit about to be pushed (the first results may arrive
   * right after the push); `pushed()` says when it is on GitHub.
   */
  expect(queue: DriverQueue, run: TestRun, sha: string, pushedAt: number, pushed: boolean): Waiting {
    let finish!: (result: CiVerdict | null) => void;
    const result = new Promise<CiVerdict | null>((resolve) => (finish = resolve));
    const w: Waiting = { queue, run, sha, pushedAt, pushed, lastLook: Date.now(), result, finish, looking: null, again: false, timer: null, deadline: null };
    this.waiting.set(run.id, w);
    const timeoutMs = queue.model.config.testingTimeoutMinutes * 60_000;
    if (timeoutMs > 2 * TIMEOUT_LEAD_MS) {
      const at = run.startedAt + timeoutMs - TIMEOUT_LEAD_MS;
      w.deadline = setTimeout(() => this.poke(run.id, 0), Math.max(0, at - Date.now()));
    }
    return w;
  }

  pushed(runId: string, at: number): void {
    const w = this.waiting.get(runId);
    if (w) [w.pushedAt, w.pushed] = [at, true];
  }

  /** Stops listening for a run (its commit was not pushed after all). */
  forget(runId: string): void {
    const w = this.waiting.get(runId);
    if (w?.timer) clearTimeout(w.timer);
    if (w?.deadline) clearTimeout(w.deadline);
    this.waiting.delete(runId);
  }

  async verdict(queue: DriverQueue, run: TestRun, sha: string, signal: AbortSignal, _reattached: boolean): Promise<CiVerdict | null> {
    this.rt.busy.add(run.id);
    try {
      let w = this.waiting.get(run.id);
      if (!w || w.sha !== sha) {
        // Re-attached after a restart: the test branch is on GitHub already; look at its CI now.
        w = this.expect(queue, run, sha, run.startedAt, true);
        this.poke(run.id, 0);
      }
      if (signal.aborted) return null;
      const done = w.finish;
      signal.addEventListener('abort', () => done(null), { once: true });
      const result = await w.result;
      return signal.aborted ? null : result;
    } finally {
      this.forget(run.id);
      this.rt.busy.delete(run.id);
    }
  }

  /** A check run, check suite or status of `sha` changed (a webhook): look again soon. */
  changed(sha: string | undefined): void {
    for (const [id, w] of this.waiting) if (w.sha === sha) this.poke(id, 100);
  }

  /** A poll round: every run when polling; with webhooks only at the end of the grace period and as a slow safety net. */
  pollRound(): void {
    const now = Date.now();
    const safetyMs = this.rt.webhooks ? Math.max(60_000, this.rt.options.pollMs * 10) : this.rt.options.pollMs;
    for (const [id, w] of this.waiting) {
      if (this.rt.forge.client.paused) break;
      if (!w.pushed) continue;
      const graceOver = now - w.pushedAt >= this.rt.options.ciStartMs && w.lastLook - w.pushedAt < this.rt.options.ciStartMs;
      if (now - w.lastLook >= safetyMs || graceOver || !this.rt.webhooks) this.poke(id, 0);
    }
  }

  /** Looks at a waiting run's CI after `delayMs` (coalesced: one look at a time, one more if asked meanwhile). */
  private poke(runId: string, delayMs: number): void {
    const w = this.waiting.get(runId);
    if (!w || w.timer) return;
    w.timer = setTimeout(() => {
      w.timer = null;
      if (w.looking) {
        w.again = true;
        return;
      }
      const look = async () => {
        do {
          w.again = false;
          w.lastLook = Date.now();
          try {
            await this.look(w);
          } catch (error) {
            this.rt.log(`reading CI of ${w.sha.slice(0, 12)} failed`, error);
          }
        } while (w.again && this.waiting.get(w.run.id) === w);
        w.looking = null;
      };
      w.looking = this.rt.track(look());
    }, delayMs);
  }

  private async look(w: Waiting): Promise<void> {
    const { owner, name } = w.queue.repo;
    const [runs, combined] = await Promise.all([
      this.rt.forge.client.getCached<{ check_runs: CheckRunLike[] }>(
        owner,
        name,
        'GET /repos/{owner}/{repo}/commits/{ref}/check-runs',
        { ref: w.sha, per_page: 100 },
      ),
      this.rt.forge.client.getCached<{ statuses: StatusLike[] }>(
        owner,
        name,
        'GET /repos/{owner}/{repo}/commits/{ref}/status',
        { ref: w.sha, per_page: 100 },
      ),
    ]);
    if (this.waiting.get(w.run.id) !== w) return;
    const verdict = ciVerdict(runs.check_runs, combined.statuses, w.run.requiredStatuses);
    if (verdict.state !== 'pending') {
      w.finish({
        passed: verdict.state === 'passed',
        checks: verdict.checks,
        reason: 'TEST_RUN_REQUIRED_STATUS_FAILED',
      });
    } else if (
      !verdict.anyReported &&
      w.run.requiredStatuses === null &&
      Date.now() - w.pushedAt >= this.rt.options.ciStartMs
    ) {
      w.finish({ passed: false, checks: {}, reason: 'TEST_RUN_NO_CHECKS_REPORTED' });
    } else {
      const timeoutMs = w.queue.model.config.testingTimeoutMinutes * 60_000;
      if (timeoutMs > 2 * TIMEOUT_LEAD_MS && Date.now() >= w.run.startedAt + timeoutMs - TIMEOUT_LEAD_MS - 100)
        w.finish({ passed: false, checks: verdict.checks, reason: 'TEST_RUN_TIMEOUT', detail: timeoutDetail(w.run, verdict.checks, timeoutMs) });
    }
  }

  close(): void {
    for (const w of this.waiting.values()) {
      if (w.timer) clearTimeout(w.timer);
      if (w.deadline) clearTimeout(w.deadline);
    }
  }
}

/** `lint never reported; e2e still running (after 300 min)`: what held a run that timed out. */
export function timeoutDetail(run: TestRun, checks: Record<string, string>, timeoutMs: number): string {
  const counted = run.requiredStatuses ?? Object.keys(checks);
  const never = (run.requiredStatuses ?? []).filter((n) => checks[n] === undefined);
  const running = counted.filter((n) => checks[n] === 'pending');
  const parts = [
    ...(never.length ? [`${never.join(', ')} never reported`] : []),
    ...(running.length ? [`${running.join(', ')} still running`] : []),
  ];
  const minutes = Math.round(timeoutMs / 60_000);
  return `${parts.length ? parts.join('; ') : 'no verdict'} after ${minutes} min (testingTimeoutMinutes)`;
}
