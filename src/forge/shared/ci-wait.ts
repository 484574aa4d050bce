/**
 * The CI role of the remote forges (GitHub, GitLab): a run waits for the verdict on its test commit,
 * read from the forge by the driver (`read`: check runs and statuses on GitHub, commit statuses on
 * GitLab). A run is looked at when the forge's webhooks poke it (`changed`), and every poll round
 * whether or not webhooks are set (`pollRound`); looks are coalesced (one at a time, one more if asked meanwhile). With no required
 * statuses, a commit no check reported on within `ciStartMs` fails (TEST_RUN_NO_CHECKS_REPORTED).
 * A run about to reach `testingTimeoutMinutes` is looked at once more just before, and fails with
 * TEST_RUN_TIMEOUT naming the required checks that never reported and those still running (a
 * renamed workflow job is found in seconds, not guessed at).
 */
import { inTestingMinutes, testingTimeoutMs, type TestRun } from '../../engine/index.js';
import type { Ci, CiVerdict, DriverQueue } from '../types.js';
import type { PersistedBase, RemoteRuntime } from './runtime.js';

export type CheckOutcome = 'success' | 'failure' | 'pending';

/** What the forge reports on a test commit. */
export interface ChecksRead {
  /** `pending` until the checks that count have decided. */
  state: 'pending' | 'passed' | 'failed';
  /** Outcome per check name, for the run's details. */
  checks: Record<string, CheckOutcome>;
  /** Whether any check (the queue's own status excepted) was reported at all. */
  anyReported: boolean;
  /** One line for people when it failed. */
  detail?: string;
}

/** A run waiting for its CI on the forge. */
export interface Waiting {
  queue: DriverQueue;
  run: TestRun;
  sha: string;
  pushedAt: number;
  /** False until the test branch is on the forge (its CI cannot be read before). */
  pushed: boolean;
  lastLook: number;
  result: Promise<CiVerdict | null>;
  finish: (result: CiVerdict | null) => void;
  looking: Promise<void> | null;
  again: boolean;
  timer: NodeJS.Timeout | null;
  /** Fires just before the queue's testing timeout: the last look, which names what is missing. */
  deadline: NodeJS.Timeout | null;
  /** The checks of the last look (null: none yet). */
  latest: Record<string, CheckOutcome> | null;
  /**
   * A webhook said something on the commit finished: the next look reads everything at once (a
   * poll round's look may stop at the first read that shows a counted check still running).
   */
  prompted: boolean;
}

/** How long before the engine's own timeout the last look happens (its verdict must arrive first). */
const TIMEOUT_LEAD_MS = 3000;

export abstract class CiWaiter implements Ci {
  private readonly waiting = new Map<string, Waiting>();

  constructor(protected readonly rt: RemoteRuntime<PersistedBase>) {}

  /**
   * Reads what the forge reports on `w.sha`. `all` false (a poll round's look): the driver may stop
   * at a first read showing a counted check still running, answering `pending` (never a verdict
   * from a partial read).
   */
  protected abstract read(w: Waiting, all: boolean): Promise<ChecksRead>;

  /** The detail of TEST_RUN_NO_CHECKS_REPORTED (default: none). */
  protected noChecksDetail(_w: Waiting): string | undefined {
    return undefined;
  }

  /**
   * Starts listening for the CI of a test commit about to be pushed (the first results may arrive
   * right after the push); `pushed()` says when it is on the forge.
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
      deadline: null,
      latest: null,
      prompted: false,
    };
    this.waiting.set(run.id, w);
    const timeoutMs = testingTimeoutMs(queue.model.config);
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
        // Re-attached after a restart: the test branch is on the forge already; look at its CI now.
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

  /** The checks seen so far of a run waiting here for its verdict. */
  progress(_queue: DriverQueue, run: TestRun): Record<string, CheckOutcome> | null {
    return this.waiting.get(run.id)?.latest ?? null;
  }

  /**
   * A check, pipeline, job or status of `sha` changed (a webhook): look again soon. `running`:
   * the payload itself says what changed is still queued or running — nothing can be decided on
   * it (a verdict waits for every counted check), so no look; the finish has its own event, and
   * the poll rounds stand in for a lost one.
   */
  changed(sha: string | undefined, running = false): void {
    if (running) return;
    for (const [id, w] of this.waiting)
      if (w.sha === sha) {
        w.prompted = true;
        this.poke(id, 100);
      }
  }

  /**
   * A poll round: every run is looked at, webhooks or not (a lost delivery must not stall the
   * queue; the reads are conditional, so an unchanged commit costs a 304).
   */
  pollRound(): void {
    for (const [id, w] of this.waiting) {
      if (this.rt.paused) break;
      if (w.pushed) this.poke(id, 0);
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
    const timeoutMs = testingTimeoutMs(w.queue.model.config);
    const nearTimeout =
      timeoutMs > 2 * TIMEOUT_LEAD_MS && Date.now() >= w.run.startedAt + timeoutMs - TIMEOUT_LEAD_MS - 100;
    // The last look before the timeout reads everything: its detail names what never reported.
    const all = w.prompted || nearTimeout;
    w.prompted = false;
    const verdict = await this.read(w, all);
    if (this.waiting.get(w.run.id) !== w) return;
    w.latest = verdict.checks;
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
      const detail = this.noChecksDetail(w);
      w.finish({
        passed: false,
        checks: {},
        reason: 'TEST_RUN_NO_CHECKS_REPORTED',
        ...(detail ? { detail } : {}),
      });
    } else if (nearTimeout) {
      w.finish({
        passed: false,
        checks: verdict.checks,
        reason: 'TEST_RUN_TIMEOUT',
        detail: timeoutDetail(w.run, verdict.checks, timeoutMs),
      });
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
  const minutes = inTestingMinutes(timeoutMs);
  return `${parts.length ? parts.join('; ') : 'no verdict'} after ${minutes} min (testingTimeoutMinutes)`;
}
