/**
 * The queue workers of a server: they hand the engine's effects to the forge driver (build a test
 * commit, read or run its checks, land, show a state change) and feed the outcomes back as events.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { ChecksConfigError, MergeConflictError } from '../../forge/errors.js';
import type { DriverHost, DriverQueue, ForgeDriver, MergeOutcome } from '../../forge/types.js';
import type { FailureReason } from '../../contract/index.js';
import { findEntry, isTerminal, nextDeadline, testBasis, type Effect, type EngineEvent, type QueueModel, type TestBasis, type TestRun } from '../../engine/index.js';
import { awaitFailingTests, readsFailingTests, type RunTestResults } from '../flaky/run-reports.js';
import type { QueueHandle } from './handle.js';
import type { EffectHandler, QueueService } from './service.js';
import { isDatabaseBusy, isDatabaseUnavailable, LeaseLostError } from '../../store/index.js';

/** Waits between attempts to write an outcome the database did not take: 0.25 s, doubling, at most 5 s. */
const RETRY_FIRST_MS = 250;
const RETRY_MAX_MS = 5000;

/**
 * A landing that failed on a blip (Lander.blip: the network, a 5xx, a rate limit) is tried again
 * after 2 s, doubling up to 60 s, each wait between half and all of that (jitter: replicas and
 * queues hit by the same outage do not come back in step), for up to `landingRetryMs`.
 */
const LAND_RETRY_FIRST_MS = 2000;
const LAND_RETRY_MAX_MS = 60_000;
/** How long a landing's blips are tried again by default: 10 minutes (`serve --landing-retry-seconds`). */
export const LANDING_RETRY_DEFAULT_MS = 600_000;

/** Feeds the outcome of an effect back into the queue's engine (through its single writer). */
export type Report = (event: EngineEvent) => Promise<void>;

export interface WorkersOptions {
  /** How often queues are checked for batch waits and timeouts that expired (default 1000 ms). */
  tickMs?: number;
  now?: () => number;
  log?: (message: string, error?: unknown) => void;
  /** How long a landing that failed on a blip is tried again (default 10 minutes; 0: never). */
  landingRetryMs?: number;
}

/**
 * The queue workers of a server: carry out the effects the engine asks for, feed the outcomes
 * back as events, tick the clock, and on start re-attach to whatever was in flight.
 * Effects of one queue are started in order (a test commit may be built on the one before it).
 */
export class QueueWorkers {
  private service: QueueService | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  /** Aborted on close(): ends the waits between attempts to write an outcome. */
  private readonly stopping = new AbortController();
  private readonly chains = new Map<string, Promise<void>>();
  /** Runs being built or checked here: aborted when the engine cancels them or the server stops. */
  private readonly controllers = new Map<string, AbortController>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly tickMs: number;
  private readonly now: () => number;
  private readonly log: (message: string, error?: unknown) => void;
  private readonly landingRetryMs: number;

  constructor(
    readonly driver: ForgeDriver,
    options: WorkersOptions = {},
  ) {
    this.tickMs = options.tickMs ?? 1000;
    this.landingRetryMs = options.landingRetryMs ?? LANDING_RETRY_DEFAULT_MS;
    this.now = options.now ?? Date.now;
    // A lease taken over by another replica is expected (one line, no stack); anything else shows its stack.
    this.log =
      options.log ?? ((message, error) => console.error(message, error instanceof LeaseLostError ? error.message : (error ?? '')));
  }

  /** The failing tests of a run, from the flaky-test data: given with the service (attach). */
  private results: RunTestResults | null = null;

  /** The effect hook for QueueService: effects of the queues this replica drives are carried out. */
  readonly handle: EffectHandler = (queue, effects) => {
    if (!this.service?.writer.drives(queue.id)) return;
    for (const effect of effects) this.carryOut(queue, effect);
  };

  /**
   * The one hand-over: the queue service the workers drive and where a run's failing tests are
   * read (a driver that runs checks itself stores their reports through it; for one whose CI runs
   * on the forge, CI's uploads for the test commit give them). Then begins ticking and re-attaches
   * to the runs and merges that were in flight when the server stopped.
   */
  attach(service: QueueService, results?: RunTestResults): void {
    this.service = service;
    if (results) {
      this.results = results;
      this.driver.ci.useTestResults?.((org, input) => results.testRunResults(org, input));
    }
    for (const queue of service.registry.queues()) if (service.writer.drives(queue.id)) this.recover(queue);
    this.driver.events?.start(this.host(service));
    this.timer = setInterval(() => this.tick(), this.tickMs);
    this.timer.unref();
  }

  /**
   * Another replica took the queue over: stop its runs here (their results would be refused
   * anyway, the new driver re-attaches to them).
   */
  release(queue: QueueHandle): void {
    for (const run of queue.model.runs) if (run.status === 'in_progress') this.cancel(run.id);
  }

  /** Re-attaches to what was in flight: after a restart, or when this replica starts driving the queue. */
  recover(queue: QueueHandle): void {
    const model = queue.model;
    for (const run of model.runs) {
      if (run.status === 'in_progress') this.carryOut(queue, { type: 'startTestRun', runId: run.id, basis: testBasis(model, run) });
      else if (run.mergeRequested && membersPending(model, run)) {
        this.carryOut(queue, {
          type: 'merge',
          runId: run.id,
          prNumbers: run.mergePrNumbers ?? run.prNumbers,
        });
      }
    }
    // Let the engine catch up with time that passed while the server was down.
    this.report(queue)({ type: 'tick' }).catch(() => undefined);
  }

  private tick(): void {
    if (this.closed || !this.service) return;
    const now = this.now();
    for (const queue of this.service.registry.queues()) {
      if (!this.service.writer.drives(queue.id)) continue;
      const due = nextDeadline(queue.model, now);
      if (due !== null && due <= now) this.report(queue)({ type: 'tick' }).catch(() => undefined);
    }
  }

  /**
   * Feeds an outcome to the queue. When the database cannot take it (down, restarting, busy),
   * nothing was written: the outcome of a run or a merge is the only record of work done on the
   * forge, so it is written again, with growing waits, for as long as this replica drives the
   * queue (one that takes over re-attaches to the run itself). Ticks are not repeated: the next comes.
   */
  private report(queue: QueueHandle): Report {
    return async (event) => {
      for (let wait = RETRY_FIRST_MS; ; wait = Math.min(wait * 2, RETRY_MAX_MS)) {
        if (this.closed || !this.service) return;
        try {
          await this.service.writer.dispatch(queue.id, event);
          return;
        } catch (error) {
          // The queue may have been deleted meanwhile; anything else is worth a line in the log.
          if (!this.service.registry.byQueueId(queue.id)) return;
          const again = event.type !== 'tick' && (isDatabaseUnavailable(error) || isDatabaseBusy(error)) && this.service.writer.drives(queue.id);
          if (!again) return this.log(`queue ${queue.id}: ${event.type} failed`, error);
          if (wait === RETRY_FIRST_MS) this.log(`queue ${queue.id}: ${event.type} not written yet (the database did not take it); trying again until it does`, error);
          await delay(wait, undefined, { signal: this.stopping.signal }).catch(() => undefined);
        }
      }
    };
  }

  /**
   * Runs `task` after the earlier start/merge tasks of the same queue (builds chain on each other).
   * A task whose turn comes after close() is skipped: the executor is closed, and the next start
   * re-attaches to the run or redoes the merge (recover).
   */
  private enqueue(queue: QueueHandle, task: () => Promise<void>): void {
    const previous = this.chains.get(queue.id) ?? Promise.resolve();
    const next = previous.then(() => (this.closed ? undefined : task())).catch((error: unknown) => this.log(`queue ${queue.id}: effect failed`, error));
    this.chains.set(queue.id, next);
    this.track(next);
  }

  private track(promise: Promise<unknown>): void {
    this.inFlight.add(promise);
    void promise.finally(() => this.inFlight.delete(promise));
  }

  private carryOut(queue: QueueHandle, effect: Effect): void {
    if (this.closed) return;
    const report = this.report(queue);
    switch (effect.type) {
      case 'startTestRun':
        this.enqueue(queue, async () => {
          const run = queue.model.runs.find((r) => r.id === effect.runId);
          if (!run || run.status !== 'in_progress') return; // cancelled before it could start
          // Only the build is chained; the checks run on their own so that runs test in parallel.
          let built!: () => void;
          const done = new Promise<void>((resolve) => (built = resolve));
          this.track(
            this.test(queue, run, effect.basis, report, built)
              .catch((error: unknown) => this.log(`run ${run.id} failed`, error))
              .finally(() => built()),
          );
          await done;
        });
        break;
      case 'cancelTestRun':
        this.cancel(effect.runId);
        break;
      case 'merge':
        this.enqueue(queue, async () => {
          const run = queue.model.runs.find((r) => r.id === effect.runId);
          if (!run) return;
          const landed = await this.land(queue, run, effect.prNumbers);
          if (landed === null) return; // the server stops, or the merge is no longer wanted here: nothing to report
          const { outcome, detail } = landed;
          if (outcome === 'merged') await report({ type: 'mergeSucceeded', runId: run.id });
          else if (typeof outcome === 'object') {
            this.log(`queue ${queue.id}: the forge refused to land run ${run.id}: ${outcome.detail}${outcome.pauseQueue ? ' (queue paused)' : ''}`);
            await report({ type: 'mergeFailed', runId: run.id, reason: 'refused', detail: outcome.detail, pauseQueue: outcome.pauseQueue });
          } else await report({ type: 'mergeFailed', runId: run.id, reason: outcome, ...(detail === undefined ? {} : { detail }) });
        });
        break;
      case 'stateChanged':
        this.driver.reporter?.stateChanged(queue, effect.prNumber);
        break;
    }
  }

  /**
   * Lands `run`. A blip (Lander.blip: the network, a 5xx, a rate limit) is tried again with growing
   * waits for up to landingRetryMs, one log line per attempt; the lander checks before each retry
   * whether the attempt before landed after all (then it is `merged`, never a second landing), and a
   * target that moved or a refusal end the retries with their own outcome. When the window is over,
   * one last attempt at once (it finds an attempt that landed after all), then the outcome is
   * `error` with a detail saying what the forge answered. The queue's later effects wait
   * meanwhile (nothing is built on a target in doubt). Null when the server stops during a wait (no
   * landing is half-done: the next start redoes the merge, checked first — recover()), or when this
   * replica no longer drives the queue, the engine no longer waits for this merge, or its PRs left
   * the queue while it waited (nothing of theirs lands).
   */
  private async land(queue: QueueHandle, run: TestRun, prNumbers: readonly number[]): Promise<{ outcome: MergeOutcome; detail?: string } | null> {
    const started = this.now();
    let current = run;
    for (let attempt = 1, wait = LAND_RETRY_FIRST_MS; ; attempt++, wait = Math.min(wait * 2, LAND_RETRY_MAX_MS)) {
      const result = await this.attemptLanding(queue, current, prNumbers);
      if (result === null || 'outcome' in result) return result;
      const { blip, error } = result;
      const pause = Math.round(wait / 2 + (Math.random() * wait) / 2);
      const elapsed = this.now() - started;
      if (elapsed + pause > this.landingRetryMs) {
        // The window is over. One last attempt at once: it first finds whether the one that just
        // failed landed after all (its answer lost), so a landed PR is never reported failed.
        let lastBlip = blip;
        if (this.landingRetryMs > 0) {
          const last = await this.attemptLanding(queue, current, prNumbers);
          if (last === null || 'outcome' in last) return last;
          lastBlip = last.blip;
        }
        const attempts = this.landingRetryMs > 0 ? attempt + 1 : attempt;
        const tried = attempts === 1 ? 'once' : `${attempts} times over ${duration(this.now() - started)}`;
        this.log(`queue ${queue.id}: landing run ${run.id} failed: ${lastBlip} (tried ${tried}); its PRs fail`, error);
        const detail = `Landing failed: ${lastBlip} (tried ${tried}). The tests passed: resubmit the PR once the forge answers again.`;
        this.driver.reporter?.landingNote?.(queue, current, detail, true);
        return { outcome: 'error', detail };
      }
      this.log(`queue ${queue.id}: landing run ${run.id}: ${blip} (attempt ${attempt}), retrying in ${duration(pause)}`);
      this.driver.reporter?.landingNote?.(queue, current, `Landing: ${blip} (attempt ${attempt}), retrying in ${duration(pause)}.`, false);
      await delay(pause, undefined, { signal: this.stopping.signal }).catch(() => undefined);
      if (this.closed || !this.service?.writer.drives(queue.id)) return null;
      const model = (this.service.registry.byQueueId(queue.id) ?? queue).model;
      const now = model.runs.find((r) => r.id === run.id);
      if (!now?.mergeRequested) return null;
      if (!membersPending(model, now)) {
        // Its PRs left the queue meanwhile (cancelled, closed): what they took out is not landed.
        this.log(`queue ${queue.id}: landing run ${run.id}: its pull requests left the queue while it waited to try again; not landed`);
        return null;
      }
      current = now;
    }
  }

  /**
   * One landing attempt: its outcome (a failure that is no blip is `error`, logged); the blip that
   * failed it, to be tried again; null when the server stopped meanwhile.
   */
  private async attemptLanding(queue: QueueHandle, run: TestRun, prNumbers: readonly number[]): Promise<{ outcome: MergeOutcome } | { blip: string; error: unknown } | null> {
    try {
      return { outcome: await this.driver.lander.land(queue, run, prNumbers) };
    } catch (error) {
      if (this.closed) return null;
      const blip = this.driver.lander.blip?.(error) ?? null;
      if (blip !== null) return { blip, error };
      this.log(`merge of run ${run.id} failed`, error);
      return { outcome: 'error' };
    }
  }

  /**
   * Builds the test commit of `run` on `basis` (unless it was built before a restart), reports it
   * started, then waits for the verdict of its checks and reports it. `built` is called once the
   * build is over (the next build of the queue may start). A run that could not be built or
   * checked reports why (testRunStartFailed); an aborted one reports nothing.
   */
  private async test(queue: QueueHandle, run: TestRun, basis: TestBasis, report: Report, built: () => void): Promise<void> {
    const controller = new AbortController();
    this.controllers.set(run.id, controller);
    const { signal } = controller;
    try {
      let sha = run.sha;
      const reattached = sha !== null;
      if (sha === null) {
        const made = await this.driver.builder.build(queue, run, basis, signal);
        if (!made || signal.aborted) return;
        sha = made.sha;
        await report({ type: 'testRunStarted', runId: run.id, branch: made.branch, sha });
        this.driver.reporter?.runStarted?.(queue, run, made.branch);
      }
      built();
      const verdict = await this.driver.ci.verdict(queue, run, sha, signal, reattached);
      if (!verdict || signal.aborted) return;
      if (!verdict.passed && verdict.reason === 'TEST_RUN_REQUIRED_STATUS_FAILED' && verdict.failures === undefined && this.results && !this.driver.ci.useTestResults && readsFailingTests(queue.model.config)) {
        // CI ran on the forge (a driver that runs checks itself reads their reports): CI's uploads for the test commit say which tests failed.
        const failures = await awaitFailingTests(this.results, {
          org: queue.org,
          repo: queue.repo,
          sha,
          checks: verdict.checks,
          graceMs: queue.model.config.flakyReportGraceSeconds * 1000,
          signal,
          changed: async () => (await this.driver.builder.changedFiles?.(queue, run, sha)) ?? null,
        });
        if (signal.aborted) return;
        if (failures) verdict.failures = failures;
      }
      await report({
        type: 'testRunFinished',
        runId: run.id,
        passed: verdict.passed,
        checks: verdict.checks,
        ...(verdict.reason ? { reason: verdict.reason } : {}),
        ...(verdict.passed || verdict.detail === undefined ? {} : { detail: verdict.detail }),
        ...(verdict.passed || !verdict.failures ? {} : { failures: verdict.failures }),
      });
    } catch (error) {
      if (signal.aborted) return;
      let reason: FailureReason = 'START_TEST_RUN_INVALID_EVENT';
      let prNumber: number | undefined;
      if (error instanceof MergeConflictError) {
        reason = error.reason;
        prNumber = error.prNumber;
      } else if (error instanceof ChecksConfigError) {
        reason = error.reason;
      } else {
        this.log(`run ${run.id}: could not start`, error);
      }
      const detail = await this.driver.builder.describeFailure?.(queue, run, error);
      await report({ type: 'testRunStartFailed', runId: run.id, reason, prNumber, ...(detail === undefined ? {} : { detail }) });
    } finally {
      this.controllers.delete(run.id);
    }
  }

  /** Stops a run (its result is no longer wanted). */
  private cancel(runId: string): void {
    this.controllers.get(runId)?.abort();
  }

  /** What the driver may do with the queues: see them, send events, and relay commands. */
  private host(service: QueueService): DriverHost {
    const { registry, writer } = service;
    const find = (queue: DriverQueue) => registry.byQueueId(queue.id) ?? (queue as QueueHandle);
    return {
      queues: () => registry.queues().filter((q) => writer.drives(q.id)),
      dispatch: async (queue, event) => {
        try {
          await writer.dispatch(queue.id, event);
        } catch (error) {
          this.log(`queue ${queue.id}: ${event.type} failed`, error);
        }
      },
      command: async (queue, prNumber, command) => {
        const q = find(queue);
        if (command.type === 'submit') await service.submit(q, prNumber, { priority: command.priority });
        else if (command.type === 'cancel') await service.cancel(q, prNumber);
        else await service.restart(q, prNumber);
      },
      remember: (repo, kind, key) => service.rememberForgeEvent(this.driver.kind, repo, kind, key),
    };
  }

  /** Stops ticking and watching, cancels nothing (runs are re-attached on the next start), waits for reports in flight. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.closed = true;
    this.stopping.abort();
    for (const c of this.controllers.values()) c.abort();
    await this.driver.close();
    await Promise.allSettled([...this.inFlight]);
  }
}

/** A duration for people: `800 ms`, `20 s`, `3 min 5 s`. */
function duration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ''}`;
}

function membersPending(model: QueueModel, run: TestRun): boolean {
  return (run.mergePrNumbers ?? run.prNumbers).some((pr) => {
    const entry = findEntry(model, pr);
    return entry !== undefined && !isTerminal(entry.state);
  });
}
