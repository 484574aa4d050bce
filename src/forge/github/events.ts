/**
 * The GitHub driver's events, polling half (the loop itself is the remote forges' shared
 * ../shared/polling.ts): how a PR is read again — a poll round lists the open PRs in one read and
 * reads alone only those whose mergeability matters or that changed — a webhook payload is used only when newer than
 * every fact seen of the PR, GitHub's `mergeable: null` (computed in the background, no webhook
 * when done) is asked again after 1, 2, 4 and 8 s — and the draft PRs of ended runs are closed.
 * Webhooks (webhooks.ts) bring the rest as it happens.
 */
import type { Repo } from '../../contract/index.js';
import { findEntry, IN_RUN, isTerminal, type Entry } from '../../engine/index.js';
import type { DriverQueue } from '../types.js';
import { mergesInCache } from '../shared/conflicts.js';
import { readFacts, RemotePolling } from '../shared/polling.js';
import type { GitHubCi } from './ci.js';
import { statusOf } from './client.js';
import type { GitHubPull } from './facts.js';
import { mergeableUnknown } from './source.js';
import { pushRefs, remoteHeads } from './git.js';
import { WritePriority } from './writes.js';
import { repoKey, type GitHubRuntime, type RepoCtx } from './runtime.js';

export class GitHubPolling extends RemotePolling {
  /** `<repoKey>#<pr>` → the next re-read of a PR whose mergeability GitHub was computing. */
  private readonly unknownMergeable = new Map<string, { timer: NodeJS.Timeout | null; tries: number }>();

  constructor(
    private readonly gh: GitHubRuntime,
    ci: GitHubCi,
  ) {
    super(gh, ci, { pushRefs, remoteHeads });
    gh.forge.onPull = (repo, pull) => this.mergeabilityRead(repo, pull);
  }

  /** PRs as the poll's list answered them (GitHub's list says nothing of mergeability). */
  private readonly listed = new WeakSet<GitHubPull>();

  refresh(q: DriverQueue, prNumber: number, given?: unknown): Promise<void> {
    const pull = given as GitHubPull | undefined;
    if (pull && this.listed.has(pull)) return this.refreshListed(q, prNumber, pull);
    return this.refreshPr(q, prNumber, pull);
  }

  /**
   * The poll's round lists the repository's open PRs in one conditional read (`GET
   * /repos/{o}/{r}/pulls?state=open`, 100 newest): a PR missing from it is read alone.
   */
  protected override async listOpen(repo: Repo): Promise<Map<number, unknown>> {
    const list = await this.gh.forge.client.getCached<GitHubPull[]>(
      repo.owner,
      repo.name,
      'GET /repos/{owner}/{repo}/pulls',
      {
        state: 'open',
        per_page: 100,
      },
    );
    const open = new Map<number, unknown>();
    for (const pull of list) {
      this.listed.add(pull);
      open.set(pull.number, pull);
    }
    return open;
  }

  /**
   * A PR the poll's list shows: one in a test run whose head, base, title and draft flag are what
   * the queue knows needs nothing more (its mergeability onto the target does not matter while it
   * is tested; landing reads it again). Any other is read alone (a conditional GET), since only
   * that read says whether it merges.
   */
  private refreshListed(q: DriverQueue, prNumber: number, pull: GitHubPull): Promise<void> {
    const entry = findEntry(q.model, prNumber);
    if (!entry || isTerminal(entry.state)) return Promise.resolve();
    const unchanged =
      pull.state === 'open' &&
      !pull.draft &&
      pull.head.sha === entry.pr.headSha &&
      pull.head.ref === entry.pr.headBranch &&
      pull.base.ref === entry.pr.baseBranch &&
      pull.title === entry.pr.title;
    if (!unchanged) return this.refreshPr(q, prNumber);
    if (IN_RUN.has(entry.state)) return Promise.resolve();
    const known = this.stillKnown(q, entry, pull);
    if (known === true) return Promise.resolve();
    return known === 'target moved' ? this.mergesStill(q, entry, pull) : this.refreshPr(q, prNumber);
  }

  /**
   * A waiting PR GitHub called mergeable, unchanged, whose target moved (a landing ahead of it):
   * merged onto the new head in the bare cache instead of read, since GitHub would answer
   * `mergeable: null` and compute it again anyway. Clean, GitHub's answer stands for the new head;
   * a conflict (or git unable to tell) reads the PR, so it waits named as before.
   */
  private async mergesStill(q: DriverQueue, entry: Entry, pull: GitHubPull): Promise<void> {
    const target = this.gh.targetHeads.get(`${repoKey(q.repo)} ${q.model.branch}`);
    const waiting = q.model.entries
      .filter((e) => !isTerminal(e.state) && !IN_RUN.has(e.state))
      .map((e) => e.prNumber);
    if (
      target !== undefined &&
      (await mergesInCache(this.gh, q.repo, entry.prNumber, q.model.branch, pull.head.sha, target, waiting))
    ) {
      this.gh.forge.stillMergesAt(q.repo, entry.prNumber, pull.updated_at!, target);
      return;
    }
    return this.refreshPr(q, entry.prNumber);
  }

  /**
   * Whether a waiting PR the list shows unchanged merges as it did at its last read: GitHub had
   * an answer then (forge.mergeabilityAt: not still computing, not held by branch rules, whose
   * checks and reviews change without the list showing it), nothing about the PR changed since
   * (`updated_at`), and the target has not moved. Only a target that moved (or the PR) changes
   * whether it merges: 'target moved' when that is all that changed for a PR that merged.
   */
  private stillKnown(q: DriverQueue, entry: Entry, pull: GitHubPull): boolean | 'target moved' {
    const known = this.gh.forge.mergeabilityAt(q.repo, entry.prNumber);
    const same =
      known !== undefined &&
      !entry.pr.blockedBy &&
      (entry.pr.mergeability === 'mergeable' || entry.pr.mergeability === 'not_mergeable') &&
      typeof pull.updated_at === 'string' &&
      pull.updated_at === known.updatedAt &&
      pull.base.ref === q.model.branch;
    if (!same) return false;
    if (known.target === this.gh.targetHeads.get(`${repoKey(q.repo)} ${q.model.branch}`)) return true;
    // Only a mergeable PR is merged in the cache: one that conflicted is read (it may merge now).
    return entry.pr.mergeability === 'mergeable' ? 'target moved' : false;
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
    if (this.gh.closed || slot?.timer || (slot?.tries ?? 0) >= 4) return;
    const next = slot ?? { timer: null, tries: 0 };
    const wait = 1000 * 2 ** next.tries;
    next.tries++;
    next.timer = setTimeout(() => {
      next.timer = null;
      void this.gh.track(
        this.rereadMergeability(repo, pull.number).catch((error: unknown) =>
          this.gh.log(`reading PR #${pull.number} of ${repoKey(repo)} again failed`, error),
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
    if (this.gh.closed || this.gh.forge.client.paused) return;
    const holding = (this.gh.byRepo().get(repoKey(repo)) ?? []).filter((q) => {
      const e = findEntry(q.model, prNumber);
      return e !== undefined && !isTerminal(e.state) && e.pr.mergeability === 'in_progress';
    });
    if (holding.length === 0) return;
    const pull = await this.gh.forge.fetchPull(repo, prNumber);
    for (const q of holding) await this.refreshPr(q, prNumber, pull ?? undefined);
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
    if (pull) this.gh.forge.remember(q.repo, pull);
    pull ??= await this.gh.forge.fetchPull(q.repo, prNumber);
    const fresh = pull ? await this.gh.forge.factsWithProtection(q.repo, pull) : null;
    await this.feed(q, prNumber, fresh ? readFacts(fresh) : null);
  }

  /** Whether a payload's facts may be used as they are (newer than anything seen, and not a first word that takes the PR out). */
  private trusted(q: DriverQueue, entry: Entry, given: GitHubPull): boolean {
    const key = `${q.repo.owner}/${q.repo.name}#${entry.prNumber}`.toLowerCase();
    const known = this.gh.forge.freshness.known(key);
    if (!this.gh.forge.freshness.newer(key, given.updated_at)) return false;
    const takesOut =
      given.head.sha !== entry.pr.headSha || given.state !== 'open' || given.base.ref !== entry.pr.baseBranch;
    return known || !takesOut;
  }

  /** Closes the draft PRs of ended runs. */
  protected override async cleanEnded(
    queues: DriverQueue[],
    alive: (runId: string) => boolean,
    c: RepoCtx,
  ): Promise<void> {
    const endedDrafts = Object.entries(this.gh.persisted.draftPrs).filter(
      ([id, d]) => d.repo === repoKey(queues[0].repo) && !alive(id),
    );
    for (const [id, d] of endedDrafts) {
      try {
        await this.gh.forge.client.write(
          c.owner,
          c.name,
          'PATCH /repos/{owner}/{repo}/pulls/{pull_number}',
          { pull_number: d.number, state: 'closed' },
          { priority: WritePriority.background, key: `draft close ${id}` },
        );
      } catch (error) {
        if (statusOf(error) !== 404 && statusOf(error) !== 422)
          this.gh.log(`closing draft PR #${d.number} failed`, error);
      }
      delete this.gh.persisted.draftPrs[id];
      this.gh.save();
    }
  }

  override async close(): Promise<void> {
    for (const u of this.unknownMergeable.values()) if (u.timer) clearTimeout(u.timer);
    await super.close();
  }
}
