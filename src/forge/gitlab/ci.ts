/**
 * The GitLab driver's CI role: a test commit's verdict is read from GitLab, the commit statuses of
 * its SHA (`GET …/repository/commits/:sha/statuses`: the jobs of its pipelines and any external
 * status, latest per name). A run waits until a Pipeline or Job hook pokes it, or the poll does;
 * with no required statuses, a commit no status reported on within `ciStartMs` fails
 * (TEST_RUN_NO_CHECKS_REPORTED).
 */
import type { TestRun } from '../../engine/index.js';
import type { Ci, CiVerdict, DriverQueue } from '../types.js';
import { ciVerdict, type GitLabStatus } from './checks.js';
import { projectPath } from './repo.js';
import type { GitLabRuntime } from './runtime.js';

/** A run waiting for its CI on GitLab. */
interface Waiting {
  queue: DriverQueue;
  run: TestRun;
  sha: string;
  pushedAt: number;
  /** False until the test branch is on GitLab (its CI cannot be read before). */
  pushed: boolean;
  lastLook: number;
  result: Promise<CiVerdict | null>;
  finish: (result: CiVerdict | null) => void;
  looking: Promise<void> | null;
  again: boolean;
  timer: NodeJS.Timeout | null;
}

export class GitLabCi implements Ci {
  private readonly waiting = new Map<string, Waiting>();

  constructor(private readonly rt: GitLabRuntime) {}

  /**
   * Starts listening for the CI of a test commit about to be pushed (the first results may arrive
   * right after the push); `pushed()` says when it is on GitLab.
   */
  expect(queue: DriverQueue, run: TestRun, sha: string, pushedAt: number, pushed: boolean): Waiting {
    let finish!: (result: CiVerdict | null) => void;
    const result = new Promise<CiVerdict | null>((resolve) => (finish = resolve));
    const w: Waiting = {
      queue,
      run,
      sha,
      pushedAt,
      pushed,
      lastLook: Date.now(),
      result,
      finish,
      looking: null,
      again: false,
      timer: null,
    };
    this.waiting.set(run.id, w);
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
    this.waiting.delete(runId);
  }

  async verdict(
    queue: DriverQueue,
    run: TestRun,
    sha: string,
    signal: AbortSignal,
    _reattached: boolean,
  ): Promise<CiVerdict | null> {
    this.rt.busy.add(run.id);
    try {
      let w = this.waiting.get(run.id);
      if (!w || w.sha !== sha) {
        // Re-attached after a restart: the test branch is on GitLab already; look at its CI now.
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

  /** A pipeline, job or status of `sha` changed (a hook): look again soon. */
  changed(sha: string | undefined): void {
    for (const [id, w] of this.waiting) if (w.sha === sha) this.poke(id, 100);
  }

  /** A poll round: every run when polling; with webhooks only at the end of the grace period and as a slow safety net. */
  pollRound(): void {
    const now = Date.now();
    const safetyMs = this.rt.webhooks
      ? Math.max(60_000, this.rt.options.pollMs * 10)
      : this.rt.options.pollMs;
    for (const [id, w] of this.waiting) {
      if (this.rt.client.paused) break;
      if (!w.pushed) continue;
      const graceOver =
        now - w.pushedAt >= this.rt.options.ciStartMs && w.lastLook - w.pushedAt < this.rt.options.ciStartMs;
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
    const statuses = (await this.rt.client.api.Commits.allStatuses(
      projectPath(w.queue.repo),
      w.sha,
    )) as unknown as GitLabStatus[];
    if (this.waiting.get(w.run.id) !== w) return;
    const verdict = ciVerdict(statuses, w.run.requiredStatuses);
    if (verdict.state !== 'pending') {
      w.finish({
        passed: verdict.state === 'passed',
        checks: verdict.checks,
        reason: 'TEST_RUN_REQUIRED_STATUS_FAILED',
        ...(verdict.detail ? { detail: verdict.detail } : {}),
      });
    } else if (
      !verdict.anyReported &&
      w.run.requiredStatuses === null &&
      Date.now() - w.pushedAt >= this.rt.options.ciStartMs
    ) {
      w.finish({
        passed: false,
        checks: {},
        reason: 'TEST_RUN_NO_CHECKS_REPORTED',
        detail: `no pipeline job or status reported on ${w.sha.slice(0, 12)} within ${Math.round(this.rt.options.ciStartMs / 1000)} s`,
      });
    }
  }

  close(): void {
    for (const w of this.waiting.values()) if (w.timer) clearTimeout(w.timer);
  }
}
