/**
 * The events role of the remote forges (GitHub, GitLab), polling half: a loop reads the target
 * heads and test branches of every repository (git ls-remote) — a target moved by someone else
 * restarts the runs — deletes the test branches of runs that are over, and re-reads every PR that
 * is testing or waiting every round (in one list read where the driver has one), webhooks or not (a lost delivery must not stall the queue;
 * the reads are conditional, so an unchanged PR costs a 304). New PR facts go to the engine only when they differ; while the
 * forge recomputes mergeability (after every push to the target) what was known stands for the same
 * head and base. Each driver's events.ts says how a PR is read; webhooks bring the rest.
 */
import { findEntry, isTerminal, type PrFacts, type QueueModel, type TestRun } from '../../engine/index.js';
import type { DriverHost, DriverQueue, ForgePrFacts } from '../types.js';
import type { CiWaiter } from './ci-wait.js';
import type { RemoteGit } from './remote-git.js';
import { repoKey, TEST_BRANCH_RE, type PersistedBase, type RemoteRuntime, type RepoCtx } from './runtime.js';

/** New facts of a PR as a driver read them: the engine's facts, and how it was closed when it is. */
export type ReadFacts = ForgePrFacts;

export abstract class RemotePolling {
  private loopTimer: NodeJS.Timeout | null = null;
  private looping: Promise<void> | null = null;

  constructor(
    protected readonly rt: RemoteRuntime<PersistedBase>,
    private readonly ci: CiWaiter,
    private readonly git: Pick<RemoteGit, 'pushRefs' | 'remoteHeads'>,
  ) {}

  /** Reads a PR again (or takes `given`, a webhook payload) and feeds a change to the engine. */
  abstract refresh(q: DriverQueue, prNumber: number, given?: unknown): Promise<void>;

  /**
   * The open PRs among `numbers` in one read (payloads by number, for `refresh`), or null when the
   * driver reads PRs one by one. A PR missing from the answer is read alone (closed, merged, gone).
   */
  protected listOpen(_repo: DriverQueue['repo'], _numbers: number[]): Promise<Map<number, unknown> | null> {
    return Promise.resolve(null);
  }

  /** What else goes with the test branches of ended runs (GitHub closes their draft PRs). */
  protected cleanEnded(
    _queues: DriverQueue[],
    _alive: (runId: string) => boolean,
    _c: RepoCtx,
  ): Promise<void> {
    return Promise.resolve();
  }

  start(host: DriverHost): void {
    this.rt.host = host;
    const loop = () => {
      if (this.rt.closed) return;
      this.looping = this.pollAll().finally(() => {
        this.looping = null;
        if (!this.rt.closed) this.loopTimer = setTimeout(loop, this.rt.options.pollMs);
      });
    };
    loop();
  }

  private async pollAll(): Promise<void> {
    for (const list of this.rt.byRepo().values()) {
      if (this.rt.closed) return;
      try {
        await this.pollRepo(list);
      } catch (error) {
        this.rt.log(`watching ${repoKey(list[0]!.repo)} failed`, error);
      }
    }
    this.ci.pollRound();
  }

  /** Target heads and test branches (git ls-remote); PR facts too when polling, or while the forge decides. */
  private async pollRepo(queues: DriverQueue[]): Promise<void> {
    const repo = queues[0]!.repo;
    const c = await this.rt.ctx(repo);
    const asked = new Map(this.rt.targetHeads);
    const heads = await c.git((dir, url, token) => this.git.remoteHeads(dir, url, token));
    for (const q of queues) {
      const key = `${repoKey(repo)} ${q.model.branch}`;
      const now = heads.get(q.model.branch);
      const before = this.rt.targetHeads.get(key);
      // Our landing (or a push webhook) moved it while git asked: this answer may be older than that.
      if (before !== asked.get(key)) continue;
      if (now) this.rt.targetHeads.set(key, now);
      if (before !== undefined && now && now !== before && !this.rt.own(repo).has(now))
        await this.rt.dispatch(q, { type: 'targetMoved' });
    }
    await this.cleanTestBranches(queues, heads, c);
    if (this.rt.paused) return;
    // Every PR still in the queue, every round, with webhooks too: webhooks only make it faster.
    const numbers = [
      ...new Set(
        queues.flatMap((q) => q.model.entries.filter((e) => !isTerminal(e.state)).map((e) => e.prNumber)),
      ),
    ];
    if (!numbers.length) return;
    const listed = await this.listOpen(repo, numbers).catch((error: unknown) => {
      this.rt.log(`listing the open PRs of ${repoKey(repo)} failed`, error);
      return null;
    });
    for (const q of queues) {
      for (const e of q.model.entries) {
        if (isTerminal(e.state)) continue;
        await this.refresh(q, e.prNumber, listed?.get(e.prNumber));
      }
    }
  }

  /**
   * Feeds a PR's newly read facts (null: it is gone) to the engine when they differ from the
   * entry's. While the forge answers "still computing" for the same head and base, the
   * mergeability (and branch-rule block) known before stands.
   */
  protected async feed(q: DriverQueue, prNumber: number, fresh: ReadFacts | null): Promise<void> {
    const current = findEntry(q.model, prNumber);
    if (!current || isTerminal(current.state)) return;
    // Merged by the queue's own landing: the landing reports it.
    if (fresh?.closedAs === 'merged' && current.state === 'tests_passed') return;
    const facts: PrFacts = fresh ? withoutClosedAs(fresh) : { ...current.pr, open: false };
    const p = current.pr;
    if (
      facts.mergeability === 'in_progress' &&
      p.headSha === facts.headSha &&
      p.baseBranch === facts.baseBranch &&
      p.mergeability !== 'unspecified'
    ) {
      facts.mergeability = p.mergeability;
      if (p.blockedBy) facts.blockedBy = p.blockedBy;
      else delete facts.blockedBy;
      if (p.conflict) facts.conflict = p.conflict;
      else delete facts.conflict;
    }
    const same =
      p.headSha === facts.headSha &&
      p.title === facts.title &&
      p.author === facts.author &&
      p.baseBranch === facts.baseBranch &&
      p.mergeability === facts.mergeability &&
      p.open === facts.open &&
      p.headBranch === facts.headBranch &&
      (p.blockedBy ?? '') === (facts.blockedBy ?? '') &&
      p.stackedOn === facts.stackedOn &&
      JSON.stringify(p.conflict ?? null) === JSON.stringify(facts.conflict ?? null);
    if (!same) await this.rt.dispatch(q, { type: 'prUpdated', prNumber, pr: facts });
  }

  /** PRs held by branch rules whose head is `sha`: a check on it changed, so may the block. */
  async checksChanged(sha: string | undefined): Promise<void> {
    if (!sha) return;
    for (const q of this.rt.queues())
      for (const e of q.model.entries)
        if (!isTerminal(e.state) && e.pr.blockedBy && e.pr.headSha === sha) await this.refresh(q, e.prNumber);
  }

  /** Deletes test branches whose run is over (and what goes with them: cleanEnded). */
  private async cleanTestBranches(
    queues: DriverQueue[],
    heads: Map<string, string>,
    c: RepoCtx,
  ): Promise<void> {
    const runs = new Map<string, { run: TestRun; model: QueueModel }>();
    for (const q of queues) for (const r of q.model.runs) runs.set(r.id, { run: r, model: q.model });
    const alive = (id: string) => {
      const hit = runs.get(id);
      if (!hit) return false;
      const { run, model } = hit;
      if (run.status === 'in_progress' || this.rt.busy.has(id)) return true;
      // A passed run's branch stays until its PRs landed (its commit must stay reachable on the forge).
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
    await this.cleanEnded(queues, alive, c);
    if (doomed.length)
      await c.git((dir, url, token) =>
        this.git.pushRefs(
          dir,
          url,
          token,
          doomed.map((b) => `:refs/heads/${b}`),
        ),
      );
  }

  async close(): Promise<void> {
    if (this.loopTimer) clearTimeout(this.loopTimer);
    await this.looping;
  }
}

/** The engine's facts: how a closed PR ended becomes `merged` (a stack's PRs above it leave with STACKED_PR_MEMBER_MERGED). */
function withoutClosedAs(f: ReadFacts): PrFacts {
  const { closedAs, ...facts } = f;
  return closedAs === 'merged' ? { ...facts, merged: true } : facts;
}

/** The engine's part of a forge's PR facts (what is stored with the entry), with how it was closed. */
export function readFacts(f: ForgePrFacts): ReadFacts {
  return {
    headSha: f.headSha,
    headBranch: f.headBranch,
    title: f.title,
    author: f.author,
    baseBranch: f.baseBranch,
    mergeability: f.mergeability,
    open: f.open,
    ...(f.blockedBy ? { blockedBy: f.blockedBy } : {}),
    ...(f.conflict ? { conflict: f.conflict } : {}),
    ...(f.stackedOn !== undefined ? { stackedOn: f.stackedOn } : {}),
    ...(f.closedAs ? { closedAs: f.closedAs } : {}),
  };
}
