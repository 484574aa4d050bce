/**
 * The git forge's builder and CI (`serve --git-root`): test commits are built in the repository on
 * the basis the engine named and kept as test branches; the checks of `railyard.json` run as
 * untrusted code through src/runner/ (a clone of their own outside the data dir, an allowlisted
 * environment, limits), their logs under `<dataDir>/runs/<run>/`.
 */
import { rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { testingTimeoutMs, type FailedTest, type TestBasis, type TestRun } from '../../engine/index.js';
import { changesTest } from '../../flaky/changed.js';
import { filesChangedOnTarget } from './changed.js';
import { readReports } from '../../flaky/ingest.js';
import {
  logFileNames,
  prepareChecksRoot,
  runChecks,
  type CheckIsolationOptions,
  type CheckResult,
  type RunChecksResult,
} from '../../runner/index.js';
import type { Builder, BuiltRun, Ci, CiVerdict, DriverQueue, TestResultsSink } from '../types.js';
import { buildRunCommit } from './build.js';
import { describeConflict } from './conflict.js';
import { ChecksConfigError, MergeConflictError } from './errors.js';
import type { GitForge } from './source.js';
import { headOf, readChecksConfig } from './repo.js';

/** `build failed (exit 1); lint timed out` for the checks of a run that did not pass. */
function describeFailedChecks(results: Record<string, CheckResult>): string {
  const failed = Object.entries(results).filter(([, r]) => r.outcome !== 'success');
  const what = (r: CheckResult) =>
    r.outcome === 'timed_out' ? 'timed out' : r.outcome === 'cancelled' ? 'was cancelled' : r.exitCode === null ? 'was killed' : `failed (exit ${r.exitCode})`;
  return failed.map(([name, r]) => (r.detail ? `${name}: ${r.detail}` : `${name} ${what(r)}`)).join('; ') || 'a required check did not pass';
}

export class GitRuns implements Builder, Ci {
  private worktreeDir: Promise<string> | null = null;
  private testResults: TestResultsSink | null = null;
  /** Checks under way (close waits for them: their directories must be gone). */
  private readonly inflight = new Set<Promise<unknown>>();

  constructor(
    private readonly forge: GitForge,
    /** Where check logs go: `<dataDir>/runs/<testRunId>/<status>.log`. */
    private readonly dataDir: string,
    private readonly checks: CheckIsolationOptions & { timeoutMs?: number; maxOutputBytes?: number } = {},
  ) {}

  /**
   * Where checks run: a directory of this server's under the OS temp dir (or `checks.parentDir`),
   * never inside the data dir (a check must not reach the database or other runs' logs). What a
   * server killed mid-run left there is removed once, before the first run of this start.
   */
  private worktrees(): Promise<string> {
    this.worktreeDir ??= (async () => {
      await rm(join(this.dataDir, 'worktrees'), { recursive: true, force: true }); // where older versions ran checks
      return prepareChecksRoot(this.checks.parentDir ?? os.tmpdir(), this.dataDir);
    })();
    return this.worktreeDir;
  }

  useTestResults(sink: TestResultsSink): void {
    this.testResults = sink;
  }

  /**
   * The test reports of a run's checks are stored as an upload for the test commit; for a failed
   * run, its failing tests with what the flaky-test data says of each and whether a PR of the
   * commit changes the test's file — the facts of the flake-aware verdict. Undefined (an ordinary
   * failure) unless every failed check left reports naming at least one failing test.
   */
  private async failingTests(
    queue: DriverQueue,
    sha: string,
    branch: string,
    result: RunChecksResult,
  ): Promise<FailedTest[] | undefined> {
    const checks = Object.values(result.results);
    const reports = checks.flatMap((r) => r.reports ?? []);
    if (!this.testResults || reports.length === 0) return undefined;
    const known = await this.testResults(queue.org, { repo: queue.repo, branch, sha, reports });
    if (result.passed || result.timedOut) return undefined;
    const failingIn = (r: CheckResult) => {
      const read = readReports({ org: queue.org, repo: queue.repo, variant: '', reports: r.reports ?? [] });
      return read.ok ? read.results.filter((t) => t.outcome === 'failed').map((t) => t.id) : [];
    };
    const ids = new Set<string>();
    for (const r of checks) {
      if (r.outcome === 'success') continue;
      const failing = failingIn(r);
      if (failing.length === 0) return undefined; // a failed check whose reports name no failing test: not judged by tests
      for (const id of failing) ids.add(id);
    }
    const changed = await filesChangedOnTarget(this.forge.repoDir(queue.repo), queue.model.branch, sha);
    return known
      .filter((t) => ids.has(t.id))
      .map((t) => ({
        name: t.name,
        quarantined: t.quarantined,
        flaky: t.flaky,
        changedByPr: changesTest(changed, t),
      }));
  }

  async build(
    queue: DriverQueue,
    run: TestRun,
    basis: TestBasis,
    signal: AbortSignal,
  ): Promise<BuiltRun | null> {
    const repoDir = this.forge.repoDir(queue.repo);
    // A repository that cannot be tested fails before anything is built.
    await readChecksConfig(repoDir, queue.model.branch);
    const head = await headOf(repoDir, queue.model.branch);
    if (!head)
      throw new ChecksConfigError(
        'START_TEST_RUN_CONFIG_NOT_FOUND',
        `the target branch ${queue.model.branch} does not exist`,
      );
    const built = await buildRunCommit(repoDir, queue.model, run, basis, head);
    return signal.aborted ? null : { branch: built.branch, sha: built.sha };
  }

  async describeFailure(queue: DriverQueue, run: TestRun, error: unknown): Promise<string> {
    if (error instanceof MergeConflictError)
      return describeConflict(this.forge.repoDir(queue.repo), queue.model, run, error).catch(
        () => error.message,
      );
    if (error instanceof ChecksConfigError) return error.message;
    return 'the test commit could not be built; the server log has the details';
  }

  async verdict(
    queue: DriverQueue,
    run: TestRun,
    sha: string,
    signal: AbortSignal,
  ): Promise<CiVerdict | null> {
    const repoDir = this.forge.repoDir(queue.repo);
    const config = await readChecksConfig(repoDir, queue.model.branch);
    const timeout = testingTimeoutMs(queue.model.config);
    const running = runChecks({
      repoDir,
      sha,
      checks: config.checks,
      required: run.requiredStatuses,
      timeoutMs: timeout > 0 ? Math.max(1, run.startedAt + timeout - Date.now()) : 0,
      logDir: join(this.dataDir, 'runs', run.id),
      worktreeParent: await this.worktrees(),
      signal,
      env: config.env,
      isolation: this.checks,
      checkTimeoutMs: this.checks.timeoutMs,
      maxOutputBytes: this.checks.maxOutputBytes,
      reports: config.reports,
    });
    this.inflight.add(running);
    const result = await running.finally(() => this.inflight.delete(running));
    if (result.cancelled || signal.aborted) return null;
    const failures = await this.failingTests(queue, sha, run.branch ?? sha, result).catch(() => undefined);
    const checks = Object.fromEntries(
      Object.entries(result.results).map(
        ([name, r]) => [name, r.outcome === 'success' ? 'success' : 'failure'] as const,
      ),
    );
    return {
      passed: result.passed,
      checks,
      reason: result.timedOut ? 'TEST_RUN_TIMEOUT' : 'TEST_RUN_REQUIRED_STATUS_FAILED',
      ...(result.passed ? {} : { detail: describeFailedChecks(result.results) }),
      ...(failures ? { failures } : {}),
    };
  }

  /** Waits (at most 10 s) for the checks under way to stop (the workers aborted them), then removes their root. */
  async close(): Promise<void> {
    await Promise.race([
      Promise.allSettled([...this.inflight]),
      new Promise((r) => setTimeout(r, 10_000).unref()),
    ]);
    if (this.worktreeDir) {
      const dir = await this.worktreeDir.catch(() => null);
      // Runs still finishing remove their own directories; this one goes once they are out.
      if (dir) await rm(dir, { recursive: true, force: true, maxRetries: 3 }).catch(() => undefined);
    }
  }

  /** The path of a check's log, or null when the run never had that check. */
  logPath(_queue: DriverQueue, run: TestRun, check: string): string | null {
    const names = Object.keys(run.checks);
    if (names.length && !names.includes(check)) return null;
    const file = logFileNames(names.length ? names : [check]).get(check);
    return file ? join(this.dataDir, 'runs', run.id, file) : null;
  }
}
