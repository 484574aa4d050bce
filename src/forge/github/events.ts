/**
 * The GitHub driver's events: a poll loop reads the target heads and test branches of every
 * repository (git ls-remote) — a target moved by someone else restarts the runs — deletes the test
 * branches of runs that are over (and closes their draft PRs), and re-reads PRs: all of them every
 * round without webhooks, only those whose mergeability GitHub is still computing with them.
 * Webhooks (webhooks.ts) bring the rest as it happens.
 */
import type { Repo } from '../../contract/index.js';
import { findEntry, isTerminal, type Entry, type QueueModel, type TestRun } from '../../engine/index.js';
import type { DriverHost, DriverQueue } from '../types.js';
import type { GitHubCi } from './ci.js';
import { statusOf } from './client.js';
import { engineFacts, type GitHubPull } from './facts.js';
import { mergeableUnknown } from './forge.js';
import { pushRefs, remoteHeads } from './git.js';
import { WritePriority } from './writes.js';
import { repoKey, TEST_BRANCH_RE, type GitHubRuntime, type RepoCtx } from './runtime.js';

export class GitHubPolling {
  private readonly mergeableLooks = new Map<string, { at: number; wait: number }>();
  /** `<repoKey>#<pr>` → the next re-read of a PR whose mergeability GitHub was computing. */
  private readonly unknownMergeable = new Map<string, { timer: NodeJS.Timeout | null; tries: number }>();
  private loopTimer: NodeJS.Timeout | null = null;
  private looping: Promise<void> | null = null;
  private round = 0;

  constructor(
    private readonly rt: GitHubRuntime,
    private readonly ci: GitHubCi,
  ) {
    rt.forge.onPull = (repo, pull) => this.mergeabilityRead(repo, pull);
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
        this.rt.log(`watching ${repoKey(list[0].repo)} failed`, error);
      }
    }
    this.ci.pollRound();
  }

  /** Target heads and test branches (git ls-remote); PR facts too when polling, or while GitHub computes mergeability. */
  private async pollRepo(queues: DriverQueue[], force = false): Promise<void> {
    const repo = queues[0].repo;
    const c = await this.rt.ctx(repo);
    const asked = new Map(this.rt.targetHeads);
    const heads = await c.git((dir, url, token) => remoteHeads(dir, url, token));
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
    if (this.rt.forge.client.paused) return;
    // Polling: PRs under test every round (a push must cancel them before they land), waiting ones every third.
    const round = this.round++;
    for (const q of queues) {
      for (const e of q.model.entries) {
        if (isTerminal(e.state)) continue;
        const waiting = e.state === 'pending' || e.state === 'not_ready';
        const due = this.rt.webhooks
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
  mergeabilityRead(repo: Repo, pull: GitHubPull): void {
    const key = `${repoKey(repo)}#${pull.number}`;
    const slot = this.unknownMergeable.get(key);
    if (!mergeableUnknown(pull)) {
      if (slot && !slot.timer) this.unknownMergeable.delete(key);
      return;
    }
    if (this.rt.closed || slot?.timer || (slot?.tries ?? 0) >= 4) return;
    const next = slot ?? { timer: null, tries: 0 };
    const wait = 1000 * 2 ** next.tries;
    next.tries++;
    next.timer = setTimeout(() => {
      next.timer = null;
      void this.rt.track(
        this.rereadMergeability(repo, pull.number).catch((error: unknown) =>
          this.rt.log(`reading PR #${pull.number} of ${repoKey(repo)} again failed`, error),
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
    if (this.rt.closed || this.rt.forge.client.paused) return;
    const holding = (this.rt.byRepo().get(repoKey(repo)) ?? []).filter((q) => {
      const e = findEntry(q.model, prNumber);
      return e !== undefined && !isTerminal(e.state) && e.pr.mergeability === 'in_progress';
    });
    if (holding.length === 0) return;
    const pull = await this.rt.forge.fetchPull(repo, prNumber);
    for (const q of holding) await this.refreshPr(q, prNumber, pull ?? undefined);
  }

  /**
   * With webhooks, PRs whose mergeability GitHub is still computing, or that branch protection
   * holds (a review or a check may lift it), are asked again, backing off.
   */
  private mergeableDue(q: DriverQueue, e: Entry): boolean {
    const key = `${q.id}#${e.prNumber}`;
    if (e.pr.mergeability !== 'in_progress' && !e.pr.blockedBy) {
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
   * the same head and base, the mergeability (and branch-protection block) known before stands
   * until GitHub has an answer. A payload is trusted only when it is newer than every fact seen of
   * the PR (`updated_at`; deliveries arrive out of order, and can be replayed): otherwise, and for a
   * first payload that would take the PR out, the PR is read again.
   */
  async refreshPr(q: DriverQueue, prNumber: number, given?: GitHubPull): Promise<void> {
    const entry = findEntry(q.model, prNumber);
    if (!entry || isTerminal(entry.state)) return;
    let pull: GitHubPull | null | undefined = given && this.trusted(q, entry, given) ? given : undefined;
    if (pull) this.rt.forge.remember(q.repo, pull);
    pull ??= await this.rt.forge.fetchPull(q.repo, prNumber);
    const current = findEntry(q.model, prNumber);
    if (!current || isTerminal(current.state)) return;
    const fresh = pull ? await this.rt.forge.factsWithProtection(q.repo, pull) : null;
    // Merged by the queue's own landing: the landing reports it.
    if (fresh?.closedAs === 'merged' && current.state === 'tests_passed') return;
    const facts = fresh ? engineFacts(fresh) : { ...current.pr, open: false };
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
    }
    const same =
      p.headSha === facts.headSha &&
      p.title === facts.title &&
      p.author === facts.author &&
      p.baseBranch === facts.baseBranch &&
      p.mergeability === facts.mergeability &&
      p.open === facts.open &&
      p.headBranch === facts.headBranch &&
      (p.blockedBy ?? '') === (facts.blockedBy ?? '');
    if (!same) await this.rt.dispatch(q, { type: 'prUpdated', prNumber, pr: facts });
  }

  /** Whether a payload's facts may be used as they are (newer than anything seen, and not a first word that takes the PR out). */
  private trusted(q: DriverQueue, entry: Entry, given: GitHubPull): boolean {
    const key = `${q.repo.owner}/${q.repo.name}#${entry.prNumber}`.toLowerCase();
    const known = this.rt.forge.freshness.known(key);
    if (!this.rt.forge.freshness.newer(key, given.updated_at)) return false;
    const takesOut =
      given.head.sha !== entry.pr.headSha || given.state !== 'open' || given.base.ref !== entry.pr.baseBranch;
    return known || !takesOut;
  }

  /** PRs held by branch protection whose head is `sha`: a check on it changed, so is the block. */
  async checksChanged(sha: string | undefined): Promise<void> {
    if (!sha) return;
    for (const q of this.rt.queues())
      for (const e of q.model.entries)
        if (!isTerminal(e.state) && e.pr.blockedBy && e.pr.headSha === sha) await this.refreshPr(q, e.prNumber);
  }

  /** Deletes test branches whose run is over (and closes their draft PRs). */
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
    const endedDrafts = Object.entries(this.rt.persisted.draftPrs).filter(
      ([id, d]) => d.repo === repoKey(queues[0].repo) && !alive(id),
    );
    for (const [id, d] of endedDrafts) {
      try {
        await this.rt.forge.client.write(
          c.owner,
          c.name,
          'PATCH /repos/{owner}/{repo}/pulls/{pull_number}',
          { pull_number: d.number, state: 'closed' },
          { priority: WritePriority.background, key: `draft close ${id}` },
        );
      } catch (error) {
        if (statusOf(error) !== 404 && statusOf(error) !== 422)
          this.rt.log(`closing draft PR #${d.number} failed`, error);
      }
      delete this.rt.persisted.draftPrs[id];
      this.rt.save();
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

  async close(): Promise<void> {
    if (this.loopTimer) clearTimeout(this.loopTimer);
    for (const u of this.unknownMergeable.values()) if (u.timer) clearTimeout(u.timer);
    await this.looping;
  }
}
