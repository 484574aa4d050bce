/**
 * The sandbox's builder, CI and lander (`serve --sandbox`): simulated test runs for trying the
 * API, demos and the dashboard. A run "builds" a commit named after its contents, finishes
 * `testSeconds` after it started (also after a restart, counted from the stored start time) and
 * fails when it contains a PR of `--sandbox-fail` or by a seeded coin flip. Merges always land.
 * A failed run is a failed `test` check (TEST_RUN_REQUIRED_STATUS_FAILED): with a flake-aware
 * queue its failing tests come, as on GitHub and GitLab, from uploads for the run's
 * test commit (`railyard flaky upload --sha <testBranchSha> --job test`), which the server waits
 * for up to `flakyReportGraceSeconds`. Sandbox PRs hold no files: they change no test.
 */
import { createHash } from 'node:crypto';
import type { TestRun } from '../../engine/index.js';
import type { Builder, BuiltRun, Ci, CiVerdict, Lander, MergeOutcome } from '../types.js';

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

export const DEFAULT_SANDBOX: SandboxOutcomes = { testSeconds: 5, failPrs: new Set(), failureRate: 0, seed: 1 };

/** A number in [0, 1) derived from the seed and the run (stable across restarts: re-attached runs end the same). */
function uniform(seed: number, runId: string): number {
  const digest = createHash('sha256').update(`${seed}:${runId}`).digest();
  return digest.readUInt32BE(0) / 2 ** 32;
}

/** The checks the sandbox reports for every run. */
export const SANDBOX_CHECKS = ['build', 'test'] as const;

export class SandboxRuns implements Builder, Ci, Lander {
  constructor(
    private readonly outcomes: SandboxOutcomes,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether the run passes. */
  passes(run: TestRun): boolean {
    if ([...run.basePrNumbers, ...run.prNumbers].some((pr) => this.outcomes.failPrs.has(pr))) return false;
    return uniform(this.outcomes.seed, run.id) >= this.outcomes.failureRate;
  }

  async build(_queue: unknown, run: TestRun): Promise<BuiltRun> {
    const branch = `railyard-merge/pr-${run.prNumbers.join('-')}/${run.id}`;
    const sha = createHash('sha1').update(`${run.id}:${run.basePrNumbers.join(',')}:${run.prNumbers.join(',')}`).digest('hex');
    return { branch, sha };
  }

  async verdict(_queue: unknown, run: TestRun, _sha: string, signal: AbortSignal): Promise<CiVerdict | null> {
    const remaining = Math.max(0, run.startedAt + this.outcomes.testSeconds * 1000 - this.now());
    const finished = await new Promise<boolean>((resolve) => {
      if (signal.aborted) return resolve(false);
      const timer = setTimeout(() => resolve(true), remaining);
      signal.addEventListener('abort', () => (clearTimeout(timer), resolve(false)), { once: true });
    });
    if (!finished) return null;
    const passed = this.passes(run);
    const checks = Object.fromEntries(SANDBOX_CHECKS.map((c, i) => [c, passed || i === 0 ? 'success' : 'failure'] as const));
    const listed = [...run.basePrNumbers, ...run.prNumbers].filter((pr) => this.outcomes.failPrs.has(pr));
    const detail = listed.length
      ? `test failed (sandbox: the run contains ${listed.map((pr) => `#${pr}`).join(', ')} of --sandbox-fail)`
      : 'test failed (sandbox: a random failure, --sandbox-failure-rate)';
    return { passed, checks, ...(passed ? {} : { reason: 'TEST_RUN_REQUIRED_STATUS_FAILED' as const, detail }) };
  }

  /** Sandbox PRs are simulated, without contents: they change no file (so no failing test is the PR's own). */
  async changedFiles(): Promise<string[]> {
    return [];
  }

  async land(): Promise<MergeOutcome> {
    return 'merged';
  }
}
