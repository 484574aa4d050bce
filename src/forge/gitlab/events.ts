/**
 * The GitLab driver's events: a poll loop reads the target heads and test branches of every
 * project (git ls-remote) — a target moved by someone else restarts the runs — deletes the test
 * branches of runs that are over, and re-reads MRs: all of them every round without webhooks
 * (those under test every round, waiting ones every third), only those GitLab is still checking
 * with them. Hooks (webhooks.ts) bring the rest as it happens.
 */
import { findEntry, isTerminal, type Entry, type QueueModel, type TestRun } from '../../engine/index.js';
import type { DriverHost, DriverQueue } from '../types.js';
import type { GitLabCi } from './ci.js';
import { engineFacts, type GitLabMr } from './facts.js';
import { pushRefs, remoteHeads } from './git.js';
import { repoKey, TEST_BRANCH_RE, type GitLabRuntime, type RepoCtx } from './runtime.js';

export class GitLabPolling {
  private readonly mergeableLooks = new Map<string, { at: number; wait: number }>();
  private loopTimer: NodeJS.Timeout | null = null;
  private looping: Promise<void> | null = null;
  private round = 0;

  constructor(
    private readonly rt: GitLabRuntime,
    private readonly ci: GitLabCi,
  ) {}

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

  private async pollRepo(queues: DriverQueue[]): Promise<void> {
    const repo = queues[0]!.repo;
    const c = await this.rt.ctx(repo);
    const asked = new Map(this.rt.targetHeads);
    const heads = await c.git((dir, url, token) => remoteHeads(dir, url, token));
    for (const q of queues) {
      const key = `${repoKey(repo)} ${q.model.branch}`;
      const now = heads.get(q.model.branch);
      const before = this.rt.targetHeads.get(key);
      // Our landing (or a push hook) moved it while git asked: this answer may be older than that.
      if (before !== asked.get(key)) continue;
      if (now) this.rt.targetHeads.set(key, now);
      if (before !== undefined && now && now !== before && !this.rt.own(repo).has(now))
        await this.rt.dispatch(q, { type: 'targetMoved' });
    }
    await this.cleanTestBranches(queues, heads, c);
    if (this.rt.client.paused) return;
    const round = this.round++;
    for (const q of queues) {
      for (const e of q.model.entries) {
        if (isTerminal(e.state)) continue;
        const waiting = e.state === 'pending' || e.state === 'not_ready';
        const due = this.rt.webhooks
          ? this.mergeableDue(q, e)
          : !waiting || round % 3 === 0 || this.mergeableDue(q, e);
        if (due) await this.refreshMr(q, e.prNumber);
      }
    }
  }

  /** MRs GitLab is still checking (`in_progress`) are asked again, backing off from 0.5 s to 60 s. */
  private mergeableDue(q: DriverQueue, e: Entry): boolean {
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
   * Reads an MR again and feeds a change to the engine. While GitLab re-checks mergeability (after
   * every push to the target), the mergeability known before stands for the same head and target.
   */
  async refreshMr(q: DriverQueue, iid: number, given?: GitLabMr): Promise<void> {
    const entry = findEntry(q.model, iid);
    if (!entry || isTerminal(entry.state)) return;
    const fresh = await this.rt.source.facts(q.repo, iid, given);
    const current = findEntry(q.model, iid);
    if (!current || isTerminal(current.state)) return;
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
    if (!same) await this.rt.dispatch(q, { type: 'prUpdated', prNumber: iid, pr: facts });
  }

  /** Deletes test branches whose run is over. */
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
      // A passed run's branch stays until its MRs landed (its commit must stay reachable on GitLab).
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
    await this.looping;
  }
}
