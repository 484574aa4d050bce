// The emulator's state and the primitives every other part uses: repositories (real bare git
// repositories), pull requests, statuses and comments, the repository lock, background work that
// idle() waits for, and how a branch change ripples (push event, PR synchronize / merged / closed,
// CI). Layers above it (ci.ts, webhooks.ts, http.ts, index.ts) add what GitHub does on top.
import { mkdirSync, mkdtempSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmulatorWork } from '../emulator-work.js';
import { GitRunner } from './git.js';
import {
  commentJson,
  iso,
  nodeId,
  pullJson,
  userJson,
  type CommentFacts,
  type PrFacts,
  type StatusFacts,
  type Urls,
} from './json.js';
import type { SchemaValidator } from './validate.js';
import {
  commitEnv,
  statusState,
  ZERO,
  type AppState,
  type CheckConclusion,
  type Delivery,
  type EmulatorOptions,
  type Installation,
  type Pr,
  type Repo,
  type GitRequestRecord,
  type RequestRecord,
  type TokenInfo,
} from './types.js';

/** Shared state and primitives (members are public to the other layers; tests see only GitHubEmulator). */
export abstract class EmulatorState extends EmulatorWork {
  apiUrl = '';
  host = '';
  readonly deliveries: Delivery[] = [];
  readonly requests: RequestRecord[] = [];
  readonly gitRequests: GitRequestRecord[] = [];
  readonly schemaViolations: string[] = [];
  readonly branchMoves: Array<{
    at: number;
    owner: string;
    repo: string;
    branch: string;
    before: string | null;
    after: string | null;
  }> = [];
  readonly installationTokens: Array<{ token: string; installationId: number; expiresAt: number }> = [];

  readonly style: 'ghes' | 'dotcom';
  readonly prefix: string;
  readonly root = mkdtempSync(join(tmpdir(), 'railyard-gh-'));
  readonly reposRoot = join(this.root, 'repos');
  readonly git = new GitRunner();
  server: Server | null = null;
  urls: Urls = { api: '', web: '' };
  readonly tokens = new Map<string, TokenInfo>();
  readonly apps = new Map<number, AppState>();
  readonly installations = new Map<number, Installation>();
  readonly repos = new Map<string, Repo>();
  readonly rateUsed = new Map<string, { used: number; reset: number }>();
  forced: Array<{ kind: 'primary' | 'secondary'; retryAfter: number; status: 403 | 429 }> = [];
  /** Landing faults still to happen, per `owner/repo` (lower case), oldest first (failLanding). */
  readonly landingFaults = new Map<string, Array<{ answer: 502 | 503 | 'drop'; after: boolean }>>();
  webhook: { url: string; secret: string; contentType: 'json' | 'form' } | null = null;
  deliveryChain: Promise<unknown> = Promise.resolve();
  readonly bodies = new Map<string, { event: string; body: string; contentType: 'json' | 'form' }>();
  readonly abort = new AbortController();
  validator: SchemaValidator | null = null;
  nextId = 1;

  constructor(readonly opts: EmulatorOptions) {
    super();
    this.style = opts.style ?? 'ghes';
    this.prefix = this.style === 'ghes' ? '/api/v3' : '';
    mkdirSync(this.reposRoot);
  }

  // --- internals: state ----------------------------------------------------------------------

  id(): number {
    return this.nextId++;
  }

  mustRepo(owner: string, name: string): Repo {
    const r = this.repos.get(`${owner}/${name}`);
    if (!r) throw new Error(`no repository ${owner}/${name}`);
    return r;
  }

  mustPr(r: Repo, number: number): Pr {
    const p = r.prs.get(number);
    if (!p) throw new Error(`no pull request #${number} in ${r.owner}/${r.name}`);
    return p;
  }

  locked<T>(r: Repo, fn: () => Promise<T>): Promise<T> {
    const run = r.lock.then(fn, fn);
    r.lock = run.catch(() => undefined);
    return run;
  }

  resolve(r: Repo, rev: string): Promise<string | null> {
    return this.git.resolve(r.dir, rev);
  }

  isAncestor(r: Repo, a: string, b: string): Promise<boolean> {
    return this.git.isAncestor(r.dir, a, b);
  }


  commitFiles(r: Repo, parent: string, files: Record<string, string | null>, message: string, author: string): Promise<string> {
    return this.git.commitFiles(r.dir, this.root, parent, files, message, commitEnv(author));
  }

  /** Reads the branches and reacts to every change since the last look (push events, PR updates, CI). Call under the repo lock. */
  async syncRefs(r: Repo, actor: string): Promise<void> {
    const out = await this.git.git(r.dir, [
      'for-each-ref',
      '--format=%(objectname) %(refname:lstrip=2)',
      'refs/heads',
    ]);
    const now = new Map<string, string>();
    for (const line of out.split('\n')) {
      if (!line) continue;
      const i = line.indexOf(' ');
      now.set(line.slice(i + 1), line.slice(0, i));
    }
    const changes: Array<{ branch: string; before: string | null; after: string | null }> = [];
    for (const [branch, sha] of now)
      if (r.refs.get(branch) !== sha)
        changes.push({ branch, before: r.refs.get(branch) ?? null, after: sha });
    for (const [branch, sha] of r.refs)
      if (!now.has(branch)) changes.push({ branch, before: sha, after: null });
    r.refs = now;
    for (const c of changes) await this.onBranchChange(r, c.branch, c.before, c.after, actor);
  }

  async onBranchChange(
    r: Repo,
    branch: string,
    before: string | null,
    after: string | null,
    actor: string,
  ): Promise<void> {
    r.pushedAt = Date.now();
    this.branchMoves.push({ at: r.pushedAt, owner: r.owner, repo: r.name, branch, before, after });
    const forced = before !== null && after !== null && !(await this.isAncestor(r, before, after));
    this.emit(r, 'push', this.pushPayload(r, branch, before, after, forced, actor));
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
          await this.git.git(r.dir, ['update-ref', `refs/pull/${p.number}/head`, after]);
          this.prEvent(r, p, 'synchronize', actor, { before: old, after });
        }
      } else if (p.base === branch && after !== null && (await this.isAncestor(r, p.headSha, after))) {
        // The head is now part of the base (a fast-forward or a pushed merge): GitHub marks the PR merged.
        p.merged = true;
        p.mergedAt = Date.now();
        p.mergedBy = actor;
        p.mergeCommitSha = after;
        p.shown.push({ at: p.mergedAt, kind: 'merged' });
        this.setClosed(r, p, actor);
      }
    }
    if (after !== null) this.runCi(r, branch, after);
  }

  async openPr(
    r: Repo,
    o: { head: string; base: string; title: string; body: string | null; user: string; draft: boolean },
  ): Promise<Pr> {
    const headSha = (await this.resolve(r, `refs/heads/${o.head}`))!;
    const number = r.nextNumber++;
    const now = Date.now();
    const p: Pr = {
      id: 9_000_000 + this.id(),
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
    await this.git.git(r.dir, ['update-ref', `refs/pull/${number}/head`, headSha]);
    this.prEvent(r, p, 'opened', o.user);
    return p;
  }

  setClosed(r: Repo, p: Pr, actor: string): void {
    p.state = 'closed';
    p.closedAt = Date.now();
    p.updatedAt = p.closedAt;
    r.openIssues = Math.max(0, r.openIssues - 1);
    p.shown.push({ at: p.closedAt, kind: 'closed', merged: p.merged });
    this.prEvent(r, p, 'closed', actor);
  }

  addComment(r: Repo, p: Pr, user: string, body: string): CommentFacts {
    const now = Date.now();
    const c: CommentFacts = {
      id: 7_000_000 + this.id(),
      number: p.number,
      user,
      body,
      createdAt: now,
      updatedAt: now,
    };
    r.comments.set(c.id, c);
    p.shown.push({ at: now, kind: 'comment', id: c.id, body, edit: false });
    this.emit(r, 'issue_comment', {
      action: 'created',
      issue: this.issueJson(r, p),
      comment: commentJson(this.urls, r, c),
      sender: userJson(this.urls, user),
    });
    return c;
  }

  addStatus(
    r: Repo,
    sha: string,
    state: StatusFacts['state'],
    context: string,
    description: string | null,
    targetUrl: string | null,
    creator: string,
  ): StatusFacts {
    const s: StatusFacts = {
      id: this.id(),
      sha,
      state,
      context,
      description,
      targetUrl,
      creator,
      createdAt: Date.now(),
    };
    r.statuses.push(s);
    for (const p of r.prs.values())
      if (p.heads.has(sha))
        p.shown.push({ at: s.createdAt, kind: 'status', sha, context, state, description });
    this.statusEvent(r, s);
    return s;
  }

  prFacts(r: Repo, p: Pr, baseSha: string, mergeable: boolean | null, mergeableState: string): PrFacts {
    return {
      ...p,
      baseSha,
      mergeable,
      mergeableState,
      comments: [...r.comments.values()].filter((c) => c.number === p.number).length,
      commits: 1,
    };
  }

  combinedState(r: Repo, sha: string): 'failure' | 'pending' | 'success' {
    const latest = new Map<string, string>();
    for (const s of r.statuses) if (s.sha === sha) latest.set(s.context, s.state);
    for (const c of r.checkRuns)
      if (c.headSha === sha)
        latest.set(
          `check:${c.name}`,
          c.status === 'completed' ? statusState(c.conclusion as CheckConclusion) : 'pending',
        );
    const states = [...latest.values()];
    if (states.some((s) => s === 'failure' || s === 'error')) return 'failure';
    if (states.some((s) => s === 'pending')) return 'pending';
    return 'success';
  }

  /** The PR as GET answers it: mergeability is computed lazily (null until a later request). */
  async prAnswer(r: Repo, p: Pr, lazy: boolean) {
    const baseSha = (await this.resolve(r, `refs/heads/${p.base}`)) ?? ZERO;
    const key = `${baseSha}:${p.headSha}`;
    if (p.state === 'open' && p.mergeKey !== key && lazy) {
      if (p.pendingKey === key && p.pending) {
        if (r.mergeabilityDelayMs === 0) await p.pending;
      } else {
        p.pendingKey = key;
        const delay = r.mergeabilityDelayMs;
        p.pending = this.track(
          (async () => {
            if (delay > 0) await new Promise((done) => setTimeout(done, delay));
            const res = await this.git.run(
              ['--git-dir', r.dir, 'merge-tree', '--write-tree', '--name-only', baseSha, p.headSha],
              { okCodes: [1] },
            );
            p.conflict = res.code === 1;
            p.mergeKey = key;
          })(),
        );
      }
    }
    let mergeable: boolean | null = null;
    let state = 'unknown';
    if (p.state === 'open' && p.mergeKey === key) {
      mergeable = !p.conflict;
      if (p.conflict) state = 'dirty';
      else if (p.draft) state = 'draft';
      else if (this.blockedBy(r, p).length > 0) state = 'blocked';
      else if (this.combinedState(r, p.headSha) === 'failure') state = 'unstable';
      else state = 'clean';
    }
    return pullJson(this.urls, r, this.prFacts(r, p, baseSha, mergeable, state));
  }

  issueJson(r: Repo, p: Pr) {
    const url = `${this.urls.api}/repos/${r.owner}/${r.name}/issues/${p.number}`;
    const html = `${this.urls.web}/${r.owner}/${r.name}/pull/${p.number}`;
    return {
      url,
      repository_url: `${this.urls.api}/repos/${r.owner}/${r.name}`,
      labels_url: `${url}/labels{/name}`,
      comments_url: `${url}/comments`,
      events_url: `${url}/events`,
      html_url: html,
      id: p.id + 1,
      node_id: nodeId('Issue', p.id + 1),
      number: p.number,
      title: p.title,
      user: userJson(this.urls, p.user),
      labels: [],
      state: p.state,
      locked: false,
      assignee: null,
      assignees: [],
      milestone: null,
      comments: [...r.comments.values()].filter((c) => c.number === p.number).length,
      created_at: iso(p.createdAt),
      updated_at: iso(p.updatedAt),
      closed_at: p.closedAt === null ? null : iso(p.closedAt),
      author_association: p.user === r.owner ? 'OWNER' : 'COLLABORATOR',
      active_lock_reason: null,
      draft: p.draft,
      body: p.body,
      reactions: {
        url: `${url}/reactions`,
        total_count: 0,
        '+1': 0,
        '-1': 0,
        laugh: 0,
        hooray: 0,
        confused: 0,
        heart: 0,
        rocket: 0,
        eyes: 0,
      },
      timeline_url: `${url}/timeline`,
      performed_via_github_app: null,
      state_reason: p.state === 'closed' ? 'completed' : null,
      pull_request: {
        url: `${this.urls.api}/repos/${r.owner}/${r.name}/pulls/${p.number}`,
        html_url: html,
        diff_url: `${html}.diff`,
        patch_url: `${html}.patch`,
        merged_at: p.mergedAt === null ? null : iso(p.mergedAt),
      },
    };
  }

  async commitJson(r: Repo, sha: string) {
    const out = await this.git.git(r.dir, [
      'show',
      '-s',
      '--format=%H%x00%T%x00%P%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B',
      sha,
    ]);
    const [h, tree, parents, an, ae, ad, cn, ce, cd, msg] = out.split('\x00');
    return {
      sha: h,
      tree,
      parents: parents ? parents.split(' ') : [],
      an,
      ae,
      ad,
      cn,
      ce,
      cd,
      message: (msg ?? '').trimEnd(),
    };
  }

  // --- provided by the layers above ------------------------------------------------------------

  abstract emit(
    r: Repo,
    event: string,
    payload: Record<string, unknown> | Promise<Record<string, unknown> | null>,
  ): void;
  abstract prEvent(r: Repo, p: Pr, action: string, actor: string, extra?: Record<string, unknown>): void;
  abstract statusEvent(r: Repo, s: StatusFacts): void;
  abstract pushPayload(
    r: Repo,
    branch: string,
    before: string | null,
    after: string | null,
    forced: boolean,
    actor: string,
  ): Promise<Record<string, unknown> | null>;
  abstract runCi(r: Repo, branch: string, sha: string): void;
  /** What the base branch's rules still wait for on this PR (empty: nothing, or no rules). */
  abstract blockedBy(r: Repo, p: Pr): string[];
}
