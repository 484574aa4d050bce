// A stateful GitLab emulator for tests: real bare repositories served over smart HTTP by
// `git http-backend` (with GitLab's push rules as a pre-receive hook), the REST v4 subset Railyard's
// GitLab driver uses, lazy `detailed_merge_status`, a configurable CI (pipelines, jobs, statuses),
// token-signed hook deliveries and rate-limit answers. See README.md next to this file.
import { mkdtempSync, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startEmulatorHttp, type EmulatorHttp } from '../emulator-http.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ci } from './ci.js';
import { serveGit } from './git-http.js';
import { LandingFaults, type LandingFault } from './faults.js';
import { Hooks, type Delivery } from './hooks.js';
import { Mrs } from './mr.js';
import { checkOpenApi } from './openapi.js';
import { Rest, type RequestRecord } from './rest.js';
import {
  ACCESS,
  World,
  ZERO,
  type CiDecide,
  type JobStatus,
  type MergeBlocker,
  type MrState,
} from './world.js';

export { ACCESS, type CiDecide, type CiJob, type CiPush } from './world.js';
export type { Delivery, HookEvent } from './hooks.js';
export type { LandingFault } from './faults.js';
export type { RequestRecord } from './rest.js';

export interface MergeRequestView {
  iid: number;
  title: string;
  state: MrState;
  draft: boolean;
  sha: string;
  sourceBranch: string;
  targetBranch: string;
  sourceProject: string;
  mergeStatus: string;
}

export class GitLabEmulator {
  /** Base URL (what `--gitlab-url` takes), e.g. http://127.0.0.1:PORT */
  url = '';
  /** `host:port`, the `repo.host` Railyard serves. */
  host = '';
  /** The path the instance lives under ('' or e.g. `/gitlab`), part of `url`. */
  pathPrefix = '';
  readonly world = new World(mkdtempSync(join(tmpdir(), 'railyard-gl-')));
  readonly hooks = new Hooks(this.world);
  readonly ci = new Ci(this.world, this.hooks);
  readonly mrs = new Mrs(this.world, this.hooks, this.ci);
  readonly rest = new Rest({ world: this.world, mrs: this.mrs, ci: this.ci, hooks: this.hooks });
  readonly landingFaults = new LandingFaults();
  private http: EmulatorHttp | null = null;

  get apiUrl(): string {
    return `${this.url}/api/v4`;
  }
  get requests(): RequestRecord[] {
    return this.rest.requests;
  }
  get deliveries(): Delivery[] {
    return this.hooks.deliveries;
  }
  /** Answers that broke the OpenAPI check (only when a validator is set; see openapi.ts). */
  get schemaViolations(): string[] {
    return this.rest.violations;
  }

  async start(): Promise<void> {
    this.rest.validator = checkOpenApi;
    this.http = await startEmulatorHttp((req, res) => this.handle(req, res), {
      contentType: 'application/json',
      message: (error) => `500 Internal Server Error: ${String(error)}`,
    });
    this.host = this.http.host;
    this.url = `http://${this.host}${this.pathPrefix}`;
    this.world.web = this.url;
  }

  async close(): Promise<void> {
    if (this.world.closed) return;
    this.hooks.close();
    await this.http?.close();
    await this.world.stop();
    rmSync(this.world.root, { recursive: true, force: true, maxRetries: 5, retryDelay: 20 });
  }

  // --- users, tokens, projects ---------------------------------------------------------------

  /**
   * A token of `username` (default `railyard-bot`), with `defaultAccess` (default Maintainer; GitLab
   * answers it as `group_access`) on projects it is no member of, `scopes` (default `['api']`) and
   * `expiresAt` (`YYYY-MM-DD`, default null: never). Adding a token again replaces it.
   */
  addToken(
    token: string,
    opts: { username?: string; defaultAccess?: number; scopes?: string[]; expiresAt?: string | null } = {},
  ): number {
    const u = this.world.user(opts.username ?? 'railyard-bot');
    this.world.tokens.set(token, {
      id: this.world.tokens.get(token)?.id ?? this.world.id(),
      userId: u.id,
      defaultAccess: opts.defaultAccess ?? ACCESS.maintainer,
      scopes: opts.scopes ?? ['api'],
      expiresAt: opts.expiresAt ?? null,
      createdAt: Date.now(),
    });
    for (const p of this.world.projects.values()) this.world.writeAccess(p);
    return u.id;
  }

  userId(username: string): number {
    return this.world.user(username).id;
  }

  createProject(
    path: string,
    opts: { defaultBranch?: string; files?: Record<string, string>; owner?: string } = {},
  ): { id: number; cloneUrl: string; dir: string } {
    const p = this.world.createProject(path, opts);
    return { id: p.id, cloneUrl: this.world.cloneUrl(p), dir: p.dir };
  }

  /** Forks `path` into `namespace` (same project name); the fork's owner is `owner` (default: the namespace's first segment). */
  forkProject(
    path: string,
    namespace: string,
    owner?: string,
  ): { id: number; cloneUrl: string; path: string } {
    const src = this.world.mustProject(path);
    const p = this.world.createProject(`${namespace}/${src.path}`, {
      forkOf: src,
      owner: owner ?? namespace.split('/')[0],
    });
    return { id: p.id, cloneUrl: this.world.cloneUrl(p), path: p.pathWithNamespace };
  }

  setMember(path: string, username: string, accessLevel: number): void {
    const p = this.world.mustProject(path);
    p.members.set(this.world.user(username).id, accessLevel);
    this.world.writeAccess(p);
  }

  protectBranch(
    path: string,
    name: string,
    opts: { pushAccessLevel?: number; mergeAccessLevel?: number; allowForcePush?: boolean } = {},
  ): void {
    const p = this.world.mustProject(path);
    p.protectedBranches = p.protectedBranches.filter((b) => b.name !== name);
    p.protectedBranches.push({
      id: this.world.id(),
      name,
      pushAccessLevel: opts.pushAccessLevel ?? ACCESS.maintainer,
      mergeAccessLevel: opts.mergeAccessLevel ?? ACCESS.maintainer,
      allowForcePush: opts.allowForcePush ?? false,
    });
    this.world.writeProtected(p);
  }

  setOnlyAllowMergeIfPipelineSucceeds = (path: string, on: boolean) =>
    void (this.world.mustProject(path).onlyAllowMergeIfPipelineSucceeds = on);
  /** GitLab's project setting `allow_merge_on_skipped_pipeline`. */
  setAllowMergeOnSkippedPipeline = (path: string, on: boolean) =>
    void (this.world.mustProject(path).allowMergeOnSkippedPipeline = on);
  /** Renames or transfers a project (same id); its old path keeps answering (redirects), hooks name the new one. */
  moveProject = (path: string, newPath: string) =>
    this.world.moveProject(this.world.mustProject(path), newPath);

  // --- content -------------------------------------------------------------------------------

  /** A commit on `branch` (created from `from`, default the default branch) changing `files`; `null` deletes a file. */
  async pushCommit(
    path: string,
    branch: string,
    files: Record<string, string | null>,
    opts: { message?: string; from?: string; author?: string } = {},
  ): Promise<string> {
    const p = this.world.mustProject(path);
    const author = this.world.user(opts.author ?? p.namespace.split('/')[0]);
    return this.world.locked(p, async () => {
      const old = await this.world.resolve(p, `refs/heads/${branch}`);
      let parent = old;
      if (parent === null) {
        const from = opts.from ?? p.defaultBranch;
        parent = (await this.world.resolve(p, `refs/heads/${from}`)) ?? (await this.world.resolve(p, from));
        if (parent === null) throw new Error(`pushCommit: no branch or commit ${from}`);
      }
      const sha = await this.world.commitFiles(
        p,
        parent,
        files,
        opts.message ?? `Update ${Object.keys(files).join(', ')}`,
        author.username,
      );
      await this.world.git.updateRef(p.dir, `refs/heads/${branch}`, sha, old ?? ZERO);
      await this.mrs.syncRefs(p, author);
      return sha;
    });
  }

  async createMergeRequest(
    path: string,
    o: {
      sourceBranch: string;
      targetBranch?: string;
      title?: string;
      author?: string;
      draft?: boolean;
      files?: Record<string, string | null>;
      /** The fork the source branch lives in (default: the project itself). */
      sourceProject?: string;
    },
  ): Promise<{ iid: number; sha: string }> {
    const p = this.world.mustProject(path);
    const source = o.sourceProject ? this.world.mustProject(o.sourceProject) : p;
    const target = o.targetBranch ?? p.defaultBranch;
    const author = this.world.user(o.author ?? p.namespace.split('/')[0]);
    if (o.files)
      await this.pushCommit(source.pathWithNamespace, o.sourceBranch, o.files, {
        from: target,
        author: author.username,
        message: o.title,
      });
    const mr = await this.world.locked(p, () =>
      this.mrs.open(p, {
        source,
        sourceBranch: o.sourceBranch,
        targetBranch: target,
        title: o.title ?? `Change ${o.sourceBranch}`,
        description: '',
        author,
        draft: o.draft ?? false,
      }),
    );
    return { iid: mr.iid, sha: mr.sha };
  }

  async pushToMergeRequest(path: string, iid: number, files: Record<string, string | null>): Promise<string> {
    const mr = this.mr(path, iid);
    const source = this.world.projects.get(mr.sourceProjectId)!;
    return this.pushCommit(source.pathWithNamespace, mr.sourceBranch, files, {
      author: this.world.mustUser(mr.authorId).username,
    });
  }

  closeMergeRequest(path: string, iid: number, actor?: string): void {
    const p = this.world.mustProject(path);
    const mr = this.mr(path, iid);
    this.mrs.setState(p, mr, 'closed', actor ? this.world.user(actor) : this.world.mustUser(mr.authorId));
  }

  reopenMergeRequest(path: string, iid: number): void {
    const mr = this.mr(path, iid);
    this.mrs.setState(this.world.mustProject(path), mr, 'opened', this.world.mustUser(mr.authorId));
  }

  setDraft(path: string, iid: number, draft: boolean): void {
    const mr = this.mr(path, iid);
    this.mrs.setDraft(this.world.mustProject(path), mr, draft, this.world.mustUser(mr.authorId));
  }

  /** An approval rule, unresolved thread or external check that blocks the MR (null: none). */
  setMergeBlocker(path: string, iid: number, blocker: MergeBlocker): void {
    const mr = this.mr(path, iid);
    this.mrs.setBlocker(this.world.mustProject(path), mr, blocker, this.world.mustUser(mr.authorId));
  }

  getMergeRequest(path: string, iid: number): MergeRequestView {
    const mr = this.mr(path, iid);
    return {
      iid: mr.iid,
      title: mr.title,
      state: mr.state,
      draft: mr.draft,
      sha: mr.sha,
      sourceBranch: mr.sourceBranch,
      targetBranch: mr.targetBranch,
      sourceProject: this.world.projects.get(mr.sourceProjectId)!.pathWithNamespace,
      mergeStatus: mr.mergeStatus,
    };
  }

  mergeRequests(path: string): MergeRequestView[] {
    return [...this.world.mustProject(path).mrs.keys()].map((iid) => this.getMergeRequest(path, iid));
  }

  /** A note on an MR by `username` (a Note Hook follows). */
  note(path: string, iid: number, username: string, body: string): number {
    const p = this.world.mustProject(path);
    return this.mrs.addNote(p, this.mr(path, iid), this.world.user(username), body).id;
  }

  notes(path: string, iid: number): Array<{ id: number; body: string; author: string; updatedAt: number }> {
    const p = this.world.mustProject(path);
    return [...this.world.notes.values()]
      .filter((n) => n.projectId === p.id && n.iid === iid)
      .map((n) => ({
        id: n.id,
        body: n.body,
        author: this.world.mustUser(n.authorId).username,
        updatedAt: n.updatedAt,
      }));
  }

  // --- CI ------------------------------------------------------------------------------------

  setCi(path: string, decide: CiDecide): void {
    this.world.mustProject(path).ci = decide;
  }

  /** A new run of job `name` on `sha` ending in `status` (GitLab's retry). */
  retryJob(
    path: string,
    sha: string,
    name: string,
    status: 'success' | 'failed' | 'canceled',
    delayMs = 0,
  ): void {
    this.ci.retry(this.world.mustProject(path), sha, name, status, delayMs);
  }

  /** Commit statuses on `sha` (jobs and external statuses; latest per name unless `all`). */
  statuses(
    path: string,
    sha: string,
    all = false,
  ): Array<{
    id: number;
    name: string;
    status: JobStatus;
    kind: string;
    description: string | null;
    targetUrl: string | null;
  }> {
    const p = this.world.mustProject(path);
    return this.world.statuses
      .filter((s) => s.projectId === p.id && s.sha === sha && (all || !s.retried))
      .map((s) => ({
        id: s.id,
        name: s.name,
        status: s.status,
        kind: s.kind,
        description: s.description,
        targetUrl: s.targetUrl,
      }));
  }

  pipelines(
    path: string,
  ): Array<{ id: number; sha: string; ref: string; status: JobStatus; source: string }> {
    const p = this.world.mustProject(path);
    return this.world.pipelines
      .filter((x) => x.projectId === p.id)
      .map((x) => ({ id: x.id, sha: x.sha, ref: x.ref, status: x.status, source: x.source }));
  }

  /** A check of `detailed_merge_status` takes `ms` (answers `checking` meanwhile). */
  setMergeabilityDelay(path: string, ms: number): void {
    this.world.mustProject(path).mergeabilityDelayMs = ms;
  }

  // --- git state -----------------------------------------------------------------------------

  async branchSha(path: string, branch: string): Promise<string | null> {
    return this.world.resolve(this.world.mustProject(path), `refs/heads/${branch}`);
  }

  async branches(path: string): Promise<string[]> {
    return [...(await this.world.heads(this.world.mustProject(path))).keys()].sort();
  }

  async log(
    path: string,
    branch: string,
  ): Promise<Array<{ sha: string; parents: string[]; message: string }>> {
    return this.world.git.log(this.world.mustProject(path).dir, branch);
  }

  // --- hooks, limits, observation ------------------------------------------------------------

  /** Project hook for Push, Merge Request, Pipeline, Job and Note events; `token` is sent as X-Gitlab-Token. */
  setWebhook(url: string, token: string | null): void {
    this.hooks.set(url, token);
  }

  redeliver(uuid: string): Promise<number> {
    return this.hooks.redeliver(uuid);
  }

  /** The next pushes updating a branch fail like a blip of GitLab or the network (faults.ts; `landingFaults.met` lists them). */
  failLanding(path: string, fault: LandingFault = {}): void {
    this.landingFaults.arm(path, this.world.mustProject(path).defaultBranch, fault);
  }

  rateLimitNext(n: number, retryAfterSeconds = 1): void {
    this.rest.rateLimitNext(n, retryAfterSeconds);
  }

  resetRequestCount(): void {
    this.rest.requests.length = 0;
  }

  /** Resolves once deliveries, CI timers and mergeability checks have settled. */
  idle(): Promise<void> {
    return this.world.idle();
  }

  private mr(path: string, iid: number) {
    const mr = this.world.mustProject(path).mrs.get(iid);
    if (!mr) throw new Error(`no merge request !${iid} in ${path}`);
    return mr;
  }

  // --- HTTP ----------------------------------------------------------------------------------

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // A self-managed instance under a path (http://host:port/gitlab): everything lives below it.
    if (this.pathPrefix) {
      const path = req.url ?? '/';
      if (!path.startsWith(`${this.pathPrefix}/`)) {
        req.resume();
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('Not Found');
        return;
      }
      req.url = path.slice(this.pathPrefix.length);
    }
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/api/v4' || url.pathname.startsWith('/api/v4/'))
      return this.rest.handle(req, res, url);
    const git = /^\/(.+)\/([^/]+)\.git(\/.*)$/.exec(url.pathname);
    if (git) return serveGit(this, req, res, `${git[1]}/${git[2]}`, git[3], url.search.slice(1));
    req.resume();
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('Not Found');
  }
}

/** `pathPrefix`: serve under a path, as a self-managed GitLab at `http://host:port/gitlab` does. */
export async function startGitLabEmulator(options: { pathPrefix?: string } = {}): Promise<GitLabEmulator> {
  const e = new GitLabEmulator();
  e.pathPrefix = options.pathPrefix ?? '';
  await e.start();
  return e;
}
