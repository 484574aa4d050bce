// A stateful GitHub emulator for tests (README.md next to this file): real bare repositories served over
// smart HTTP by `git http-backend`, the REST subset Railyard's GitHub forge uses (docs: decisions.md "GitHub
// forge"), signed webhooks, a GitHub App with expiring installation tokens, rate limits, branch rules, token
// permissions and a configurable CI. This file is its public face: the test-facing methods, the HTTP server
// and git over smart HTTP; its parts are the world (world.ts), hooks, CI, branch rules, PRs, faults and REST.
import { rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startEmulatorHttp, type EmulatorHttp } from '../emulator-http.js';
import { serveHttpBackend } from '../emulator-git/index.js';
import { Ci } from './ci.js';
import { LandingFaults, type LandingFault } from './faults.js';
import { Hooks, type Delivery, type DeliveryFilter } from './hooks.js';
import { Prs } from './pr.js';
import { Protection, type BranchRules, type ReviewState } from './protection.js';
import { Rest, tokenOf, type RequestRecord } from './rest.js';
import {
  World,
  type BranchMove,
  type CheckConclusion,
  type CiDecide,
  type Permission,
  type PrShown,
} from './world.js';
import type { AppPermissions, PatRole } from './world.js';

export type { LandingFault } from './faults.js';
export type { Delivery, DeliveryFate, DeliveryFilter } from './hooks.js';
export type { BranchRules, ReviewState } from './protection.js';
export type { RequestRecord } from './rest.js';
export type { CheckConclusion, CiCheck, CiDecide, CiPush, Permission, PrShown } from './world.js';

export interface EmulatorOptions {
  /** 'ghes' serves the REST API under /api/v3 (GHES style); 'dotcom' at the root. Default 'ghes'. */
  style?: 'ghes' | 'dotcom';
  /** Validate every REST answer against @octokit/openapi (records violations in schemaViolations). Default false. */
  validate?: boolean;
}

/** A smart-HTTP git request (clone, fetch, ls-remote, push), recorded once its answer is complete. */
export interface GitRequestRecord {
  owner: string;
  repo: string;
  method: string;
  /** After `/owner/repo.git`, with the query: `/info/refs?service=git-upload-pack`, `/git-upload-pack`, … */
  path: string;
  /** When the request arrived (ms since the epoch) and how long the answer took. */
  at: number;
  ms: number;
}

export async function startGitHubEmulator(opts: EmulatorOptions = {}): Promise<GitHubEmulator> {
  const e = new GitHubEmulator(opts);
  await e.start();
  return e;
}

export class GitHubEmulator {
  /** REST base (what `--github-api-url` takes): http://127.0.0.1:PORT/api/v3 (ghes) or the root (dotcom). */
  apiUrl = '';
  /** `host:port`, the `repo.host` Railyard serves. */
  host = '';
  readonly world: World;
  readonly hooks: Hooks;
  readonly ci: Ci;
  readonly protection: Protection;
  readonly prs: Prs;
  readonly landingFaults = new LandingFaults();
  readonly rest: Rest;
  /**
   * Git requests with a token that sees the repository, in the order their answers completed. Every
   * `git ls-remote`, fetch or push starts with one `GET /info/refs?service=…`: a test counts them to
   * know that a poller has read the branches again (a condition instead of a fixed sleep).
   */
  readonly gitRequests: GitRequestRecord[] = [];
  private http: EmulatorHttp | null = null;

  constructor(private readonly opts: EmulatorOptions = {}) {
    this.world = new World(opts.style ?? 'ghes');
    this.hooks = new Hooks(this.world);
    this.ci = new Ci(this.world, this.hooks);
    this.protection = new Protection(this.world, this.hooks, this.ci);
    this.prs = new Prs(this.world, this.hooks, this.ci, this.protection);
    this.rest = new Rest(
      { world: this.world, hooks: this.hooks, ci: this.ci, protection: this.protection, prs: this.prs },
      this.landingFaults,
    );
  }

  get deliveries(): Delivery[] {
    return this.hooks.deliveries;
  }
  get requests(): RequestRecord[] {
    return this.rest.requests;
  }
  /** REST answers and webhook payloads that broke the OpenAPI check (with `validate: true`). */
  get schemaViolations(): string[] {
    return this.world.schemaViolations;
  }
  /** Every branch change (push, ref update, merge, deletion) with its time, oldest first. */
  get branchMoves(): BranchMove[] {
    return this.world.branchMoves;
  }
  /** The tokens issued to installations so far (newest last), for expiry tests. */
  get installationTokens(): Array<{ token: string; installationId: number; expiresAt: number }> {
    return this.world.installationTokens;
  }

  async start(): Promise<void> {
    if (this.opts.validate) {
      const { loadValidator } = await import('./openapi.js');
      this.world.validator = await loadValidator(this.world.style);
    }
    this.http = await startEmulatorHttp((req, res) => this.handle(req, res), {
      contentType: 'application/json; charset=utf-8',
      message: (error) => `emulator error: ${String(error)}`,
    });
    this.host = this.http.host;
    this.world.urls = { api: `http://${this.host}${this.world.prefix}`, web: `http://${this.host}` };
    this.apiUrl = this.world.urls.api;
  }

  /** Server, git processes and temp dirs gone. */
  async close(): Promise<void> {
    if (this.world.closed) return;
    this.world.end();
    this.hooks.close();
    await this.http?.close();
    await this.world.stop();
    rmSync(this.world.root, { recursive: true, force: true, maxRetries: 5, retryDelay: 20 });
  }

  // --- auth ----------------------------------------------------------------------------------

  /** A PAT of `login` (default `railyard-bot`) that sees every repository, its account a `permission` there (README). */
  addToken(token: string, opts: { login?: string; permission?: PatRole } = {}): void {
    this.world.tokens.set(token, { login: 'railyard-bot', ...opts, kind: 'pat' });
  }

  /** A GitHub App with a fresh RSA key pair; returns its id and private key PEM. */
  createApp(opts: { installationTokenTtlMs?: number } = {}): { appId: number; privateKeyPem: string } {
    return this.world.createApp(opts.installationTokenTtlMs ?? 3_600_000);
  }

  installApp(appId: number, owner: string, repo: string, permissions?: AppPermissions): number {
    return this.world.installApp(appId, owner, repo, permissions);
  }

  // --- repositories and pull requests --------------------------------------------------------

  createRepo(
    owner: string,
    name: string,
    opts: { defaultBranch?: string; files?: Record<string, string> } = {},
  ): { cloneUrl: string; dir: string } {
    const r = this.world.createRepo(owner, name, opts);
    return { cloneUrl: this.world.cloneUrl(r), dir: r.dir };
  }

  /** A commit on `branch` (created from `from`, default the default branch) changing `files`; `null` deletes a file. */
  async pushCommit(
    owner: string,
    repo: string,
    branch: string,
    files: Record<string, string | null>,
    opts: { message?: string; from?: string; author?: string } = {},
  ): Promise<string> {
    return this.prs.pushCommit(this.world.mustRepo(owner, repo), branch, files, {
      ...opts,
      author: opts.author ?? owner,
    });
  }

  async createPullRequest(
    owner: string,
    repo: string,
    pr: {
      head: string;
      base?: string;
      title?: string;
      user?: string;
      draft?: boolean;
      files?: Record<string, string | null>;
    },
  ): Promise<{ number: number; headSha: string }> {
    const r = this.world.mustRepo(owner, repo);
    const base = pr.base ?? r.defaultBranch;
    const user = pr.user ?? owner;
    if (pr.files)
      await this.pushCommit(owner, repo, pr.head, pr.files, { from: base, author: user, message: pr.title });
    if ((await this.world.branchSha(r, pr.head)) === null)
      throw new Error(`createPullRequest: no branch ${pr.head}`);
    const p = await this.prs.open(r, {
      head: pr.head,
      base,
      title: pr.title ?? `Change ${pr.head}`,
      body: null,
      user,
      draft: pr.draft ?? false,
    });
    return { number: p.number, headSha: p.headSha };
  }

  async pushToPullRequest(
    owner: string,
    repo: string,
    number: number,
    files: Record<string, string | null>,
  ): Promise<string> {
    const p = this.pr(owner, repo, number);
    return this.pushCommit(owner, repo, p.head, files, { author: p.user });
  }

  async closePullRequest(owner: string, repo: string, number: number): Promise<void> {
    const p = this.pr(owner, repo, number);
    if (p.state !== 'closed') this.prs.setClosed(this.world.mustRepo(owner, repo), p, p.user);
  }

  async setDraft(owner: string, repo: string, number: number, draft: boolean): Promise<void> {
    this.prs.setDraft(this.world.mustRepo(owner, repo), this.pr(owner, repo, number), draft);
  }

  /** Changes the PR's base branch, as a user editing it would (`pull_request` edited). */
  async setBase(owner: string, repo: string, number: number, base: string): Promise<void> {
    const p = this.pr(owner, repo, number);
    await this.prs.setBase(this.world.mustRepo(owner, repo), p, base, p.user);
  }

  getPullRequest(owner: string, repo: string, number: number) {
    const p = this.pr(owner, repo, number);
    return { state: p.state, merged: p.merged, headSha: p.headSha, base: p.base, draft: p.draft };
  }

  pullRequests(owner: string, repo: string) {
    return [...this.world.mustRepo(owner, repo).prs.values()].map((p) => ({
      number: p.number,
      head: p.head,
      base: p.base,
      state: p.state,
      draft: p.draft,
      title: p.title,
    }));
  }

  /** What GitHub showed on the PR, in order. */
  shown(owner: string, repo: string, number: number): PrShown[] {
    return [...this.pr(owner, repo, number).shown];
  }

  /**
   * When GitHub first showed the PR's final state: a final (not pending) commit status of `context`
   * (default `railyard/merge-queue`) on one of its heads, the PR closed (or merged), and a comment
   * whose body matches `comment` (default: says merged, failed or cancelled); `all` is the latest
   * of the three, null while one is missing.
   */
  finalShownAt(
    owner: string,
    repo: string,
    number: number,
    opts: { context?: string; comment?: RegExp } = {},
  ) {
    return this.prs.finalShownAt(this.pr(owner, repo, number), opts);
  }

  async comment(owner: string, repo: string, number: number, user: string, body: string): Promise<void> {
    this.prs.addComment(this.world.mustRepo(owner, repo), this.pr(owner, repo, number), user, body);
  }

  comments(owner: string, repo: string, number: number) {
    return [...this.world.mustRepo(owner, repo).comments.values()]
      .filter((c) => c.number === number)
      .map((c) => ({ id: c.id, body: c.body, user: c.user }));
  }

  setPermission(owner: string, repo: string, user: string, permission: Permission): void {
    this.world.mustRepo(owner, repo).perms.set(user, permission);
  }

  // --- branch rules and reviews --------------------------------------------------------------

  /** Sets (or with null removes) the rules of a branch. */
  protectBranch(owner: string, repo: string, branch: string, rules: BranchRules | null): void {
    this.protection.protect(this.world.mustRepo(owner, repo), branch, rules);
  }

  /** A review by `user` on the PR's current head (`pull_request_review` submitted webhook). */
  async review(owner: string, repo: string, number: number, user: string, state: ReviewState): Promise<void> {
    this.protection.review(this.world.mustRepo(owner, repo), this.pr(owner, repo, number), user, state);
  }

  /** How many review conversations on the PR are unresolved (blocks with requireConversationResolution). */
  setUnresolvedConversations(owner: string, repo: string, number: number, count: number): void {
    this.pr(owner, repo, number).unresolvedConversations = count;
  }

  // --- git state -----------------------------------------------------------------------------

  async branchSha(owner: string, repo: string, branch: string): Promise<string | null> {
    return this.world.branchSha(this.world.mustRepo(owner, repo), branch);
  }

  async branches(owner: string, repo: string): Promise<string[]> {
    return [...(await this.world.git.heads(this.world.mustRepo(owner, repo).dir)).keys()];
  }

  async log(owner: string, repo: string, branch: string) {
    return this.world.git.log(this.world.mustRepo(owner, repo).dir, branch);
  }

  // --- CI ------------------------------------------------------------------------------------

  setCi(owner: string, repo: string, decide: CiDecide): void {
    this.world.mustRepo(owner, repo).ci = decide;
  }

  /** A new run of check `name` on `sha` ending in `conclusion` (the one GET check-runs shows). */
  async rerunCheck(
    owner: string,
    repo: string,
    sha: string,
    name: string,
    conclusion: CheckConclusion,
  ): Promise<void> {
    this.ci.rerun(this.world.mustRepo(owner, repo), sha, name, conclusion);
  }

  statuses(owner: string, repo: string, sha: string) {
    return this.world
      .mustRepo(owner, repo)
      .statuses.filter((s) => s.sha === sha)
      .map((s) => ({
        context: s.context,
        state: s.state,
        ...(s.description === null ? {} : { description: s.description }),
        ...(s.targetUrl === null ? {} : { target_url: s.targetUrl }),
      }));
  }

  /** Check runs on a commit, oldest first. */
  checkRuns(owner: string, repo: string, sha: string) {
    return this.world
      .mustRepo(owner, repo)
      .checkRuns.filter((c) => c.headSha === sha)
      .map((c) => ({ id: c.id, name: c.name, status: c.status, conclusion: c.conclusion }));
  }

  // --- delays, faults and limits -------------------------------------------------------------

  /** GitHub's mergeability job takes `ms`: until it is done every GET answers `mergeable: null`. */
  setMergeabilityDelay(owner: string, repo: string, ms: number): void {
    this.world.mustRepo(owner, repo).mergeabilityDelayMs = ms;
  }

  /** Git reads (fetch, ls-remote) answer `ms` late: the refs are read on arrival and sent after the delay. */
  setGitReadDelay(owner: string, repo: string, ms: number): void {
    this.world.mustRepo(owner, repo).gitReadDelayMs = ms;
  }

  /** The merge API merges at once (its webhooks go out) but answers `ms` late. */
  setMergeAnswerDelay(owner: string, repo: string, ms: number): void {
    this.world.mustRepo(owner, repo).mergeAnswerDelayMs = ms;
  }

  /** The next landing calls of the repository fail like a blip of GitHub or the network (faults.ts). */
  failLanding(owner: string, repo: string, fault: LandingFault): void {
    this.world.mustRepo(owner, repo);
    this.landingFaults.arm(owner, repo, fault);
  }

  /**
   * `status` (secondary only): 403 (default) or 429, both of which GitHub sends for secondary limits.
   * `retryAfterSeconds` null: a secondary limit without a `retry-after` header (GitHub sends some).
   */
  rateLimitNext(
    n: number,
    kind: 'primary' | 'secondary',
    retryAfterSeconds: number | null = 60,
    status: 403 | 429 = 403,
  ): void {
    this.rest.rateLimitNext(n, kind, retryAfterSeconds, status);
  }

  resetRequestCount(): void {
    this.rest.requests.length = 0;
  }

  // --- webhooks ------------------------------------------------------------------------------

  /** `contentType: 'form'` sends `application/x-www-form-urlencoded` with the JSON in `payload=`. */
  setWebhook(url: string, secret: string, opts: { contentType?: 'json' | 'form' } = {}): void {
    this.hooks.set(url, secret, opts.contentType ?? 'json');
  }

  redeliver(id: string): Promise<number> {
    return this.hooks.redeliver(id);
  }

  /** Decides the fate of each delivery about to be sent (null: all sent). */
  setDeliveryFilter(filter: DeliveryFilter | null): void {
    this.hooks.setFilter(filter);
  }

  get heldDeliveries(): number {
    return this.hooks.held.length;
  }

  /** Sends the held deliveries (in the order held, or newest first); resolves with the receiver's statuses. */
  releaseDeliveries(opts: { newestFirst?: boolean } = {}): Promise<number[]> {
    return this.hooks.release(opts);
  }

  /** Sends a recorded delivery's body again, signed: with the same delivery id (default), another, or (null) none. */
  replay(id: string, opts: { deliveryId?: string | null } = {}): Promise<number> {
    return this.hooks.replay(id, opts);
  }

  /** Resolves once every queued webhook delivery, CI report and background computation has finished. */
  idle(): Promise<void> {
    return this.world.idle();
  }

  private pr(owner: string, repo: string, number: number) {
    return this.world.mustPr(this.world.mustRepo(owner, repo), number);
  }

  // --- HTTP ----------------------------------------------------------------------------------

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    const prefix = this.world.prefix;
    const git = /^\/([^/]+)\/([^/]+)\.git(\/.*)$/.exec(url.pathname);
    if (git && !url.pathname.startsWith(`${prefix}/`))
      return this.handleGit(req, res, git[1], git[2], git[3], url.search.slice(1));
    if (prefix && !url.pathname.startsWith(`${prefix}/`) && url.pathname !== prefix) {
      res.statusCode = 404;
      res.end('Not Found');
      return;
    }
    return this.rest.handle(req, res, url);
  }

  private async handleGit(
    req: IncomingMessage,
    res: ServerResponse,
    owner: string,
    name: string,
    rest: string,
    query: string,
  ): Promise<void> {
    const r = this.world.repos.get(`${owner}/${name}`);
    const token = this.world.validToken(tokenOf(req.headers.authorization));
    if (!token) {
      req.resume();
      res.writeHead(401, { 'www-authenticate': 'Basic realm="GitHub"', 'content-type': 'text/plain' });
      res.end(
        req.headers.authorization
          ? 'Invalid username or token. Password authentication is not supported for Git operations.\n'
          : 'Authentication required\n',
      );
      return;
    }
    const isPush = rest === '/git-receive-pack' && req.method === 'POST';
    const refused = this.world.gitRefusal(token, r, isPush || query.includes('service=git-receive-pack'));
    if (refused || !r) {
      req.resume();
      res.writeHead(refused?.status ?? 404, { 'content-type': 'text/plain' });
      res.end(refused?.text);
      return;
    }
    // After a push, the emulator reacts (PR updates, push event, CI) before git's answer completes,
    // so a test's `git push` returns with GitHub's state already updated.
    const afterPush = isPush
      ? () => this.world.track(this.world.locked(r, () => this.prs.syncRefs(r, token.login)))
      : undefined;
    const startedAt = Date.now();
    await serveHttpBackend(this.world.git, req, res, {
      projectRoot: this.world.reposRoot,
      pathInfo: `/${owner}/${name}.git${rest}`,
      query,
      remoteUser: token.login,
      beforeEnd: afterPush,
      holdMs: rest === '/git-upload-pack' && req.method === 'POST' ? r.gitReadDelayMs : 0,
    });
    const path = query ? `${rest}?${query}` : rest;
    this.gitRequests.push({
      owner,
      repo: name,
      method: req.method ?? 'GET',
      path,
      at: startedAt,
      ms: Date.now() - startedAt,
    });
  }
}
