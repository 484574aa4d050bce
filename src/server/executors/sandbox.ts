import { createHash } from 'node:crypto';
import type { TestRun } from '../../engine/index.js';
import type { QueueHandle } from '../service.js';
import type { Executor, MergeOutcome, Report } from '../workers.js';

export interface SandboxOutcomes {
  /** How long a run takes (default 5 s). */
  testSeconds: number;
  /** A run fails when it contains any of these PRs (its own or those of its predicted base). */
  failPrs: ReadonlySet<number>;
  /** Probability that a run fails for no reason (a flake), 0..1. */
  failureRate: number;
  /** Seeds the flakes: the same seed, queue and run always give the same outcome. */
  seed: number;
}

/** A number in [0, 1) derived from the seed and the run (stable across restarts: re-attached runs end the same). */
function uniform(seed: number, runId: string): number {
  const digest = createHash('sha256').update(`${seed}:${runId}`).digest();
  return digest.readUInt32BE(0) / 2 ** 32;
}

/** The checks the sandbox reports for every run. */
export const SANDBOX_CHECKS = ['build', 'test'] as const;

/**
 * Simulated CI for `serve --sandbox`: each run finishes `testSeconds` after it started (also after
 * a server restart, counted from the stored start time) and fails when it contains a PR of
 * `--sandbox-fail` or by a seeded coin flip. Merges always land.
 */
export class SandboxExecutor implements Executor {
  readonly kind = 'sandbox';
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly waiting = new Map<string, () => void>();

  constructor(
    private readonly outcomes: SandboxOutcomes,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether the run passes. */
  passes(run: TestRun): boolean {
    if ([...run.basePrNumbers, ...run.prNumbers].some((pr) => this.outcomes.failPrs.has(pr))) return false;
    return uniform(this.outcomes.seed, run.id) >= this.outcomes.failureRate;
  }

  async start(_queue: QueueHandle, run: TestRun, report: Report): Promise<void> {
    const branch = `railyard-merge/pr-${run.prNumbers.join('-')}/${run.id}`;
    const sha = createHash('sha1').update(`${run.id}:${run.basePrNumbers.join(',')}:${run.prNumbers.join(',')}`).digest('hex');
    if (run.sha === null) await report({ type: 'testRunStarted', runId: run.id, branch, sha });
    const remaining = Math.max(0, run.startedAt + this.outcomes.testSeconds * 1000 - this.now());
    const finished = await new Promise<boolean>((resolve) => {
      this.waiting.set(run.id, () => resolve(false));
      this.timers.set(
        run.id,
        setTimeout(() => resolve(true), remaining),
      );
    });
    this.timers.delete(run.id);
    this.waiting.delete(run.id);
    if (!finished) return;
    const passed = this.passes(run);
    const checks = Object.fromEntries(SANDBOX_CHECKS.map((c, i) => [c, passed || i === 0 ? 'success' : 'failure'] as const));
    const listed = [...run.basePrNumbers, ...run.prNumbers].filter((pr) => this.outcomes.failPrs.has(pr));
    const detail = listed.length
      ? `test failed (sandbox: the run contains ${listed.map((pr) => `#${pr}`).join(', ')} of --sandbox-fail)`
      : 'test failed (sandbox: a random failure, --sandbox-failure-rate)';
    await report({ type: 'testRunFinished', runId: run.id, passed, checks, ...(passed ? {} : { detail }) });
  }

  cancel(_queue: QueueHandle, runId: string): void {
    clearTimeout(this.timers.get(runId));
    this.waiting.get(runId)?.();
  }

  async merge(): Promise<MergeOutcome> {
    return 'merged';
  }

  async close(): Promise<void> {
    for (const id of [...this.waiting.keys()]) this.cancel(undefined as never, id);
  }
}
