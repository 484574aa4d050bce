import { rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import type { FailureReason } from '../../contract/index.js';
import { findEntry, isTerminal, type Entry, type TestRun } from '../../engine/index.js';
import {
  buildTestCommit,
  casUpdateBranch,
  ChecksConfigError,
  diffSnapshots,
  git,
  headOf,
  MergeConflictError,
  pruneTestBranches,
  readChecksConfig,
  snapshot,
  testBranchName,
  type GitForge,
  type RepoSnapshot,
  type TestUnit,
} from '../../forge/git/index.js';
import { logFileNames, prepareChecksRoot, runChecks, type CheckIsolationOptions, type CheckResult } from '../../runner/index.js';
import type { QueueHandle, QueueService } from '../service.js';
import type { Executor, MergeOutcome, Report } from '../workers.js';

export interface GitExecutorOptions {
  /** Where check logs go: `<dataDir>/runs/<testRunId>/<status>.log`. */
  dataDir: string;
  /** How often repositories are polled for pushes, closed PRs and target moves (default 1000 ms). */
  pollMs?: number;
  /** How checks are isolated and limited (src/runner/isolation.ts); parentDir defaults to the OS temp dir. */
  checks?: CheckIsolationOptions & { timeoutMs?: number; maxOutputBytes?: number };
  log?: (message: string, error?: unknown) => void;
}

async function isAncestor(repoDir: string, ancestor: string, descendant: string): Promise<boolean> {
  const r = await git(repoDir, ['merge-base', '--is-ancestor', ancestor, descendant], { okCodes: [0, 1, 128] });
  return r.code === 0;
}

/** `build failed (exit 1); lint timed out` for the checks of a run that did not pass. */
function describeFailedChecks(results: Record<string, CheckResult>): string {
  const failed = Object.entries(results).filter(([, r]) => r.outcome !== 'success');
  const what = (r: CheckResult) =>
    r.outcome === 'timed_out' ? 'timed out' : r.outcome === 'cancelled' ? 'was cancelled' : r.exitCode === null ? 'was killed' : `failed (exit ${r.exitCode})`;
  return failed.map(([name, r]) => `${name} ${what(r)}`).join('; ') || 'a required check did not pass';
}

const unitOf = (entry: Entry): TestUnit => ({ prNumber: entry.prNumber, headSha: entry.pr.headSha, title: entry.pr.title, author: entry.pr.author });

/**
 * Runs the queue on real repositories (`serve --git-root`): test commits are built on the
 * predicted base exactly as the merge method lands them and pushed as test branches; the checks
 * of `railyard.json` run in temporary worktrees; merging fast-forwards the target to the tested
 * commit with a compare-and-swap. Pushes to PRs, closed PRs and target moves made outside the
 * queue are picked up by polling the repositories.
 */
export class GitExecutor implements Executor {
  readonly kind = 'git';
  private readonly controllers = new Map<string, AbortController>();
  /** Runs under way (close waits for them: their checks' directories must be gone). */
  private readonly inflight = new Set<Promise<void>>();
  /** Target SHAs the queue produced itself, per repository directory. */
  private readonly ownHeads = new Map<string, Set<string>>();
  private readonly snapshots = new Map<string, RepoSnapshot>();
  private watchTimer: NodeJS.Timeout | null = null;
  private polling: Promise<void> | null = null;
  private closed = false;
  private readonly log: (message: string, error?: unknown) => void;

  constructor(
    readonly forge: GitForge,
    private readonly options: GitExecutorOptions,
  ) {
    this.log = options.log ?? ((message, error) => console.error(message, error ?? ''));
  }

  private worktreeDir: Promise<string> | null = null;

  /**
   * Where checks run: a directory of this server's under the OS temp dir (or `checks.parentDir`),
   * never inside the data dir (a check must not reach the database or other runs' logs). What a
   * server killed mid-run left there is removed once, before the first run of this start.
   */
  private worktrees(): Promise<string> {
    this.worktreeDir ??= (async () => {
      await rm(join(this.options.dataDir, 'worktrees'), { recursive: true, force: true }); // where older versions ran checks
      return prepareChecksRoot(this.options.checks?.parentDir ?? os.tmpdir(), this.options.dataDir);
    })();
    return this.worktreeDir;
  }

  private own(repoDir: string): Set<string> {
    let set = this.ownHeads.get(repoDir);
    if (!set) this.ownHeads.set(repoDir, (set = new Set()));
    return set;
  }

  /** The commit a run is built on and the PRs applied on top of it. */
  private async basis(queue: QueueHandle, run: TestRun, repoDir: string): Promise<{ baseSha: string; units: TestUnit[] }> {
    const model = queue.model;
    const entryOf = (pr: number) => {
      const e = findEntry(model, pr);
      if (!e) throw new Error(`run ${run.id}: pull request #${pr} is not in the queue`);
      return e;
    };
    const own = run.prNumbers.map((pr) => unitOf(entryOf(pr)));
    const head = await headOf(repoDir, model.branch);
    if (!head) throw new ChecksConfigError('START_TEST_RUN_CONFIG_NOT_FOUND', `the target branch ${model.branch} does not exist`);
    const base = run.basePrNumbers.filter((pr) => entryOf(pr).state !== 'merged');
    if (base.length === 0) return { baseSha: head, units: own };
    // Chain on the test commit of the unit just ahead when it holds exactly this run's base:
    // then landing that unit first keeps this run's commit a fast-forward of the target.
    const ahead = entryOf(base[base.length - 1]);
    const aheadRun = ahead.testRunId ? model.runs.find((r) => r.id === ahead.testRunId) : undefined;
    if (aheadRun?.sha) {
      const covered = [...aheadRun.basePrNumbers, ...aheadRun.prNumbers].filter((pr) => entryOf(pr).state !== 'merged');
      if (covered.join() === base.join()) return { baseSha: aheadRun.sha, units: own };
    }
    return { baseSha: head, units: [...base.map((pr) => unitOf(entryOf(pr))), ...own] };
  }

  async start(queue: QueueHandle, run: TestRun, report: Report): Promise<void> {
    const repoDir = this.forge.repoDir(queue.repo);
    const controller = new AbortController();
    this.controllers.set(run.id, controller);
    let finished!: () => void;
    const inflight = new Promise<void>((resolve) => (finished = resolve));
    this.inflight.add(inflight);
    try {
      const config = await readChecksConfig(repoDir, queue.model.branch);
      let sha = run.sha;
      if (sha === null) {
        const { baseSha, units } = await this.basis(queue, run, repoDir);
        const built = await buildTestCommit({
          repoDir,
          targetBranch: queue.model.branch,
          baseSha,
          units,
          mergeMethod: run.mergeMethod,
          branchName: testBranchName([...run.basePrNumbers, ...run.prNumbers], run.id),
        });
        sha = built.sha;
        if (controller.signal.aborted) return;
        await report({ type: 'testRunStarted', runId: run.id, branch: built.branch, sha });
      }
      const timeout = queue.model.config.testingTimeoutMinutes * 60_000;
      const result = await runChecks({
        repoDir,
        sha,
        checks: config.checks,
        required: run.requiredStatuses,
        timeoutMs: timeout > 0 ? Math.max(1, run.startedAt + timeout - Date.now()) : 0,
        logDir: join(this.options.dataDir, 'runs', run.id),
        worktreeParent: await this.worktrees(),
        signal: controller.signal,
        env: config.env,
        isolation: this.options.checks,
        checkTimeoutMs: this.options.checks?.timeoutMs,
        maxOutputBytes: this.options.checks?.maxOutputBytes,
      });
      if (result.cancelled || controller.signal.aborted) return;
      const checks = Object.fromEntries(Object.entries(result.results).map(([name, r]) => [name, r.outcome === 'success' ? 'success' : 'failure'] as const));
      await report({
        type: 'testRunFinished',
        runId: run.id,
        passed: result.passed,
        checks,
        reason: result.timedOut ? 'TEST_RUN_TIMEOUT' : 'TEST_RUN_REQUIRED_STATUS_FAILED',
        ...(result.passed ? {} : { detail: describeFailedChecks(result.results) }),
      });
    } catch (error) {
      if (controller.signal.aborted) return;
      let reason: FailureReason = 'START_TEST_RUN_INVALID_EVENT';
      let prNumber: number | undefined;
      let detail: string | undefined;
      if (error instanceof MergeConflictError) {
        reason = error.reason;
        prNumber = error.prNumber;
        detail = await this.describeConflict(queue, run, repoDir, error).catch(() => error.message);
      } else if (error instanceof ChecksConfigError) {
        reason = error.reason;
        detail = error.message;
      } else {
        this.log(`run ${run.id}: could not start`, error);
        detail = 'the test commit could not be built; the server log has the details';
      }
      await report({ type: 'testRunStartFailed', runId: run.id, reason, prNumber, detail });
    } finally {
      this.controllers.delete(run.id);
      this.inflight.delete(inflight);
      finished();
    }
  }

  /**
   * Names what a conflicting PR conflicts with: the PRs it was applied on top of (this run's base
   * and the PRs before it in the run) whose own changes touch the conflicting files, else the target.
   */
  private async describeConflict(queue: QueueHandle, run: TestRun, repoDir: string, error: MergeConflictError): Promise<string> {
    const model = queue.model;
    const target = model.branch;
    const ahead = [...run.basePrNumbers, ...run.prNumbers.slice(0, run.prNumbers.indexOf(error.prNumber))]
      .map((pr) => findEntry(model, pr))
      .filter((e): e is Entry => e !== undefined && e.state !== 'merged');
    const conflicting = new Set(error.files);
    const culprits: number[] = [];
    for (const entry of ahead) {
      const base = (await git(repoDir, ['merge-base', target, entry.pr.headSha], { okCodes: [0, 1] })).stdout.trim();
      if (!base) continue;
      const changed = (await git(repoDir, ['diff', '--name-only', base, entry.pr.headSha])).stdout.split('\n');
      if (changed.some((f) => conflicting.has(f))) culprits.push(entry.prNumber);
    }
    const files = error.files.length ? ` in ${error.files.slice(0, 10).join(', ')}${error.files.length > 10 ? ` and ${error.files.length - 10} more` : ''}` : '';
    const withWhat = culprits.length ? culprits.map((n) => `PR #${n}`).join(', ') + ` (ahead of it in the queue)` : `the ${target} branch`;
    return `PR #${error.prNumber} conflicts with ${withWhat}${files}`;
  }

  /** The path of a check's log, or null when the run never had that check. */
  checkLogPath(_queue: QueueHandle, run: TestRun, check: string): string | null {
    const names = Object.keys(run.checks);
    if (names.length && !names.includes(check)) return null;
    const file = logFileNames(names.length ? names : [check]).get(check);
    return file ? join(this.options.dataDir, 'runs', run.id, file) : null;
  }

  cancel(_queue: QueueHandle, runId: string): void {
    this.controllers.get(runId)?.abort();
  }

  async merge(queue: QueueHandle, run: TestRun, prNumbers: readonly number[]): Promise<MergeOutcome> {
    const repoDir = this.forge.repoDir(queue.repo);
    const branch = queue.model.branch;
    let sha = run.sha;
    if (!sha) return 'error';
    const head = await headOf(repoDir, branch);
    if (!head) return 'error';
    if (head === sha || (await isAncestor(repoDir, sha, head))) return 'merged'; // landed already (asked again after a restart)
    if (!(await isAncestor(repoDir, head, sha))) {
      // The target moved since the run was built. Someone else did it: everything restarts. In
      // parallel mode another lane of the queue did it: this lane's PRs land on top of it.
      if (queue.model.config.mode !== 'parallel' || !this.own(repoDir).has(head)) return 'target_moved';
      const units = prNumbers.map((pr) => unitOf(findEntry(queue.model, pr) as Entry));
      const rebuilt = await buildTestCommit({
        repoDir,
        targetBranch: branch,
        baseSha: head,
        units,
        mergeMethod: run.mergeMethod,
        branchName: testBranchName(prNumbers, run.id),
      });
      sha = rebuilt.sha;
    }
    this.own(repoDir).add(sha);
    const moved = await casUpdateBranch(repoDir, branch, head, sha);
    if (!moved) return 'target_moved';
    // Test branches of runs that are over are of no use any more.
    const keep = queue.model.runs.filter((r) => r.status === 'in_progress').map((r) => r.id);
    await pruneTestBranches(repoDir, keep).catch((error: unknown) => this.log(`pruning test branches of ${repoDir} failed`, error));
    return 'merged';
  }

  watch(queues: () => QueueHandle[], service: QueueService): void {
    const poll = async () => {
      const byRepo = new Map<string, QueueHandle[]>();
      for (const q of queues()) {
        if (!this.forge.hasRepo(q.repo)) continue;
        const dir = this.forge.repoDir(q.repo);
        byRepo.set(dir, [...(byRepo.get(dir) ?? []), q]);
      }
      for (const [dir, list] of byRepo) {
        if (this.closed) return;
        try {
          await this.pollRepo(dir, list, service);
        } catch (error) {
          this.log(`watching ${dir} failed`, error);
        }
      }
    };
    const loop = () => {
      if (this.closed) return;
      this.polling = poll().finally(() => {
        this.polling = null;
        if (!this.closed) this.watchTimer = setTimeout(loop, this.options.pollMs ?? 1000);
      });
    };
    loop();
  }

  private async pollRepo(dir: string, queues: QueueHandle[], service: QueueService): Promise<void> {
    const next = await snapshot(dir);
    const prev = this.snapshots.get(dir);
    this.snapshots.set(dir, next);
    if (!prev) return; // the first look is the baseline
    const dispatch = (q: QueueHandle, event: Parameters<QueueService['dispatch']>[1]) =>
      service.dispatch(q.id, event).catch((error: unknown) => this.log(`queue ${q.id}: ${event.type} failed`, error));
    for (const change of diffSnapshots(prev, next)) {
      if (change.type === 'prPushed' || change.type === 'prClosed' || change.type === 'prBaseChanged') {
        for (const q of queues) {
          const entry = findEntry(q.model, change.prNumber);
          if (!entry || isTerminal(entry.state)) continue;
          const fresh = (await this.forge.getPullRequest(q.repo, change.prNumber, q.model.branch)) ?? { ...entry.pr, open: false };
          await dispatch(q, { type: 'prUpdated', prNumber: change.prNumber, pr: fresh });
        }
      } else if (change.type === 'branchMoved') {
        for (const q of queues) {
          if (q.model.branch !== change.branch) continue;
          if (change.to !== null && !this.own(dir).has(change.to)) await dispatch(q, { type: 'targetMoved' });
          // The target changed: PRs waiting to be tested may now conflict with it (or not any more).
          for (const e of q.model.entries) {
            if (e.state !== 'not_ready' && e.state !== 'pending') continue;
            const fresh = await this.forge.getPullRequest(q.repo, e.prNumber, q.model.branch);
            if (fresh && fresh.mergeability !== e.pr.mergeability) await dispatch(q, { type: 'prUpdated', prNumber: e.prNumber, pr: fresh });
          }
        }
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.watchTimer) clearTimeout(this.watchTimer);
    for (const c of this.controllers.values()) c.abort();
    await this.polling;
    await Promise.race([Promise.all(this.inflight), new Promise((r) => setTimeout(r, 10_000).unref())]);
    if (this.worktreeDir) {
      const dir = await this.worktreeDir.catch(() => null);
      // Runs still finishing remove their own directories; this one goes once they are out.
      if (dir) await rm(dir, { recursive: true, force: true, maxRetries: 3 }).catch(() => undefined);
    }
  }
}
