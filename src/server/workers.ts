import type { FastifyInstance } from 'fastify';
import { findEntry, isTerminal, nextDeadline, type Effect, type EngineEvent, type QueueModel, type TestRun } from '../engine/index.js';
import type { EffectHandler, QueueHandle, QueueService } from './service.js';

/** Feeds the outcome of an effect back into the queue's engine (through its single writer). */
export type Report = (event: EngineEvent) => Promise<void>;

export type MergeOutcome = 'merged' | 'target_moved' | 'error';

/**
 * Carries out test runs and merges for one kind of forge. The engine decides; an executor acts
 * and reports. Implementations must tolerate being asked again for a run after a restart
 * (re-attach or redo) and must make `merge` idempotent (a merge that already landed is `merged`).
 */
export interface Executor {
  readonly kind: string;
  /** Builds the test commit of `run` and runs its checks; reports testRunStarted / testRunStartFailed / testRunFinished. */
  start(queue: QueueHandle, run: TestRun, report: Report): Promise<void>;
  /** Stops a run (its result is no longer wanted). */
  cancel(queue: QueueHandle, runId: string): void;
  /** Lands the run's commit on the target branch. */
  merge(queue: QueueHandle, run: TestRun, prNumbers: readonly number[]): Promise<MergeOutcome>;
  /** Where the output of a check of a run is kept (null: the run has no such check); executors without logs leave it out. */
  checkLogPath?(queue: QueueHandle, run: TestRun, check: string): string | null;
  /** Starts watching the forge for changes made outside the queue (pushes, closed PRs, target moves). */
  watch?(queues: () => QueueHandle[], service: QueueService): void;
  /** An entry changed state (the forge may show it on the pull request). */
  stateChanged?(queue: QueueHandle, prNumber: number): void;
  /** Extra HTTP routes of the forge (e.g. `POST /webhooks/github`), registered on the server. */
  routes?: (app: FastifyInstance) => Promise<void>;
  close(): Promise<void>;
}

export interface WorkersOptions {
  /** How often queues are checked for batch waits and timeouts that expired (default 1000 ms). */
  tickMs?: number;
  now?: () => number;
  log?: (message: string, error?: unknown) => void;
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
  private readonly chains = new Map<string, Promise<void>>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly tickMs: number;
  private readonly now: () => number;
  private readonly log: (message: string, error?: unknown) => void;

  constructor(
    readonly executor: Executor,
    options: WorkersOptions = {},
  ) {
    this.tickMs = options.tickMs ?? 1000;
    this.now = options.now ?? Date.now;
    this.log = options.log ?? ((message, error) => console.error(message, error ?? ''));
  }

  /** The effect hook for QueueService. */
  readonly handle: EffectHandler = (queue, effects, service) => {
    this.service ??= service;
    if (!service.drives(queue.id)) return;
    for (const effect of effects) this.carryOut(queue, effect);
  };

  /** Begins ticking and re-attaches to the runs and merges that were in flight when the server stopped. */
  attach(service: QueueService): void {
    this.service = service;
    for (const queue of service.queues()) if (service.drives(queue.id)) this.recover(queue);
    this.executor.watch?.(() => service.queues().filter((q) => service.drives(q.id)), service);
    this.timer = setInterval(() => this.tick(), this.tickMs);
    this.timer.unref();
  }

  /**
   * Another replica took the queue over: stop its runs here (their results would be refused
   * anyway, the new driver re-attaches to them).
   */
  release(queue: QueueHandle): void {
    for (const run of queue.model.runs) if (run.status === 'in_progress') this.executor.cancel(queue, run.id);
  }

  /** Re-attaches to what was in flight: after a restart, or when this replica starts driving the queue. */
  recover(queue: QueueHandle): void {
    const model = queue.model;
    for (const run of model.runs) {
      if (run.status === 'in_progress') this.carryOut(queue, { type: 'startTestRun', runId: run.id });
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
    for (const queue of this.service.queues()) {
      if (!this.service.drives(queue.id)) continue;
      const due = nextDeadline(queue.model);
      if (due !== null && due <= now) this.report(queue)({ type: 'tick' }).catch(() => undefined);
    }
  }

  private report(queue: QueueHandle): Report {
    return async (event) => {
      if (this.closed || !this.service) return;
      try {
        await this.service.dispatch(queue.id, event);
      } catch (error) {
        // The queue may have been deleted meanwhile; anything else is worth a line in the log.
        if (this.service.byQueueId(queue.id)) this.log(`queue ${queue.id}: ${event.type} failed`, error);
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
          let started!: () => void;
          const built = new Promise<void>((resolve) => (started = resolve));
          const running = this.executor.start(queue, run, async (event) => {
            await report(event);
            if (event.type !== 'testRunFinished') started();
          });
          this.track(running.catch((error: unknown) => this.log(`run ${run.id} failed`, error)).finally(() => started()));
          await built;
        });
        break;
      case 'cancelTestRun':
        this.executor.cancel(queue, effect.runId);
        break;
      case 'merge':
        this.enqueue(queue, async () => {
          const run = queue.model.runs.find((r) => r.id === effect.runId);
          if (!run) return;
          let outcome: MergeOutcome;
          try {
            outcome = await this.executor.merge(queue, run, effect.prNumbers);
          } catch (error) {
            this.log(`merge of run ${run.id} failed`, error);
            outcome = 'error';
          }
          if (outcome === 'merged') await report({ type: 'mergeSucceeded', runId: run.id });
          else await report({ type: 'mergeFailed', runId: run.id, reason: outcome });
        });
        break;
      case 'stateChanged':
        this.executor.stateChanged?.(queue, effect.prNumber);
        break;
    }
  }

  /** Stops ticking and watching, cancels nothing (runs are re-attached on the next start), waits for reports in flight. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.closed = true;
    await this.executor.close();
    await Promise.allSettled([...this.inFlight]);
  }
}

function membersPending(model: QueueModel, run: TestRun): boolean {
  return (run.mergePrNumbers ?? run.prNumbers).some((pr) => {
    const entry = findEntry(model, pr);
    return entry !== undefined && !isTerminal(entry.state);
  });
}
