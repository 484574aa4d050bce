import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { verify } from '@octokit/webhooks-methods';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { JSON_TOO_DEEP_MESSAGE, jsonTooDeep, resolvePriority, type FailureReason, type Repo } from '../../contract/index.js';
import { findEntry, isTerminal, type Entry, type QueueModel, type TestRun } from '../../engine/index.js';
import {
  buildTestCommit,
  ChecksConfigError,
  git,
  headOf,
  MergeConflictError,
  testBranchName,
  type TestUnit,
} from '../../forge/git/index.js';
import {
  ciVerdict,
  engineFacts,
  ensureCache,
  fetchRefs,
  mergeableUnknown,
  pushRefs,
  QUEUE_STATUS_CONTEXT,
  remoteHeads,
  statusOf,
  type CheckRunLike,
  type GitHubForge,
  factsOf,
  type GitHubPull,
  type StatusLike,
} from '../../forge/github/index.js';
import type { QueueHandle, QueueService } from '../service.js';
import type { Executor, MergeOutcome, Report } from '../workers.js';

export interface GitHubExecutorOptions {
  /** `<dataDir>/github/` holds the bare caches and `state.json` (comment ids, draft PRs; no secrets). */
  dataDir: string;
  /** Poll interval: target heads and test branches always (git), PRs and CI too when there is no webhook secret. */
  pollMs: number;
  /** With no requiredStatuses, a test commit with no check reported after this long fails (TEST_RUN_NO_CHECKS_REPORTED). */
  ciStartMs: number;
  /** The webhook secret; null = no webhooks, polling does their job. */
  webhookSecret: string | null;
  log?: (message: string, error?: unknown) => void;
}

const TEST_BRANCH_RE = /^railyard-merge\/pr-\d+(?:-\d+)*\/([^/]+)$/;
const COMMAND_RE = /^\/railyard\s+(merge|cancel|restart)\b(.*)$/m;

/** A run waiting for its CI on GitHub. */
interface Waiting {
  queue: QueueHandle;
  run: TestRun;
  sha: string;
  pushedAt: number;
  /** False until the test branch is on GitHub (its CI cannot be read before). */
  pushed: boolean;
  lastLook: number;
  finish: (result: {
    passed: boolean;
    checks: Record<string, 'success' | 'failure' | 'pending'>;
    reason?: FailureReason;
  }) => void;
  looking: Promise<void> | null;
  again: boolean;
  timer: NodeJS.Timeout | null;
}

interface RepoCtx {
  owner: string;
  name: string;
  dir: string;
  url: string;
  /** Runs a git command against GitHub with a current token (renewed once if GitHub refuses it). */
  git: <T>(op: (dir: string, url: string, token: string) => Promise<T>) => Promise<T>;
}

interface Persisted {
  /** `<org>\n<host>/<owner>/<name>#<n>` → id of the queue's comment on that PR. */
  comments: Record<string, number>;
  /** Test run id → number of its draft PR (open until the run ends). */
  draftPrs: Record<string, { repo: string; number: number }>;
  /** PRs the queue closed after landing them squashed or rebased. */
  closed: Record<string, true>;
}

const unitOf = (entry: Entry): TestUnit => ({
  prNumber: entry.prNumber,
  headSha: entry.pr.headSha,
  title: entry.pr.title,
  author: entry.pr.author,
});
const repoKey = (repo: Repo) => `${repo.host}/${repo.owner}/${repo.name}`.toLowerCase();

async function isAncestor(dir: string, ancestor: string, descendant: string): Promise<boolean> {
  const r = await git(dir, ['merge-base', '--is-ancestor', ancestor, descendant], { okCodes: [0, 1, 128] });
  return r.code === 0;
}

/** GitHub's commit status for an entry: pending while it is in the queue, then success / failure / error. */
function statusFor(
  entry: Entry,
  model: QueueModel,
): { state: 'pending' | 'success' | 'failure' | 'error'; description: string } {
  const reason = entry.reason ? ` (${entry.reason})` : '';
  switch (entry.state) {
    case 'merged': {
      const run = model.runs.find((r) => r.id === entry.testRunId);
      return {
        state: 'success',
        description: `Merged into ${model.branch}${run?.sha ? ` as ${run.sha.slice(0, 7)}` : ''}`,
      };
    }
    case 'failed':
      return { state: 'failure', description: `Failed${reason}` };
    case 'cancelled':
      return { state: 'error', description: `Removed from the queue${reason}` };
    case 'not_ready':
      return {
        state: 'pending',
        description: 'Submitted, waiting until it is ready (draft, conflict or base branch)',
      };
    default:
      return { state: 'pending', description: `In the ${model.branch} merge queue` };
  }
}

function commentFor(entry: Entry, model: QueueModel): string {
  const run = entry.testRunId ? model.runs.find((r) => r.id === entry.testRunId) : undefined;
  const lines = [
    '<!-- railyard:merge-queue -->',
    `**Railyard merge queue** (\`${model.branch}\`): **${entry.state.replace('_', ' ')}**`,
  ];
  if (entry.state === 'pending' || entry.state === 'testing') {
    const active = model.entries.filter((e) => !isTerminal(e.state) && e.state !== 'not_ready');
    const position =
      active.filter(
        (e) =>
          e.priority.value < entry.priority.value ||
          (e.priority.value === entry.priority.value && e.seq < entry.seq),
      ).length + 1;
    lines.push('', `Position ${position} of ${active.length}.`);
  }
  if (run && !isTerminal(entry.state)) {
    const batch = run.prNumbers.filter((n) => n !== entry.prNumber);
    lines.push(
      '',
      `Test run \`${run.id}\`${run.branch ? ` on \`${run.branch}\`` : ''}${batch.length ? `, batched with ${batch.map((n) => `#${n}`).join(', ')}` : ''}${run.basePrNumbers.length ? `, on top of ${run.basePrNumbers.map((n) => `#${n}`).join(', ')}` : ''}.`,
    );
  }
  if (entry.state === 'not_ready')
    lines.push('', 'It enters the queue once it is mergeable, not a draft, and based on the target branch.');
  if (entry.state === 'merged' && run?.sha)
    lines.push('', `Landed on \`${model.branch}\` as ${run.sha} (test run \`${run.id}\`).`);
  if (
    (entry.state === 'failed' || entry.state === 'cancelled' || entry.state === 'pending_failure') &&
    entry.reason
  ) {
    lines.push(
      '',
      `Reason: \`${entry.reason}\`${run?.failureReason && run.failureReason !== entry.reason ? ` (test run: \`${run.failureReason}\`)` : ''}.`,
    );
    if (run) {
      const failed = Object.entries(run.checks)
        .filter(([, o]) => o === 'failure')
        .map(([n]) => `\`${n}\``);
      if (failed.length) lines.push(`Failed checks: ${failed.join(', ')}.`);
    }
  }
  return lines.join('\n');
}

/**
 * Runs the queue of repositories on GitHub: test commits are built locally in a bare cache with the
 * git forge's code and pushed as `railyard-merge/…` branches for the repository's own CI; check
 * runs and commit statuses on them decide the run; landing fast-forwards the target with
 * `PATCH git/refs/heads/{target}` `force: false`. Webhooks (or polling) bring pushes, closed PRs,
 * CI results and `/railyard` commands.
 */
export class GitHubExecutor implements Executor {
  readonly kind = 'github';
  private readonly controllers = new Map<string, AbortController>();
  private readonly waiting = new Map<string, Waiting>();
  /** Target SHAs the queue put there itself, per repository. */
  private readonly ownHeads = new Map<string, Set<string>>();
  /** Last seen head of each target branch: `<repoKey> <branch>` → SHA. */
  private readonly targetHeads = new Map<string, string>();
  /** Last commit status posted per `<queueId>#<pr>`. */
  private readonly posted = new Map<string, { sha: string; state: string }>();
  private readonly commentBodies = new Map<string, string>();
  private readonly presenting = new Map<
    string,
    { busy: Promise<void> | null; again: boolean; timer: NodeJS.Timeout | null }
  >();
  private readonly deliveries = new Set<string>();
  private readonly mergeableLooks = new Map<string, { at: number; wait: number }>();
  /** `<repoKey>#<pr>` → the next re-read of a PR whose mergeability GitHub was computing. */
  private readonly unknownMergeable = new Map<string, { timer: NodeJS.Timeout | null; tries: number }>();
  private readonly persisted: Persisted;
  private readonly statePath: string;
  private saving: Promise<void> = Promise.resolve();
  private readonly inFlight = new Set<Promise<unknown>>();
  private service: QueueService | null = null;
  private queues: () => QueueHandle[] = () => [];
  private loopTimer: NodeJS.Timeout | null = null;
  private looping: Promise<void> | null = null;
  private closed = false;
  private round = 0;
  private readonly log: (message: string, error?: unknown) => void;

  constructor(
    readonly forge: GitHubForge,
    private readonly options: GitHubExecutorOptions,
  ) {
    this.log =
      options.log ??
      ((message, error) => console.error(message, error instanceof Error ? error.message : (error ?? '')));
    this.statePath = join(options.dataDir, 'github', 'state.json');
    forge.onPull = (repo, pull) => this.mergeabilityRead(repo, pull);
    this.persisted = { comments: {}, draftPrs: {}, closed: {} };
    if (existsSync(this.statePath)) {
      try {
        Object.assign(this.persisted, JSON.parse(readFileSync(this.statePath, 'utf8')) as Partial<Persisted>);
      } catch (error) {
        this.log(`${this.statePath}: unreadable, starting without it`, error);
      }
    }
  }

  private get webhooks(): boolean {
    return this.options.webhookSecret !== null;
  }

  private save(): void {
    const text = JSON.stringify(this.persisted);
    this.saving = this.saving
      .then(async () => {
        await mkdir(dirname(this.statePath), { recursive: true });
        await writeFile(`${this.statePath}.tmp`, text);
        await rename(`${this.statePath}.tmp`, this.statePath);
      })
      .catch((error: unknown) => this.log(`saving ${this.statePath} failed`, error));
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p)).catch(() => undefined);
    return p;
  }

  private own(repo: Repo): Set<string> {
    const key = repoKey(repo);
    let set = this.ownHeads.get(key);
    if (!set) this.ownHeads.set(key, (set = new Set()));
    return set;
  }

  private async ctx(repo: Repo): Promise<RepoCtx> {
    const info = await this.forge.repoInfo(repo);
    const dir = this.forge.cacheDir(repo);
    await ensureCache(dir);
    const client = this.forge.client;
    const withToken = async <T>(op: (dir: string, url: string, token: string) => Promise<T>): Promise<T> => {
      try {
        return await op(dir, info.cloneUrl, await client.tokenFor(repo.owner, repo.name));
      } catch (error) {
        // An installation token that expired between reading it and using it: once more with a new one.
        if (!/could not read Username|Authentication failed|401/.test(String((error as Error).message)))
          throw error;
        return op(dir, info.cloneUrl, await client.tokenFor(repo.owner, repo.name, true));
      }
    };
    return { owner: repo.owner, name: repo.name, dir, url: info.cloneUrl, git: withToken };
  }

  /** Fetches the target branch and the heads of `prs` into the cache; returns the target head. */
  private async fetch(c: RepoCtx, branch: string, prs: readonly number[]): Promise<string | null> {
    await c.git((dir, url, token) =>
      fetchRefs(dir, url, token, [
        `+refs/heads/${branch}:refs/heads/${branch}`,
        ...prs.map((n) => `+refs/pull/${n}/head:refs/pull/${n}/head`),
      ]),
    );
    return headOf(c.dir, branch);
  }

  // ------------------------------------------------------------------ test runs

  private async basis(
    queue: QueueHandle,
    run: TestRun,
    head: string,
  ): Promise<{ baseSha: string; units: TestUnit[] }> {
    const model = queue.model;
    const entryOf = (pr: number) => {
      const e = findEntry(model, pr);
      if (!e) throw new Error(`run ${run.id}: pull request #${pr} is not in the queue`);
      return e;
    };
    const own = run.prNumbers.map((pr) => unitOf(entryOf(pr)));
    const base = run.basePrNumbers.filter((pr) => entryOf(pr).state !== 'merged');
    if (base.length === 0) return { baseSha: head, units: own };
    const ahead = entryOf(base[base.length - 1]);
    const aheadRun = ahead.testRunId ? model.runs.find((r) => r.id === ahead.testRunId) : undefined;
    if (aheadRun?.sha) {
      const covered = [...aheadRun.basePrNumbers, ...aheadRun.prNumbers].filter(
        (pr) => entryOf(pr).state !== 'merged',
      );
      if (covered.join() === base.join()) return { baseSha: aheadRun.sha, units: own };
    }
    return { baseSha: head, units: [...base.map((pr) => unitOf(entryOf(pr))), ...own] };
  }

  async start(queue: QueueHandle, run: TestRun, report: Report): Promise<void> {
    const controller = new AbortController();
    this.controllers.set(run.id, controller);
    try {
      const c = await this.ctx(queue.repo);
      let sha = run.sha;
      let pushedAt = run.startedAt;
      if (sha === null) {
        const prs = [...run.basePrNumbers, ...run.prNumbers].filter(
          (pr) => findEntry(queue.model, pr)?.state !== 'merged',
        );
        const head = await this.fetch(c, queue.model.branch, prs);
        if (!head)
          throw new ChecksConfigError(
            'START_TEST_RUN_CONFIG_NOT_FOUND',
            `the target branch ${queue.model.branch} does not exist`,
          );
        const { baseSha, units } = await this.basis(queue, run, head);
        const built = await buildTestCommit({
          repoDir: c.dir,
          targetBranch: queue.model.branch,
          baseSha,
          units,
          mergeMethod: run.mergeMethod,
          branchName: testBranchName([...run.basePrNumbers, ...run.prNumbers], run.id),
        });
        if (controller.signal.aborted) return;
        sha = built.sha;
        // Listen for its CI before pushing: the first results may arrive right after the push.
        const result = this.awaitCi(queue, run, sha, Date.now(), controller.signal, false);
        await c.git((dir, url, token) => pushRefs(dir, url, token, [`+${sha}:refs/heads/${built.branch}`]));
        pushedAt = Date.now();
        const w = this.waiting.get(run.id);
        if (w) [w.pushedAt, w.pushed] = [pushedAt, true];
        if (controller.signal.aborted) return;
        await report({ type: 'testRunStarted', runId: run.id, branch: built.branch, sha });
        if (queue.model.config.createPrsForTestingBranches)
          void this.track(this.openDraftPr(queue, run, built.branch));
        return await this.finishWith(await result, run, report, controller);
      }
      // Re-attached after a restart: the test branch is on GitHub already; look at its CI now.
      const result = this.awaitCi(queue, run, sha, pushedAt, controller.signal, true);
      this.poke(run.id, 0);
      return await this.finishWith(await result, run, report, controller);
    } catch (error) {
      if (controller.signal.aborted) return;
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
      await report({ type: 'testRunStartFailed', runId: run.id, reason, prNumber });
    } finally {
      this.controllers.delete(run.id);
      const w = this.waiting.get(run.id);
      if (w?.timer) clearTimeout(w.timer);
      this.waiting.delete(run.id);
    }
  }

  private async finishWith(
    result: {
      passed: boolean;
      checks: Record<string, 'success' | 'failure' | 'pending'>;
      reason?: FailureReason;
    } | null,
    run: TestRun,
    report: Report,
    controller: AbortController,
  ): Promise<void> {
    if (!result || controller.signal.aborted) return;
    await report({
      type: 'testRunFinished',
      runId: run.id,
      passed: result.passed,
      checks: result.checks,
      reason: result.reason,
    });
  }

  /** Resolves with the CI verdict of `sha`, or null when the run is cancelled. */
  private awaitCi(
    queue: QueueHandle,
    run: TestRun,
    sha: string,
    pushedAt: number,
    signal: AbortSignal,
    reattached: boolean,
  ) {
    return new Promise<{
      passed: boolean;
      checks: Record<string, 'success' | 'failure' | 'pending'>;
      reason?: FailureReason;
    } | null>((resolve) => {
      const w: Waiting = {
        queue,
        run,
        sha,
        pushedAt,
        pushed: reattached,
        lastLook: Date.now(),
        finish: resolve,
        looking: null,
        again: false,
        timer: null,
      };
      this.waiting.set(run.id, w);
      signal.addEventListener('abort', () => resolve(null), { once: true });
    });
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
            this.log(`reading CI of ${w.sha.slice(0, 12)} failed`, error);
          }
        } while (w.again && this.waiting.get(w.run.id) === w);
        w.looking = null;
      };
      w.looking = this.track(look());
    }, delayMs);
  }

  private async look(w: Waiting): Promise<void> {
    const { owner, name } = w.queue.repo;
    const [runs, combined] = await Promise.all([
      this.forge.client.getCached<{ check_runs: CheckRunLike[] }>(
        owner,
        name,
        'GET /repos/{owner}/{repo}/commits/{ref}/check-runs',
        { ref: w.sha, per_page: 100 },
      ),
      this.forge.client.getCached<{ statuses: StatusLike[] }>(
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
      Date.now() - w.pushedAt >= this.options.ciStartMs
    ) {
      w.finish({ passed: false, checks: {}, reason: 'TEST_RUN_NO_CHECKS_REPORTED' });
    }
  }

  cancel(_queue: QueueHandle, runId: string): void {
    this.controllers.get(runId)?.abort();
  }

  // ------------------------------------------------------------------ landing

  async merge(queue: QueueHandle, run: TestRun, prNumbers: readonly number[]): Promise<MergeOutcome> {
    const branch = queue.model.branch;
    let sha = run.sha;
    if (!sha) return 'error';
    const c = await this.ctx(queue.repo);
    const head = await this.fetch(c, branch, []);
    if (!head) return 'error';
    if (head === sha || (await isAncestor(c.dir, sha, head))) return 'merged'; // landed already (asked again after a restart)
    if (!(await isAncestor(c.dir, head, sha))) {
      // The target moved since the run was built: someone else did it, everything restarts. In
      // parallel mode another lane did it: this lane's PRs land on top of it (built and pushed again).
      if (queue.model.config.mode !== 'parallel' || !this.own(queue.repo).has(head)) return 'target_moved';
      const prs = [...prNumbers];
      await this.fetch(c, branch, prs);
      const rebuilt = await buildTestCommit({
        repoDir: c.dir,
        targetBranch: branch,
        baseSha: head,
        units: prs.map((pr) => unitOf(findEntry(queue.model, pr) as Entry)),
        mergeMethod: run.mergeMethod,
        branchName: testBranchName(prs, run.id),
      });
      sha = rebuilt.sha;
      await c.git((dir, url, token) => pushRefs(dir, url, token, [`+${sha}:refs/heads/${rebuilt.branch}`]));
    }
    // Never land a head other than the one tested: a PR pushed to (or closed) since is taken out first.
    for (const n of prNumbers) {
      const entry = findEntry(queue.model, n);
      if (!entry || isTerminal(entry.state)) continue;
      const pull = await this.forge.fetchPull(queue.repo, n);
      if (!pull || pull.head.sha !== entry.pr.headSha || pull.state !== 'open') {
        await this.refreshPr(queue, n, pull ?? undefined);
        return 'target_moved';
      }
    }
    this.own(queue.repo).add(sha);
    try {
      await this.forge.client.request(
        c.owner,
        c.name,
        'PATCH /repos/{owner}/{repo}/git/refs/heads/{branch}',
        { branch, sha, force: false },
        { urgent: true },
      );
    } catch (error) {
      // 422 "Update is not a fast forward": someone pushed meanwhile. Nothing merged.
      if (statusOf(error) === 422) return 'target_moved';
      throw error;
    }
    this.targetHeads.set(`${repoKey(queue.repo)} ${branch}`, sha);
    return 'merged';
  }

  // ------------------------------------------------------------------ on the pull request

  /** The engine changed an entry's state: its commit status and comment follow (coalesced). */
  stateChanged(queue: QueueHandle, prNumber: number): void {
    const key = `${queue.id}#${prNumber}`;
    let p = this.presenting.get(key);
    if (!p) this.presenting.set(key, (p = { busy: null, again: false, timer: null }));
    const slot = p;
    if (slot.busy) {
      slot.again = true;
      return;
    }
    if (slot.timer) return;
    slot.timer = setTimeout(() => {
      slot.timer = null;
      const go = async () => {
        do {
          slot.again = false;
          try {
            await this.present(queue, prNumber);
          } catch (error) {
            this.log(`updating PR #${prNumber} of ${repoKey(queue.repo)} on GitHub failed`, error);
          }
        } while (slot.again && !this.closed);
        slot.busy = null;
      };
      slot.busy = this.track(go());
    }, 150);
  }

  private async present(queue: QueueHandle, prNumber: number): Promise<void> {
    const model = queue.model;
    const entry = findEntry(model, prNumber);
    if (!entry) return;
    const { owner, name } = queue.repo;
    const client = this.forge.client;
    const key = `${queue.id}#${prNumber}`;
    const ckey = `${queue.org}\n${repoKey(queue.repo)}#${prNumber}`;
    const run = entry.testRunId ? model.runs.find((r) => r.id === entry.testRunId) : undefined;
    const landedQuietly = entry.state === 'merged' && run && run.mergeMethod !== 'merge_commit';

    // Squash / rebase: the landed commits are not the PR's, so GitHub cannot see it merged. Close it, naming the commit.
    if (landedQuietly && !this.persisted.closed[ckey]) {
      this.persisted.closed[ckey] = true;
      this.save();
      if (!model.config.commentsEnabled) {
        await client.request(owner, name, 'POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
          issue_number: prNumber,
          body: `Merged by the Railyard merge queue: landed on \`${model.branch}\` as ${run.sha} (${run.mergeMethod}).`,
        });
      }
      await client.request(owner, name, 'PATCH /repos/{owner}/{repo}/pulls/{pull_number}', {
        pull_number: prNumber,
        state: 'closed',
      });
    }

    if (model.config.statusCheckEnabled) {
      const s = statusFor(entry, model);
      const last = this.posted.get(key);
      // On the head the queue knew; a PR pushed to while queued gets the verdict on the head it had.
      const sha = isTerminal(entry.state) && last ? last.sha : entry.pr.headSha;
      if (!last || last.sha !== sha || last.state !== s.state) {
        await client.request(owner, name, 'POST /repos/{owner}/{repo}/statuses/{sha}', {
          sha,
          state: s.state,
          description: s.description.slice(0, 140),
          context: QUEUE_STATUS_CONTEXT,
        });
        this.posted.set(key, { sha, state: s.state });
      }
    }

    if (model.config.commentsEnabled) {
      const body = commentFor(entry, model);
      if (this.commentBodies.get(ckey) === body) return;
      const id = this.persisted.comments[ckey];
      const post = async () => {
        const r = await client.request<{ id: number }>(
          owner,
          name,
          'POST /repos/{owner}/{repo}/issues/{issue_number}/comments',
          { issue_number: prNumber, body },
        );
        this.persisted.comments[ckey] = r.data.id;
        this.save();
      };
      if (id === undefined) await post();
      else {
        try {
          await client.request(owner, name, 'PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}', {
            comment_id: id,
            body,
          });
        } catch (error) {
          if (statusOf(error) !== 404) throw error;
          await post(); // someone deleted it: start a new one
        }
      }
      this.commentBodies.set(ckey, body);
    }
  }

  private async openDraftPr(queue: QueueHandle, run: TestRun, branch: string): Promise<void> {
    try {
      const r = await this.forge.client.request<{ number: number }>(
        queue.repo.owner,
        queue.repo.name,
        'POST /repos/{owner}/{repo}/pulls',
        {
          head: branch,
          base: queue.model.branch,
          draft: true,
          title: `Railyard test run ${run.id} (${[...run.basePrNumbers, ...run.prNumbers].map((n) => `#${n}`).join(', ')})`,
          body: `The Railyard merge queue tests ${run.prNumbers.map((n) => `#${n}`).join(', ')} on this branch${run.basePrNumbers.length ? `, on top of ${run.basePrNumbers.map((n) => `#${n}`).join(', ')}` : ''}. It is closed when the test run ends.`,
        },
      );
      this.persisted.draftPrs[run.id] = { repo: repoKey(queue.repo), number: r.data.number };
      this.save();
    } catch (error) {
      this.log(`opening a draft PR for ${branch} failed`, error);
    }
  }

  // ------------------------------------------------------------------ watching

  watch(queues: () => QueueHandle[], service: QueueService): void {
    this.service = service;
    this.queues = queues;
    const loop = () => {
      if (this.closed) return;
      this.looping = this.pollAll().finally(() => {
        this.looping = null;
        if (!this.closed) this.loopTimer = setTimeout(loop, this.options.pollMs);
      });
    };
    loop();
  }

  private byRepo(): Map<string, QueueHandle[]> {
    const out = new Map<string, QueueHandle[]>();
    for (const q of this.queues()) {
      if (!this.forge.serves(q.repo)) continue;
      const k = repoKey(q.repo);
      out.set(k, [...(out.get(k) ?? []), q]);
    }
    return out;
  }

  private async pollAll(): Promise<void> {
    for (const list of this.byRepo().values()) {
      if (this.closed) return;
      try {
        await this.pollRepo(list);
      } catch (error) {
        this.log(`watching ${repoKey(list[0].repo)} failed`, error);
      }
    }
    // CI: every round when polling; with webhooks only at the end of the grace period and as a slow safety net.
    const now = Date.now();
    const safetyMs = this.webhooks ? Math.max(60_000, this.options.pollMs * 10) : this.options.pollMs;
    for (const [id, w] of this.waiting) {
      if (this.forge.client.paused) break;
      if (!w.pushed) continue;
      const graceOver =
        now - w.pushedAt >= this.options.ciStartMs && w.lastLook - w.pushedAt < this.options.ciStartMs;
      if (now - w.lastLook >= safetyMs || graceOver || !this.webhooks) this.poke(id, 0);
    }
  }

  private dispatch(q: QueueHandle, event: Parameters<QueueService['dispatch']>[1]): Promise<unknown> {
    return this.service!.dispatch(q.id, event).catch((error: unknown) =>
      this.log(`queue ${q.id}: ${event.type} failed`, error),
    );
  }

  /** Target heads and test branches (git ls-remote); PR facts too when polling, or while GitHub computes mergeability. */
  private async pollRepo(queues: QueueHandle[], force = false): Promise<void> {
    const repo = queues[0].repo;
    const c = await this.ctx(repo);
    const asked = new Map(this.targetHeads);
    const heads = await c.git((dir, url, token) => remoteHeads(dir, url, token));
    for (const q of queues) {
      const key = `${repoKey(repo)} ${q.model.branch}`;
      const now = heads.get(q.model.branch);
      const before = this.targetHeads.get(key);
      // Our landing (or a push webhook) moved it while git asked: this answer may be older than that.
      if (before !== asked.get(key)) continue;
      if (now) this.targetHeads.set(key, now);
      if (before !== undefined && now && now !== before && !this.own(repo).has(now))
        await this.dispatch(q, { type: 'targetMoved' });
    }
    await this.cleanTestBranches(queues, heads, c);
    if (this.forge.client.paused) return;
    // Polling: PRs under test every round (a push must cancel them before they land), waiting ones every third.
    const round = this.round++;
    for (const q of queues) {
      for (const e of q.model.entries) {
        if (isTerminal(e.state)) continue;
        const waiting = e.state === 'pending' || e.state === 'not_ready';
        const due = this.webhooks
          ? this.mergeableDue(q, e)
          : !waiting || round % 3 === 0 || this.mergeableDue(q, e);
        if (force || due) await this.refreshPr(q, e.prNumber);
      }
    }
  }

  /**
   * GitHub answered `mergeable: null` (it computes mergeability in the background after a read or a
   * change, and sends no webhook when done): the PR is read again after 1 s, 2 s, 4 s and 8 s, and
   * the answer goes to the queues holding it as `in_progress`, as a webhook payload would. After
   * that the poll's slower backoff (mergeableDue) keeps asking.
   */
  private mergeabilityRead(repo: Repo, pull: GitHubPull): void {
    const key = `${repoKey(repo)}#${pull.number}`;
    const slot = this.unknownMergeable.get(key);
    if (!mergeableUnknown(pull)) {
      if (slot && !slot.timer) this.unknownMergeable.delete(key);
      return;
    }
    if (this.closed || slot?.timer || (slot?.tries ?? 0) >= 4) return;
    const next = slot ?? { timer: null, tries: 0 };
    const wait = 1000 * 2 ** next.tries;
    next.tries++;
    next.timer = setTimeout(() => {
      next.timer = null;
      void this.track(
        this.rereadMergeability(repo, pull.number).catch((error: unknown) =>
          this.log(`reading PR #${pull.number} of ${repoKey(repo)} again failed`, error),
        ),
      );
    }, wait);
    if (!slot && this.unknownMergeable.size > 10_000) {
      const [oldest, old] = this.unknownMergeable.entries().next().value!;
      if (old.timer) clearTimeout(old.timer);
      this.unknownMergeable.delete(oldest);
    }
    this.unknownMergeable.set(key, next);
  }

  private async rereadMergeability(repo: Repo, prNumber: number): Promise<void> {
    if (this.closed || this.forge.client.paused) return;
    const holding = (this.byRepo().get(repoKey(repo)) ?? []).filter((q) => {
      const e = findEntry(q.model, prNumber);
      return e !== undefined && !isTerminal(e.state) && e.pr.mergeability === 'in_progress';
    });
    if (holding.length === 0) return;
    const pull = await this.forge.fetchPull(repo, prNumber);
    for (const q of holding) await this.refreshPr(q, prNumber, pull ?? undefined);
  }

  /** With webhooks, PRs whose mergeability GitHub is still computing are asked again, backing off. */
  private mergeableDue(q: QueueHandle, e: Entry): boolean {
    const key = `${q.id}#${e.prNumber}`;
    if (e.pr.mergeability !== 'in_progress') {
      this.mergeableLooks.delete(key);
      return false;
    }
    const look = this.mergeableLooks.get(key) ?? { at: 0, wait: 500 };
    if (Date.now() < look.at + look.wait) return false;
    this.mergeableLooks.set(key, { at: Date.now(), wait: Math.min(look.wait * 2, 60_000) });
    return true;
  }

  /**
   * Reads a PR again (or takes it from a webhook payload) and feeds a change to the engine.
   * GitHub answers `mergeable: null` while it recomputes (after every push to the target): with
   * the same head and base, the mergeability known before stands until GitHub has an answer.
   */
  private async refreshPr(q: QueueHandle, prNumber: number, given?: GitHubPull): Promise<void> {
    const entry = findEntry(q.model, prNumber);
    if (!entry || isTerminal(entry.state)) return;
    if (given) this.forge.remember(q.repo, given);
    const pull = given ?? (await this.forge.fetchPull(q.repo, prNumber));
    const current = findEntry(q.model, prNumber);
    if (!current || isTerminal(current.state)) return;
    const fresh = pull ? factsOf(pull) : null;
    // Merged by the queue's own landing: the landing reports it.
    if (fresh?.closedAs === 'merged' && current.state === 'tests_passed') return;
    const facts = fresh ? engineFacts(fresh) : { ...current.pr, open: false };
    const p = current.pr;
    if (
      facts.mergeability === 'in_progress' &&
      p.headSha === facts.headSha &&
      p.baseBranch === facts.baseBranch &&
      p.mergeability !== 'unspecified'
    )
      facts.mergeability = p.mergeability;
    const same =
      p.headSha === facts.headSha &&
      p.title === facts.title &&
      p.author === facts.author &&
      p.baseBranch === facts.baseBranch &&
      p.mergeability === facts.mergeability &&
      p.open === facts.open &&
      p.headBranch === facts.headBranch;
    if (!same) await this.dispatch(q, { type: 'prUpdated', prNumber, pr: facts });
  }

  /** Deletes test branches whose run is over (and closes their draft PRs). */
  private async cleanTestBranches(
    queues: QueueHandle[],
    heads: Map<string, string>,
    c: RepoCtx,
  ): Promise<void> {
    const runs = new Map<string, { run: TestRun; model: QueueModel }>();
    for (const q of queues) for (const r of q.model.runs) runs.set(r.id, { run: r, model: q.model });
    const alive = (id: string) => {
      const hit = runs.get(id);
      if (!hit) return false;
      const { run, model } = hit;
      if (run.status === 'in_progress' || this.controllers.has(id)) return true;
      // A passed run's branch stays until its PRs landed (its commit must stay reachable on GitHub).
      return (
        run.status === 'succeeded' &&
        (run.mergePrNumbers ?? run.prNumbers).some((n) => {
          const e = findEntry(model, n);
          return e !== undefined && !isTerminal(e.state) && e.testRunId === run.id;
        })
      );
    };
    const doomed: string[] = [];
    for (const branch of heads.keys()) {
      const m = TEST_BRANCH_RE.exec(branch);
      if (m && !alive(m[1]!)) doomed.push(branch);
    }
    const endedDrafts = Object.entries(this.persisted.draftPrs).filter(
      ([id, d]) => d.repo === repoKey(queues[0].repo) && !alive(id),
    );
    for (const [id, d] of endedDrafts) {
      try {
        await this.forge.client.request(c.owner, c.name, 'PATCH /repos/{owner}/{repo}/pulls/{pull_number}', {
          pull_number: d.number,
          state: 'closed',
        });
      } catch (error) {
        if (statusOf(error) !== 404 && statusOf(error) !== 422)
          this.log(`closing draft PR #${d.number} failed`, error);
      }
      delete this.persisted.draftPrs[id];
      this.save();
    }
    if (doomed.length)
      await c.git((dir, url, token) =>
        pushRefs(
          dir,
          url,
          token,
          doomed.map((b) => `:refs/heads/${b}`),
        ),
      );
  }

  // ------------------------------------------------------------------ webhooks

  /** `POST /webhooks/github`: signature checked on the raw body, deliveries de-duplicated, handled after the answer. */
  readonly routes = async (app: FastifyInstance): Promise<void> => {
    await app.register(async (scope) => {
      scope.removeAllContentTypeParsers();
      const raw = (_req: unknown, body: string, done: (err: Error | null, body?: unknown) => void) =>
        done(null, body);
      scope.addContentTypeParser('*', { parseAs: 'string' }, raw);
      scope.addContentTypeParser('application/json', { parseAs: 'string' }, raw);
      scope.post('/webhooks/github', async (request, reply) => {
        const text = (r: FastifyReply, code: number, message: string) =>
          r.code(code).type('text/plain; charset=utf-8').send(message);
        const secret = this.options.webhookSecret;
        if (secret === null)
          return text(
            reply,
            404,
            'webhooks are off: start the server with --github-webhook-secret-file or RAILYARD_GITHUB_WEBHOOK_SECRET',
          );
        const body = typeof request.body === 'string' ? request.body : '';
        const signature = request.headers['x-hub-signature-256'];
        let valid = false;
        try {
          valid = typeof signature === 'string' && (await verify(secret, body, signature));
        } catch {
          valid = false;
        }
        if (!valid)
          return text(
            reply,
            401,
            'x-hub-signature-256: missing or does not match the body signed with the webhook secret',
          );
        const event = String(request.headers['x-github-event'] ?? '');
        const delivery = String(request.headers['x-github-delivery'] ?? '');
        if (delivery && this.deliveries.has(delivery))
          return text(reply, 200, `delivery ${delivery} was handled already`);
        if (jsonTooDeep(body)) return text(reply, 400, JSON_TOO_DEEP_MESSAGE);
        let payload: unknown;
        try {
          payload = JSON.parse(body);
        } catch {
          return text(reply, 400, 'body: invalid JSON');
        }
        if (delivery) {
          this.deliveries.add(delivery);
          if (this.deliveries.size > 10_000) this.deliveries.delete(this.deliveries.values().next().value!);
        }
        void this.track(
          this.onEvent(event, payload as Record<string, never>).catch((error: unknown) =>
            this.log(`webhook ${event} ${delivery} failed`, error),
          ),
        );
        return text(reply, 202, 'accepted');
      });
    });
  };

  private queuesOf(repository: { name?: string; owner?: { login?: string } } | undefined): QueueHandle[] {
    const owner = repository?.owner?.login?.toLowerCase();
    const name = repository?.name?.toLowerCase();
    if (!owner || !name) return [];
    return this.queues().filter(
      (q) => this.forge.serves(q.repo) && q.repo.owner === owner && q.repo.name === name,
    );
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  private async onEvent(event: string, p: any): Promise<void> {
    if (this.closed || !this.service) return;
    const queues = this.queuesOf(p.repository);
    if (queues.length === 0) return;
    const shaEvent = (sha: string | undefined) => {
      for (const [id, w] of this.waiting) if (w.sha === sha) this.poke(id, 100);
    };
    switch (event) {
      case 'pull_request': {
        const n = p.pull_request?.number ?? p.number;
        for (const q of queues) {
          const e = findEntry(q.model, n);
          // The payload holds the whole pull request: no need to ask again.
          if (e && !isTerminal(e.state)) await this.refreshPr(q, n, p.pull_request);
        }
        break;
      }
      case 'check_run':
        shaEvent(p.check_run?.head_sha);
        break;
      case 'check_suite':
        shaEvent(p.check_suite?.head_sha);
        break;
      case 'status':
        if (p.context !== QUEUE_STATUS_CONTEXT) shaEvent(p.sha);
        break;
      case 'push':
        if (
          typeof p.ref === 'string' &&
          p.ref.startsWith('refs/heads/') &&
          queues.some((q) => `refs/heads/${q.model.branch}` === p.ref)
        ) {
          const branch = p.ref.slice('refs/heads/'.length);
          const mine = queues.filter((q) => q.model.branch === branch);
          const key = `${repoKey(mine[0].repo)} ${branch}`;
          const before = this.targetHeads.get(key);
          const after: string | undefined = p.after;
          if (after && !/^0+$/.test(after)) this.targetHeads.set(key, after);
          if (after && after !== before && !this.own(mine[0].repo).has(after))
            for (const q of mine) await this.dispatch(q, { type: 'targetMoved' });
        }
        break;
      case 'issue_comment':
        if (p.action === 'created' && p.issue?.pull_request)
          await this.command(queues, p.issue.number, p.comment?.user?.login, String(p.comment?.body ?? ''));
        break;
    }
  }

  /** `/railyard merge [--priority P]`, `/railyard cancel`, `/railyard restart` from a user with write access. */
  private async command(
    queues: QueueHandle[],
    prNumber: number,
    user: string | undefined,
    body: string,
  ): Promise<void> {
    const m = COMMAND_RE.exec(body);
    if (!m || !user) return;
    const enabled = queues.filter((q) => q.model.config.commandsEnabled);
    if (enabled.length === 0) return;
    const repo = enabled[0].repo;
    const facts = await this.forge.getPullRequest(repo, prNumber, enabled[0].model.branch);
    if (!facts) return;
    const q = enabled.find((x) => x.model.branch === facts.baseBranch);
    if (!q) return;
    const perm = await this.forge.client.request<{ permission: string; role_name?: string }>(
      repo.owner,
      repo.name,
      'GET /repos/{owner}/{repo}/collaborators/{username}/permission',
      { username: user },
    );
    if (
      !['admin', 'write', 'maintain'].includes(perm.data.role_name ?? perm.data.permission) &&
      !['admin', 'write'].includes(perm.data.permission)
    ) {
      this.log(`/railyard ${m[1]} on #${prNumber} by ${user} ignored: no write permission`);
      return;
    }
    const service = this.service!;
    try {
      if (m[1] === 'merge') {
        const pm = /--priority[=\s]+(\S+)/.exec(m[2] ?? '');
        const raw = pm?.[1];
        const priority = raw === undefined ? undefined : /^\d+$/.test(raw) ? Number(raw) : raw.toLowerCase();
        if (priority !== undefined) resolvePriority(priority as never); // throws on a bad priority
        await service.submit(q.org, q.repo, q.model.branch, prNumber, { priority: priority as never });
      } else if (m[1] === 'cancel') {
        await service.cancel(q.org, q.repo, q.model.branch, prNumber);
      } else {
        await service.restart(q.org, q.repo, q.model.branch, prNumber);
      }
    } catch (error) {
      this.log(
        `/railyard ${m[1]} on #${prNumber} by ${user} failed: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.loopTimer) clearTimeout(this.loopTimer);
    for (const c of this.controllers.values()) c.abort();
    for (const w of this.waiting.values()) if (w.timer) clearTimeout(w.timer);
    for (const p of this.presenting.values()) if (p.timer) clearTimeout(p.timer);
    for (const u of this.unknownMergeable.values()) if (u.timer) clearTimeout(u.timer);
    await this.looping;
    await Promise.allSettled([...this.inFlight]);
    await this.saving;
  }
}
