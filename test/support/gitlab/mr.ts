// Branches and merge requests of the GitLab emulator: what a branch update does (Push Hook, MR
// heads and `refs/merge-requests/N/head` moved, forks followed, an MR whose head reaches its target
// marked merged, CI started), and `detailed_merge_status` computed lazily as GitLab does.
import type { Ci } from './ci.js';
import type { Hooks } from './hooks.js';
import { branchChanges } from '../emulator-git/index.js';
import { mrPayload, notePayload, pushPayload } from './payloads.js';
import { ZERO, type MergeBlocker, type Mr, type Note, type Project, type User, type World } from './world.js';

export class Mrs {
  constructor(
    private readonly w: World,
    private readonly hooks: Hooks,
    private readonly ci: Ci,
  ) {}

  /** Reads the branches and reacts to every change since the last look. Call under the project lock. */
  async syncRefs(p: Project, actor: User): Promise<void> {
    const now = await this.w.heads(p);
    const changes = branchChanges(p.refs, now);
    p.refs = now;
    for (const c of changes) await this.onBranchChange(p, c.branch, c.before, c.after, actor);
  }

  private async onBranchChange(
    p: Project,
    branch: string,
    before: string | null,
    after: string | null,
    actor: User,
  ) {
    p.lastActivityAt = Date.now();
    if (this.hooks.active) this.hooks.emit('Push Hook', pushPayload(this.w, p, branch, before, after, actor));
    // MRs whose source is this branch of this project (forks included: their MRs live in the target).
    for (const target of this.w.projects.values()) {
      for (const mr of target.mrs.values()) {
        if (mr.state !== 'opened') continue;
        if (mr.sourceProjectId === p.id && mr.sourceBranch === branch && after !== null && mr.sha !== after) {
          const old = mr.sha;
          await this.setHead(target, mr, p, after);
          this.emitMr(target, mr, 'update', actor, { oldrev: old });
        }
      }
    }
    for (const mr of p.mrs.values()) {
      if (mr.state !== 'opened' || mr.targetBranch !== branch || after === null) continue;
      mr.mergeStatus = 'unchecked';
      if (await this.w.isAncestor(p, mr.sha, after)) {
        // The head reached the target by a push: GitLab marks the MR merged.
        mr.state = 'merged';
        mr.mergedAt = Date.now();
        mr.mergedById = actor.id;
        mr.updatedAt = mr.mergedAt;
        this.emitMr(p, mr, 'merge', actor);
      }
    }
    if (after !== null) this.ci.onPush(p, branch, before, after, actor.id);
  }

  private async setHead(target: Project, mr: Mr, source: Project, sha: string): Promise<void> {
    if (source.id !== target.id)
      await this.w.git.git(target.dir, [
        'fetch',
        '-q',
        '--no-tags',
        source.dir,
        `+${sha}:refs/merge-requests/${mr.iid}/head`,
      ]);
    else await this.w.git.updateRef(target.dir, `refs/merge-requests/${mr.iid}/head`, sha);
    mr.sha = sha;
    mr.updatedAt = Date.now();
    mr.mergeStatus = 'unchecked';
  }

  async open(
    p: Project,
    o: {
      source: Project;
      sourceBranch: string;
      targetBranch: string;
      title: string;
      description: string;
      author: User;
      draft: boolean;
    },
  ): Promise<Mr> {
    const sha =
      o.source.refs.get(o.sourceBranch) ?? (await this.w.resolve(o.source, `refs/heads/${o.sourceBranch}`));
    if (!sha) throw new Error(`no branch ${o.sourceBranch} in ${o.source.pathWithNamespace}`);
    const now = Date.now();
    const mr: Mr = {
      id: 90_000 + this.w.id(),
      iid: p.nextIid++,
      projectId: p.id,
      sourceProjectId: o.source.id,
      sourceBranch: o.sourceBranch,
      targetBranch: o.targetBranch,
      title: o.title,
      description: o.description,
      authorId: o.author.id,
      state: 'opened',
      draft: o.draft,
      sha,
      createdAt: now,
      updatedAt: now,
      mergedAt: null,
      mergedById: null,
      closedAt: null,
      closedById: null,
      mergeStatus: 'unchecked',
      checkedKey: null,
      conflict: false,
      blocker: null,
    };
    p.mrs.set(mr.iid, mr);
    await this.setHead(p, mr, o.source, sha);
    this.emitMr(p, mr, 'open', o.author);
    return mr;
  }

  setState(p: Project, mr: Mr, state: 'closed' | 'opened', actor: User): void {
    if (mr.state === state || mr.state === 'merged') return;
    mr.state = state;
    mr.updatedAt = Date.now();
    mr.closedAt = state === 'closed' ? mr.updatedAt : null;
    mr.closedById = state === 'closed' ? actor.id : null;
    mr.mergeStatus = 'unchecked';
    this.emitMr(p, mr, state === 'closed' ? 'close' : 'reopen', actor);
  }

  setDraft(p: Project, mr: Mr, draft: boolean, actor: User): void {
    if (mr.draft === draft) return;
    mr.draft = draft;
    mr.updatedAt = Date.now();
    this.emitMr(p, mr, 'update', actor, { changes: { draft: { previous: !draft, current: draft } } });
  }

  /**
   * What holds the MR besides git changes (approved, unapproved, a thread resolved…): GitLab sends
   * a Merge Request hook (`approved` / `unapproved` / `update`).
   */
  setBlocker(p: Project, mr: Mr, blocker: MergeBlocker, actor: User): void {
    if (mr.blocker === blocker) return;
    const was = mr.blocker;
    mr.blocker = blocker;
    mr.updatedAt = Date.now();
    this.emitMr(
      p,
      mr,
      was === 'not_approved' ? 'approved' : blocker === 'not_approved' ? 'unapproved' : 'update',
      actor,
    );
  }

  /**
   * `merge_status` as a read of the MR answers it: an unchecked MR starts its check and answers
   * `checking`; the check (git merge-tree against the target, `mergeabilityDelayMs` long) decides.
   */
  async read(
    p: Project,
    mr: Mr,
    startCheck: boolean,
  ): Promise<{ targetSha: string; baseSha: string; mergeStatus: string; detailed: string }> {
    const targetSha = p.refs.get(mr.targetBranch) ?? ZERO;
    const headSha = mr.sha;
    const key = `${targetSha}:${headSha}`;
    if (mr.state === 'opened' && mr.checkedKey !== key && mr.mergeStatus !== 'checking')
      mr.mergeStatus = 'unchecked';
    if (mr.state === 'opened' && startCheck && mr.mergeStatus === 'unchecked') {
      mr.mergeStatus = 'checking';
      const delay = p.mergeabilityDelayMs;
      this.w.track(
        (async () => {
          if (delay > 0) await new Promise((done) => setTimeout(done, delay));
          mr.conflict = (await this.w.git.mergeTree(p.dir, targetSha, headSha)) === null;
          mr.checkedKey = key;
          mr.mergeStatus = mr.conflict ? 'cannot_be_merged' : 'can_be_merged';
          // Moved again meanwhile: the result is stale.
          if ((p.refs.get(mr.targetBranch) ?? ZERO) !== targetSha || mr.sha !== headSha)
            mr.mergeStatus = 'unchecked';
        })().catch(() => {
          mr.mergeStatus = 'unchecked';
        }),
      );
    }
    // What this read answers is decided now; the check runs on after it.
    const mergeStatus = mr.mergeStatus;
    const detailed = this.detailed(p, mr);
    const baseSha = (await this.w.git.mergeBase(p.dir, targetSha, headSha)) ?? targetSha;
    return { targetSha, baseSha, mergeStatus, detailed };
  }

  /** `detailed_merge_status`, in GitLab's order of checks. */
  detailed(p: Project, mr: Mr): string {
    if (mr.state !== 'opened') return 'not_open';
    if (mr.draft) return 'draft_status';
    if (mr.mergeStatus === 'unchecked') return 'unchecked';
    if (mr.mergeStatus === 'checking') return 'checking';
    if (mr.mergeStatus === 'cannot_be_merged') return 'conflict';
    if (mr.blocker === 'discussions_not_resolved') return 'discussions_not_resolved';
    if (p.onlyAllowMergeIfPipelineSucceeds) {
      const pl = this.ci.latest(this.w.projects.get(mr.sourceProjectId)!, mr.sha);
      if (!pl) return 'ci_must_pass';
      if (pl.status === 'running' || pl.status === 'pending' || pl.status === 'created')
        return 'ci_still_running';
      if (pl.status !== 'success') return 'ci_must_pass';
    }
    if (mr.blocker) return mr.blocker;
    return 'mergeable';
  }

  addNote(p: Project, mr: Mr, author: User, body: string, system = false): Note {
    const now = Date.now();
    const n: Note = {
      id: 300_000 + this.w.id(),
      projectId: p.id,
      iid: mr.iid,
      body,
      authorId: author.id,
      system,
      createdAt: now,
      updatedAt: now,
    };
    this.w.notes.set(n.id, n);
    if (this.hooks.active)
      this.hooks.emit(
        'Note Hook',
        notePayload(this.w, p, { ...mr }, { ...n }, 'create', this.detailed(p, mr)),
      );
    return n;
  }

  editNote(p: Project, mr: Mr, n: Note, body: string): void {
    n.body = body;
    n.updatedAt = Date.now();
    if (this.hooks.active)
      this.hooks.emit(
        'Note Hook',
        notePayload(this.w, p, { ...mr }, { ...n }, 'update', this.detailed(p, mr)),
      );
  }

  private emitMr(
    p: Project,
    mr: Mr,
    action: string,
    actor: User,
    extra: Parameters<typeof mrPayload>[6] = {},
  ): void {
    if (!this.hooks.active) return;
    this.hooks.emit(
      'Merge Request Hook',
      mrPayload(this.w, p, { ...mr }, action, actor, this.detailed(p, mr), extra),
    );
  }
}
