// Branches and pull requests of the GitHub emulator: what a branch update does (push event, a PR's
// head and `refs/pull/N/head` moved, a PR whose head reaches its base marked merged, a PR whose head
// branch is deleted closed, CI started), opening, closing, editing and merging PRs, comments, and
// `mergeable` / `mergeable_state` computed in the background as GitHub does (at open, edit and read).
import type { Ci } from './ci.js';
import type { Hooks } from './hooks.js';
import { commentPayload, prFacts, pullRequestPayload, pushPayload } from './payloads.js';
import { pullJson, type CommentFacts } from './json.js';
import type { Protection } from './protection.js';
import { branchChanges } from '../emulator-git/index.js';
import { commitEnv, ZERO, type Pr, type PrShown, type Repo, type World } from './world.js';

export class Prs {
  constructor(
    private readonly w: World,
    private readonly hooks: Hooks,
    private readonly ci: Ci,
    private readonly protection: Protection,
  ) {}

  /** Reads the branches and reacts to every change since the last look (push events, PR updates, CI). Call under the repo lock. */
  async syncRefs(r: Repo, actor: string): Promise<void> {
    const now = await this.w.git.heads(r.dir);
    const changes = branchChanges(r.refs, now);
    r.refs = now;
    for (const c of changes) await this.onBranchChange(r, c.branch, c.before, c.after, actor);
  }

  private async onBranchChange(
    r: Repo,
    branch: string,
    before: string | null,
    after: string | null,
    actor: string,
  ): Promise<void> {
    r.pushedAt = Date.now();
    this.w.branchMoves.push({ at: r.pushedAt, owner: r.owner, repo: r.name, branch, before, after });
    const forced = before !== null && after !== null && !(await this.w.isAncestor(r, before, after));
    if (this.hooks.active)
      this.hooks.emit(r, 'push', pushPayload(this.w, r, branch, before, after, forced, actor));
    for (const p of r.prs.values()) {
      if (p.state !== 'open') continue;
      if (p.head === branch) {
        if (after === null) {
          this.setClosed(r, p, actor);
        } else if (p.headSha !== after) {
          const old = p.headSha;
          p.headSha = after;
          p.heads.add(after);
          p.updatedAt = Date.now();
          await this.w.git.updateRef(r.dir, `refs/pull/${p.number}/head`, after);
          this.event(r, p, 'synchronize', actor, { before: old, after });
        }
      } else if (p.base === branch && after !== null && (await this.w.isAncestor(r, p.headSha, after))) {
        // The head is now part of the base (a fast-forward or a pushed merge): GitHub marks the PR merged.
        this.setMerged(r, p, actor, after);
      }
    }
    if (after !== null) this.ci.onPush(r, branch, after);
  }

  /** A commit by `author` on `branch` (created from `from`, default the default branch) changing `files`. */
  pushCommit(
    r: Repo,
    branch: string,
    files: Record<string, string | null>,
    opts: { message?: string; from?: string; author: string },
  ): Promise<string> {
    return this.w.locked(r, async () => {
      let parent = await this.w.branchSha(r, branch);
      const old = parent;
      if (parent === null) {
        const from = opts.from ?? r.defaultBranch;
        parent = (await this.w.branchSha(r, from)) ?? (await this.w.resolve(r, from));
        if (parent === null) throw new Error(`pushCommit: no branch or commit ${from}`);
      }
      const message = opts.message ?? `Update ${Object.keys(files).join(', ')}`;
      const sha = await this.w.commitFiles(r, parent, files, message, opts.author);
      await this.w.git.updateRef(r.dir, `refs/heads/${branch}`, sha, old ?? ZERO);
      await this.syncRefs(r, opts.author);
      return sha;
    });
  }

  /** `pull_request` with `action` for the PR as it is now. */
  event(r: Repo, p: Pr, action: string, actor: string, extra: Record<string, unknown> = {}): void {
    this.hooks.emit(r, 'pull_request', pullRequestPayload(this.w, r, p, action, actor, extra));
  }

  async open(
    r: Repo,
    o: { head: string; base: string; title: string; body: string | null; user: string; draft: boolean },
  ): Promise<Pr> {
    const headSha = (await this.w.branchSha(r, o.head))!;
    const number = r.nextNumber++;
    const now = Date.now();
    const p: Pr = {
      id: 9_000_000 + this.w.id(),
      number,
      title: o.title,
      body: o.body,
      user: o.user,
      head: o.head,
      headSha,
      base: o.base,
      state: 'open',
      draft: o.draft,
      merged: false,
      mergedAt: null,
      mergedBy: null,
      closedAt: null,
      createdAt: now,
      updatedAt: now,
      mergeCommitSha: null,
      mergeKey: null,
      conflict: false,
      pendingKey: null,
      pending: null,
      heads: new Set([headSha]),
      reviews: [],
      unresolvedConversations: 0,
      shown: [],
    };
    r.prs.set(number, p);
    r.openIssues++;
    await this.w.git.updateRef(r.dir, `refs/pull/${number}/head`, headSha);
    this.event(r, p, 'opened', o.user);
    void this.computeMergeability(r, p).catch(() => undefined);
    return p;
  }

  setClosed(r: Repo, p: Pr, actor: string): void {
    p.state = 'closed';
    p.closedAt = Date.now();
    p.updatedAt = p.closedAt;
    r.openIssues = Math.max(0, r.openIssues - 1);
    p.shown.push({ at: p.closedAt, kind: 'closed', merged: p.merged });
    this.event(r, p, 'closed', actor);
  }

  /** The PR merged as `sha` by `actor` (and so closed). */
  setMerged(r: Repo, p: Pr, actor: string, sha: string): void {
    p.merged = true;
    p.mergedAt = Date.now();
    p.mergedBy = actor;
    p.mergeCommitSha = sha;
    p.shown.push({ at: p.mergedAt, kind: 'merged' });
    this.setClosed(r, p, actor);
  }

  reopen(r: Repo, p: Pr, actor: string): void {
    p.state = 'open';
    p.closedAt = null;
    r.openIssues++;
    this.event(r, p, 'reopened', actor);
  }

  setDraft(r: Repo, p: Pr, draft: boolean): void {
    if (p.draft === draft) return;
    p.draft = draft;
    p.updatedAt = Date.now();
    this.event(r, p, draft ? 'converted_to_draft' : 'ready_for_review', p.user);
  }

  /** Moves the PR to another base branch (`pull_request` edited with `changes.base`). */
  async setBase(r: Repo, p: Pr, base: string, actor: string): Promise<void> {
    if (p.base === base) return;
    if ((await this.w.branchSha(r, base)) === null) throw new Error(`setBase: no branch ${base}`);
    const oldSha = (await this.w.branchSha(r, p.base)) ?? ZERO;
    const changes = { base: { ref: { from: p.base }, sha: { from: oldSha } } };
    p.base = base;
    p.updatedAt = Date.now();
    this.event(r, p, 'edited', actor, { changes });
    void this.computeMergeability(r, p).catch(() => undefined);
  }

  addComment(r: Repo, p: Pr, user: string, body: string): CommentFacts {
    const now = Date.now();
    const c: CommentFacts = {
      id: 7_000_000 + this.w.id(),
      number: p.number,
      user,
      body,
      createdAt: now,
      updatedAt: now,
    };
    r.comments.set(c.id, c);
    p.shown.push({ at: now, kind: 'comment', id: c.id, body, edit: false });
    this.hooks.emit(r, 'issue_comment', commentPayload(this.w, r, p, c));
    return c;
  }

  editComment(r: Repo, c: CommentFacts, body: string): void {
    c.body = body;
    c.updatedAt = Date.now();
    r.prs.get(c.number)?.shown.push({ at: c.updatedAt, kind: 'comment', id: c.id, body: c.body, edit: true });
  }

  /**
   * Merges the PR into its base (`merge`, `squash` or `rebase`) as `actor` and moves the base
   * (push and PR events, CI); null when it does not merge cleanly. Call under the repo lock.
   */
  async merge(
    r: Repo,
    p: Pr,
    method: 'merge' | 'squash' | 'rebase',
    message: string,
    actor: string,
  ): Promise<string | null> {
    const baseSha = (await this.w.branchSha(r, p.base))!;
    const env = commitEnv(actor);
    let newSha: string | null;
    if (method === 'rebase') newSha = await this.w.git.rebase(r.dir, this.w.root, baseSha, p.headSha, env);
    else {
      const tree = await this.w.git.mergeTree(r.dir, baseSha, p.headSha);
      if (tree === null) return null;
      const parents = method === 'merge' ? ['-p', baseSha, '-p', p.headSha] : ['-p', baseSha];
      newSha = await this.w.git.git(r.dir, ['commit-tree', tree, ...parents, '-m', message], { env });
    }
    if (newSha === null) return null;
    await this.w.git.updateRef(r.dir, `refs/heads/${p.base}`, newSha, baseSha);
    this.setMerged(r, p, actor, newSha);
    await this.syncRefs(r, actor);
    return newSha;
  }

  /**
   * GitHub's mergeability job for the PR against its base's head now, started unless it ran or
   * runs for that pair. GitHub's REST reference (pulls/get) says the test merge is made when a PR
   * is read, created or edited; a base that moves starts nothing: the next read answers null.
   */
  async computeMergeability(r: Repo, p: Pr): Promise<void> {
    const baseSha = (await this.w.branchSha(r, p.base)) ?? ZERO;
    const key = `${baseSha}:${p.headSha}`;
    if (p.state !== 'open' || p.mergeKey === key) return;
    if (p.pendingKey === key && p.pending) {
      if (r.mergeabilityDelayMs === 0) await p.pending;
      return;
    }
    p.pendingKey = key;
    const delay = r.mergeabilityDelayMs;
    p.pending = this.w.track(
      (async () => {
        if (delay > 0) await new Promise((done) => setTimeout(done, delay));
        p.conflict = (await this.w.git.mergeTree(r.dir, baseSha, p.headSha)) === null;
        p.mergeKey = key;
      })(),
    );
  }

  /** The PR as the API answers it: a GET (`lazy`) starts the mergeability job, whose answer is null until done. */
  async answer(r: Repo, p: Pr, lazy: boolean) {
    const baseSha = (await this.w.branchSha(r, p.base)) ?? ZERO;
    const key = `${baseSha}:${p.headSha}`;
    if (lazy) await this.computeMergeability(r, p);
    let mergeable: boolean | null = null;
    let state = 'unknown';
    if (p.state === 'open' && p.mergeKey === key) {
      mergeable = !p.conflict;
      if (p.conflict) state = 'dirty';
      else if (p.draft) state = 'draft';
      else if (this.protection.blockedBy(r, p).length > 0) state = 'blocked';
      else if (this.ci.combinedState(r, p.headSha) === 'failure') state = 'unstable';
      else state = 'clean';
    }
    return pullJson(this.w.urls, r, prFacts(r, p, baseSha, mergeable, state));
  }

  /**
   * When GitHub first showed the PR's final state: a final commit status of `context` on one of its
   * heads, the PR closed, a comment matching `comment`; `all` is the latest of the three.
   */
  finalShownAt(
    p: Pr,
    opts: { context?: string; comment?: RegExp },
  ): { status: number | null; closed: number | null; comment: number | null; all: number | null } {
    const context = opts.context ?? 'railyard/merge-queue';
    const final = opts.comment ?? /\b(merged|failed|cancelled)\b/i;
    let status: number | null = null;
    let closed: number | null = null;
    let comment: number | null = null;
    for (const s of p.shown as PrShown[]) {
      if (status === null && s.kind === 'status' && s.context === context && s.state !== 'pending')
        status = s.at;
      if (closed === null && s.kind === 'closed') closed = s.at;
      if (comment === null && s.kind === 'comment' && final.test(s.body)) comment = s.at;
    }
    const all =
      status !== null && closed !== null && comment !== null ? Math.max(status, closed, comment) : null;
    return { status, closed, comment, all };
  }
}
