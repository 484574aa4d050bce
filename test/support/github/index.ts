// A stateful GitHub emulator for tests: real bare repositories served over smart HTTP by
// `git http-backend`, the REST subset Railyard's GitHub forge uses (docs: decisions.md "GitHub forge"),
// signed webhooks, a GitHub App with expiring installation tokens, rate-limit answers and a
// configurable CI. See README.md next to this file.
import {
  createHash,
  createPublicKey,
  generateKeyPairSync,
  randomBytes,
  randomUUID,
  verify as verifySig,
} from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sign as signPayload } from '@octokit/webhooks-methods';
import { GitRunner } from './git.js';
import {
  APP_EVENTS,
  APP_PERMISSIONS,
  appJson,
  checkRunJson,
  commentJson,
  iso,
  nodeId,
  pullJson,
  repoJson,
  statusJson,
  userJson,
  type AppFacts,
  type CheckRunFacts,
  type CommentFacts,
  type PrFacts,
  type RepoFacts,
  type StatusFacts,
  type Urls,
} from './json.js';
import type { SchemaValidator } from './validate.js';

export interface EmulatorOptions {
  /** 'ghes' serves the REST API under /api/v3 (GHES style); 'dotcom' at the root. Default 'ghes'. */
  style?: 'ghes' | 'dotcom';
  /** Validate every REST answer against @octokit/openapi (records violations in schemaViolations). Default false. */
  validate?: boolean;
}

export type CheckConclusion = 'success' | 'failure' | 'neutral' | 'cancelled' | 'timed_out' | 'skipped';
export interface CiCheck {
  name: string;
  conclusion: CheckConclusion;
  delayMs?: number;
  kind?: 'check_run' | 'status';
}
export interface CiPush {
  branch: string;
  sha: string;
  files: (path: string) => Promise<string | null>;
}
export type CiDecide = (push: CiPush) => CiCheck[];
export type Permission = 'admin' | 'write' | 'read' | 'none';

export interface Delivery {
  id: string;
  event: string;
  /** HTTP status of the last attempt (0: no answer). */
  status: number;
  action?: string;
  payload: Record<string, unknown>;
}
export interface RequestRecord {
  method: string;
  path: string;
  status: number;
  token: string | null;
}

export interface GitHubEmulator {
  readonly apiUrl: string;
  readonly host: string;
  close(): Promise<void>;
  addToken(token: string, opts?: { login?: string }): void;
  createApp(opts?: { installationTokenTtlMs?: number }): { appId: number; privateKeyPem: string };
  installApp(appId: number, owner: string, repo: string): number;
  createRepo(
    owner: string,
    name: string,
    opts?: { defaultBranch?: string; files?: Record<string, string> },
  ): { cloneUrl: string; dir: string };
  pushCommit(
    owner: string,
    repo: string,
    branch: string,
    files: Record<string, string | null>,
    opts?: { message?: string; from?: string; author?: string },
  ): Promise<string>;
  createPullRequest(
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
  ): Promise<{ number: number; headSha: string }>;
  pushToPullRequest(
    owner: string,
    repo: string,
    number: number,
    files: Record<string, string | null>,
  ): Promise<string>;
  closePullRequest(owner: string, repo: string, number: number): Promise<void>;
  setDraft(owner: string, repo: string, number: number, draft: boolean): Promise<void>;
  getPullRequest(
    owner: string,
    repo: string,
    number: number,
  ): { state: 'open' | 'closed'; merged: boolean; headSha: string; base: string; draft: boolean };
  branchSha(owner: string, repo: string, branch: string): Promise<string | null>;
  log(
    owner: string,
    repo: string,
    branch: string,
  ): Promise<Array<{ sha: string; parents: string[]; message: string }>>;
  setPermission(owner: string, repo: string, user: string, permission: Permission): void;
  comment(owner: string, repo: string, number: number, user: string, body: string): Promise<void>;
  comments(owner: string, repo: string, number: number): Array<{ id: number; body: string; user: string }>;
  statuses(
    owner: string,
    repo: string,
    sha: string,
  ): Array<{ context: string; state: string; description?: string; target_url?: string }>;
  branches(owner: string, repo: string): Promise<string[]>;
  pullRequests(
    owner: string,
    repo: string,
  ): Array<{ number: number; head: string; base: string; state: string; draft: boolean; title: string }>;
  setCi(owner: string, repo: string, decide: CiDecide): void;
  /**
   * GitHub's mergeability job takes `ms` (default 0): until it is done every GET answers
   * `mergeable: null`, as GitHub does, instead of the next GET waiting for the answer.
   */
  setMergeabilityDelay(owner: string, repo: string, ms: number): void;
  /**
   * Git reads (`git fetch`, `git ls-remote`: upload-pack) answer `ms` late (default 0): the refs
   * are read when the request arrives and sent after the delay, so an answer can be older than a
   * ref update made meanwhile, as on a slow network.
   */
  setGitReadDelay(owner: string, repo: string, ms: number): void;
  rerunCheck(
    owner: string,
    repo: string,
    sha: string,
    name: string,
    conclusion: CheckConclusion,
  ): Promise<void>;
  setWebhook(url: string, secret: string): void;
  readonly deliveries: Delivery[];
  redeliver(id: string): Promise<number>;
  readonly requests: RequestRecord[];
  resetRequestCount(): void;
  /** `status` (secondary only): 403 (default) or 429, both of which GitHub sends for secondary limits. */
  rateLimitNext(
    n: number,
    kind: 'primary' | 'secondary',
    retryAfterSeconds?: number,
    status?: 403 | 429,
  ): void;
  readonly schemaViolations: string[];

  // --- additions beyond the agreed interface ---
  /** Check runs on a commit (latest per name unless `all`). */
  checkRuns(
    owner: string,
    repo: string,
    sha: string,
  ): Array<{ id: number; name: string; status: string; conclusion: string | null }>;
  /** Resolves once every queued webhook delivery, CI report and background computation has finished. */
  idle(): Promise<void>;
  /** The tokens issued to installations so far (newest last), for expiry tests. */
  readonly installationTokens: Array<{ token: string; installationId: number; expiresAt: number }>;
}

export async function startGitHubEmulator(opts: EmulatorOptions = {}): Promise<GitHubEmulator> {
  const e = new Emulator(opts);
  await e.start();
  return e;
}

// ---------------------------------------------------------------------------------------------

const ZERO = '0000000000000000000000000000000000000000';
const RATE_LIMIT = 5000;
const CI_APP: AppFacts = {
  id: 15368,
  slug: 'github-actions',
  owner: 'github',
  createdAt: Date.parse('2018-07-30T09:30:17Z'),
};
const CI_USER = 'github-actions[bot]';

interface TokenInfo {
  login: string;
  kind: 'pat' | 'installation';
  installationId?: number;
  expiresAt?: number;
}
interface AppState extends AppFacts {
  publicKey: ReturnType<typeof createPublicKey>;
  ttlMs: number;
}
interface Installation {
  id: number;
  appId: number;
  owner: string;
  repo: string;
  createdAt: number;
}
interface Pr extends Omit<PrFacts, 'baseSha' | 'mergeable' | 'mergeableState' | 'comments' | 'commits'> {
  /** `${baseSha}:${headSha}` of the last mergeability computation, and its result. */
  mergeKey: string | null;
  conflict: boolean;
  pendingKey: string | null;
  pending: Promise<void> | null;
}
interface SuiteState {
  id: number;
  sha: string;
  branch: string | null;
  createdAt: number;
  updatedAt: number;
}
interface Repo extends RepoFacts {
  dir: string;
  prs: Map<number, Pr>;
  nextNumber: number;
  statuses: StatusFacts[];
  checkRuns: CheckRunFacts[];
  suites: Map<string, SuiteState>;
  comments: Map<number, CommentFacts>;
  perms: Map<string, Permission>;
  ci: CiDecide;
  mergeabilityDelayMs: number;
  gitReadDelayMs: number;
  refs: Map<string, string>;
  lock: Promise<unknown>;
}
interface Answer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}
interface Ctx {
  req: IncomingMessage;
  params: string[];
  query: URLSearchParams;
  body: Record<string, unknown>;
  token: TokenInfo | null;
  tokenText: string | null;
  /** The App whose JWT authenticated the request ('jwt' routes). */
  app: AppState | null;
}
interface Route {
  method: string;
  template: string;
  re: RegExp;
  doc: string;
  /** 'jwt': only an App JWT; 'token': a PAT or installation token; 'none': anyone. */
  auth: 'jwt' | 'token' | 'none';
  handler: (c: Ctx) => Promise<Answer> | Answer;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

const defaultCi: CiDecide = () => [{ name: 'ci', conclusion: 'success', delayMs: 50 }];

class Emulator implements GitHubEmulator {
  apiUrl = '';
  host = '';
  readonly deliveries: Delivery[] = [];
  readonly requests: RequestRecord[] = [];
  readonly schemaViolations: string[] = [];
  readonly installationTokens: Array<{ token: string; installationId: number; expiresAt: number }> = [];

  private readonly style: 'ghes' | 'dotcom';
  private readonly prefix: string;
  private readonly root = mkdtempSync(join(tmpdir(), 'railyard-gh-'));
  private readonly reposRoot = join(this.root, 'repos');
  private readonly git = new GitRunner();
  private server: Server | null = null;
  private urls: Urls = { api: '', web: '' };
  private readonly tokens = new Map<string, TokenInfo>();
  private readonly apps = new Map<number, AppState>();
  private readonly installations = new Map<number, Installation>();
  private readonly repos = new Map<string, Repo>();
  private readonly rateUsed = new Map<string, { used: number; reset: number }>();
  private forced: Array<{ kind: 'primary' | 'secondary'; retryAfter: number; status: 403 | 429 }> = [];
  private webhook: { url: string; secret: string } | null = null;
  private deliveryChain: Promise<unknown> = Promise.resolve();
  private readonly bodies = new Map<string, { event: string; body: string }>();
  private readonly background = new Set<Promise<unknown>>();
  /** Pending CI timers and the resolver of the promise idle() waits on for each. */
  private readonly timers = new Map<NodeJS.Timeout, () => void>();
  private readonly abort = new AbortController();
  private validator: SchemaValidator | null = null;
  private closed = false;
  private nextId = 1;
  private readonly routes: Route[];

  constructor(private readonly opts: EmulatorOptions) {
    this.style = opts.style ?? 'ghes';
    this.prefix = this.style === 'ghes' ? '/api/v3' : '';
    mkdirSync(this.reposRoot);
    this.routes = this.buildRoutes();
  }

  async start(): Promise<void> {
    if (this.opts.validate) {
      const { loadValidator } = await import('./validate.js');
      this.validator = await loadValidator(this.style);
    }
    const server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) {
          res.statusCode = 500;
          res.setHeader('content-type', 'application/json; charset=utf-8');
        }
        res.end(JSON.stringify({ message: `emulator error: ${String(err)}` }));
      });
    });
    server.keepAliveTimeout = 1000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.server = server;
    const port = (server.address() as { port: number }).port;
    this.host = `127.0.0.1:${port}`;
    this.urls = { api: `http://${this.host}${this.prefix}`, web: `http://${this.host}` };
    this.apiUrl = this.urls.api;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.abort.abort();
    for (const [t, done] of this.timers) {
      clearTimeout(t);
      done();
    }
    this.timers.clear();
    if (this.server) {
      this.server.closeAllConnections();
      await new Promise<void>((resolve) => this.server!.close(() => resolve()));
    }
    await this.git.stop();
    await Promise.allSettled([...this.background]);
    await this.git.stop();
    rmSync(this.root, { recursive: true, force: true, maxRetries: 5, retryDelay: 20 });
  }

  // --- auth ----------------------------------------------------------------------------------

  addToken(token: string, opts: { login?: string } = {}): void {
    this.tokens.set(token, { login: opts.login ?? 'railyard-bot', kind: 'pat' });
  }

  createApp(opts: { installationTokenTtlMs?: number } = {}): { appId: number; privateKeyPem: string } {
    const appId = 100 + this.apps.size + 1;
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    this.apps.set(appId, {
      id: appId,
      slug: `railyard-test-${appId}`,
      owner: 'railyard',
      createdAt: Date.now(),
      publicKey,
      ttlMs: opts.installationTokenTtlMs ?? 3_600_000,
    });
    return { appId, privateKeyPem: privateKey.export({ type: 'pkcs1', format: 'pem' }).toString() };
  }

  installApp(appId: number, owner: string, repo: string): number {
    if (!this.apps.has(appId)) throw new Error(`no app ${appId}`);
    this.mustRepo(owner, repo);
    const id = 40_000 + this.installations.size + 1;
    this.installations.set(id, { id, appId, owner, repo, createdAt: Date.now() });
    return id;
  }

  // --- repositories --------------------------------------------------------------------------

  createRepo(
    owner: string,
    name: string,
    opts: { defaultBranch?: string; files?: Record<string, string> } = {},
  ): { cloneUrl: string; dir: string } {
    const key = `${owner}/${name}`;
    if (this.repos.has(key)) throw new Error(`repository ${key} exists`);
    const defaultBranch = opts.defaultBranch ?? 'main';
    const dir = join(this.reposRoot, owner, `${name}.git`);
    mkdirSync(dir, { recursive: true });
    const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };
    execFileSync('git', ['init', '-q', '--bare', '-b', defaultBranch, dir], { env });
    // GitHub refuses pushes to refs/pull/* (they are its own) and serves them to fetches.
    appendFileSync(
      join(dir, 'config'),
      '[receive]\n\thideRefs = refs/pull\n[http]\n\treceivepack = true\n[gc]\n\tauto = 0\n',
    );
    // The first commit in one git process (fast-import), not one per blob, tree and commit.
    const files = opts.files ?? { 'README.md': `# ${name}\n` };
    const data = (text: string) => `data ${Buffer.byteLength(text)}\n${text}\n`;
    const when = `${Math.floor(Date.now() / 1000)} +0000`;
    const email = `${owner.replace(/[^A-Za-z0-9._-]/g, '')}@users.noreply.github.com`;
    const stream =
      `commit refs/heads/${defaultBranch}\nmark :1\n` +
      `author ${owner} <${email}> ${when}\ncommitter GitHub <noreply@github.com> ${when}\n` +
      data('Initial commit') +
      Object.entries(files)
        .map(
          ([path, content]) =>
            `M 100644 inline ${/[\s"\\]/.test(path) ? JSON.stringify(path) : path}\n${data(content)}`,
        )
        .join('') +
      '\n';
    const marks = join(this.root, `marks-${randomUUID()}`);
    execFileSync('git', ['--git-dir', dir, 'fast-import', '--quiet', `--export-marks=${marks}`], {
      env,
      input: stream,
    });
    const sha = readFileSync(marks, 'utf8').trim().split(' ')[1];
    rmSync(marks, { force: true });
    const now = Date.now();
    this.repos.set(key, {
      id: 500_000 + this.repos.size + 1,
      owner,
      name,
      defaultBranch,
      createdAt: now,
      pushedAt: now,
      openIssues: 0,
      dir,
      prs: new Map(),
      nextNumber: 1,
      statuses: [],
      checkRuns: [],
      suites: new Map(),
      comments: new Map(),
      perms: new Map([[owner, 'admin']]),
      ci: defaultCi,
      mergeabilityDelayMs: 0,
      gitReadDelayMs: 0,
      refs: new Map([[defaultBranch, sha]]),
      lock: Promise.resolve(),
    });
    return { cloneUrl: `${this.urls.web}/${key}.git`, dir };
  }

  async pushCommit(
    owner: string,
    repo: string,
    branch: string,
    files: Record<string, string | null>,
    opts: { message?: string; from?: string; author?: string } = {},
  ): Promise<string> {
    const r = this.mustRepo(owner, repo);
    const author = opts.author ?? owner;
    return this.locked(r, async () => {
      let parent = await this.resolve(r, `refs/heads/${branch}`);
      const old = parent;
      if (parent === null) {
        const from = opts.from ?? r.defaultBranch;
        parent = (await this.resolve(r, `refs/heads/${from}`)) ?? (await this.resolve(r, from));
        if (parent === null) throw new Error(`pushCommit: no branch or commit ${from}`);
      }
      const sha = await this.commitFiles(
        r,
        parent,
        files,
        opts.message ?? `Update ${Object.keys(files).join(', ')}`,
        author,
      );
      await this.git.git(r.dir, ['update-ref', `refs/heads/${branch}`, sha, old ?? ZERO]);
      await this.syncRefs(r, author);
      return sha;
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
    const r = this.mustRepo(owner, repo);
    const base = pr.base ?? r.defaultBranch;
    const user = pr.user ?? owner;
    if (pr.files)
      await this.pushCommit(owner, repo, pr.head, pr.files, { from: base, author: user, message: pr.title });
    const headSha = await this.resolve(r, `refs/heads/${pr.head}`);
    if (headSha === null) throw new Error(`createPullRequest: no branch ${pr.head}`);
    const p = await this.openPr(r, {
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
    const p = this.mustPr(this.mustRepo(owner, repo), number);
    return this.pushCommit(owner, repo, p.head, files, { author: p.user });
  }

  async closePullRequest(owner: string, repo: string, number: number): Promise<void> {
    const r = this.mustRepo(owner, repo);
    const p = this.mustPr(r, number);
    if (p.state === 'closed') return;
    this.setClosed(r, p, p.user);
  }

  async setDraft(owner: string, repo: string, number: number, draft: boolean): Promise<void> {
    const r = this.mustRepo(owner, repo);
    const p = this.mustPr(r, number);
    if (p.draft === draft) return;
    p.draft = draft;
    p.updatedAt = Date.now();
    this.prEvent(r, p, draft ? 'converted_to_draft' : 'ready_for_review', p.user);
  }

  getPullRequest(owner: string, repo: string, number: number) {
    const p = this.mustPr(this.mustRepo(owner, repo), number);
    return { state: p.state, merged: p.merged, headSha: p.headSha, base: p.base, draft: p.draft };
  }

  async branchSha(owner: string, repo: string, branch: string): Promise<string | null> {
    return this.resolve(this.mustRepo(owner, repo), `refs/heads/${branch}`);
  }

  async log(owner: string, repo: string, branch: string) {
    const r = this.mustRepo(owner, repo);
    const out = await this.git.git(r.dir, ['log', '--format=%H%x00%P%x00%B%x1e', `refs/heads/${branch}`]);
    return out
      .split('\x1e')
      .map((s) => s.replace(/^\n/, ''))
      .filter((s) => s.length > 0)
      .map((s) => {
        const [sha, parents, message] = s.split('\x00');
        return { sha, parents: parents ? parents.split(' ') : [], message: message.trimEnd() };
      });
  }

  setPermission(owner: string, repo: string, user: string, permission: Permission): void {
    this.mustRepo(owner, repo).perms.set(user, permission);
  }

  async comment(owner: string, repo: string, number: number, user: string, body: string): Promise<void> {
    const r = this.mustRepo(owner, repo);
    this.addComment(r, this.mustPr(r, number), user, body);
  }

  comments(owner: string, repo: string, number: number) {
    return [...this.mustRepo(owner, repo).comments.values()]
      .filter((c) => c.number === number)
      .map((c) => ({ id: c.id, body: c.body, user: c.user }));
  }

  statuses(owner: string, repo: string, sha: string) {
    return this.mustRepo(owner, repo)
      .statuses.filter((s) => s.sha === sha)
      .map((s) => ({
        context: s.context,
        state: s.state,
        ...(s.description === null ? {} : { description: s.description }),
        ...(s.targetUrl === null ? {} : { target_url: s.targetUrl }),
      }));
  }

  checkRuns(owner: string, repo: string, sha: string) {
    return this.mustRepo(owner, repo)
      .checkRuns.filter((c) => c.headSha === sha)
      .map((c) => ({ id: c.id, name: c.name, status: c.status, conclusion: c.conclusion }));
  }

  async branches(owner: string, repo: string): Promise<string[]> {
    const r = this.mustRepo(owner, repo);
    const out = await this.git.git(r.dir, ['for-each-ref', '--format=%(refname:lstrip=2)', 'refs/heads']);
    return out.split('\n').filter((s) => s.length > 0);
  }

  pullRequests(owner: string, repo: string) {
    return [...this.mustRepo(owner, repo).prs.values()].map((p) => ({
      number: p.number,
      head: p.head,
      base: p.base,
      state: p.state,
      draft: p.draft,
      title: p.title,
    }));
  }

  setCi(owner: string, repo: string, decide: CiDecide): void {
    this.mustRepo(owner, repo).ci = decide;
  }

  setMergeabilityDelay(owner: string, repo: string, ms: number): void {
    this.mustRepo(owner, repo).mergeabilityDelayMs = ms;
  }

  setGitReadDelay(owner: string, repo: string, ms: number): void {
    this.mustRepo(owner, repo).gitReadDelayMs = ms;
  }

  async rerunCheck(
    owner: string,
    repo: string,
    sha: string,
    name: string,
    conclusion: CheckConclusion,
  ): Promise<void> {
    const r = this.mustRepo(owner, repo);
    const old = [...r.checkRuns].reverse().find((c) => c.headSha === sha && c.name === name);
    const oldStatus = [...r.statuses].reverse().find((s) => s.sha === sha && s.context === name);
    if (!old && !oldStatus) throw new Error(`rerunCheck: no check ${name} on ${sha}`);
    if (old) {
      const suite = [...r.suites.values()].find((s) => s.id === old.suiteId)!;
      const run: CheckRunFacts = {
        id: this.id(),
        name,
        headSha: sha,
        status: 'in_progress',
        conclusion: null,
        startedAt: Date.now(),
        completedAt: null,
        suiteId: suite.id,
      };
      r.checkRuns.push(run);
      this.completeCheckRun(r, suite, run, conclusion);
    } else {
      this.addStatus(r, sha, statusState(conclusion), name, `${name}: ${conclusion}`, null, CI_USER);
    }
  }

  // --- webhooks ------------------------------------------------------------------------------

  setWebhook(url: string, secret: string): void {
    this.webhook = { url, secret };
  }

  async redeliver(id: string): Promise<number> {
    const b = this.bodies.get(id);
    if (!b) throw new Error(`no delivery ${id}`);
    const d = this.deliveries.find((x) => x.id === id)!;
    const status = await this.post(id, b.event, b.body);
    d.status = status;
    return status;
  }

  // --- observation and faults ----------------------------------------------------------------

  resetRequestCount(): void {
    this.requests.length = 0;
  }

  rateLimitNext(
    n: number,
    kind: 'primary' | 'secondary',
    retryAfterSeconds = 60,
    status: 403 | 429 = 403,
  ): void {
    for (let i = 0; i < n; i++) this.forced.push({ kind, retryAfter: retryAfterSeconds, status });
  }

  async idle(): Promise<void> {
    // Work can start more work (a CI timer posts a status, whose delivery is queued…): wait until none is left.
    while (this.background.size > 0) await Promise.allSettled([...this.background]);
  }

  // --- internals: state ----------------------------------------------------------------------

  private id(): number {
    return this.nextId++;
  }

  private mustRepo(owner: string, name: string): Repo {
    const r = this.repos.get(`${owner}/${name}`);
    if (!r) throw new Error(`no repository ${owner}/${name}`);
    return r;
  }

  private mustPr(r: Repo, number: number): Pr {
    const p = r.prs.get(number);
    if (!p) throw new Error(`no pull request #${number} in ${r.owner}/${r.name}`);
    return p;
  }

  private locked<T>(r: Repo, fn: () => Promise<T>): Promise<T> {
    const run = r.lock.then(fn, fn);
    r.lock = run.catch(() => undefined);
    return run;
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.background.add(p);
    const done = () => this.background.delete(p);
    p.then(done, done);
    return p;
  }

  private later(ms: number, fn: () => void): void {
    if (this.closed) return;
    let done!: () => void;
    this.track(new Promise<void>((resolve) => (done = resolve)));
    const t = setTimeout(() => {
      this.timers.delete(t);
      try {
        if (!this.closed) fn();
      } finally {
        done();
      }
    }, ms);
    this.timers.set(t, done);
  }

  private async resolve(r: Repo, rev: string): Promise<string | null> {
    const res = await this.git.run(
      ['--git-dir', r.dir, 'rev-parse', '--verify', '--quiet', `${rev}^{commit}`],
      { okCodes: [1, 128] },
    );
    return res.code === 0 ? res.stdout : null;
  }

  private async isAncestor(r: Repo, a: string, b: string): Promise<boolean> {
    const res = await this.git.run(['--git-dir', r.dir, 'merge-base', '--is-ancestor', a, b], {
      okCodes: [1],
    });
    return res.code === 0;
  }

  private async commitFiles(
    r: Repo,
    parent: string,
    files: Record<string, string | null>,
    message: string,
    author: string,
  ): Promise<string> {
    const index = join(this.root, `index-${randomUUID()}`);
    const env = { GIT_INDEX_FILE: index };
    try {
      await this.git.git(r.dir, ['read-tree', parent], { env });
      const lines: string[] = [];
      for (const [path, content] of Object.entries(files)) {
        if (content === null) lines.push(`0 ${ZERO}\t${path}`);
        else
          lines.push(
            `100644 ${await this.git.git(r.dir, ['hash-object', '-w', '--stdin'], { input: content })}\t${path}`,
          );
      }
      // No files: an empty commit (same tree as its parent).
      if (lines.length > 0)
        await this.git.git(r.dir, ['update-index', '--add', '--remove', '--index-info'], {
          env,
          input: lines.join('\n') + '\n',
        });
      const tree = await this.git.git(r.dir, ['write-tree'], { env });
      return await this.git.git(r.dir, ['commit-tree', tree, '-p', parent, '-m', message], {
        env: commitEnv(author),
      });
    } finally {
      rmSync(index, { force: true });
    }
  }

  /** Reads the branches and reacts to every change since the last look (push events, PR updates, CI). Call under the repo lock. */
  private async syncRefs(r: Repo, actor: string): Promise<void> {
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

  private async onBranchChange(
    r: Repo,
    branch: string,
    before: string | null,
    after: string | null,
    actor: string,
  ): Promise<void> {
    r.pushedAt = Date.now();
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
        this.setClosed(r, p, actor);
      }
    }
    if (after !== null) this.runCi(r, branch, after);
  }

  private async openPr(
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
    };
    r.prs.set(number, p);
    r.openIssues++;
    await this.git.git(r.dir, ['update-ref', `refs/pull/${number}/head`, headSha]);
    this.prEvent(r, p, 'opened', o.user);
    return p;
  }

  private setClosed(r: Repo, p: Pr, actor: string): void {
    p.state = 'closed';
    p.closedAt = Date.now();
    p.updatedAt = p.closedAt;
    r.openIssues = Math.max(0, r.openIssues - 1);
    this.prEvent(r, p, 'closed', actor);
  }

  private addComment(r: Repo, p: Pr, user: string, body: string): CommentFacts {
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
    this.emit(r, 'issue_comment', {
      action: 'created',
      issue: this.issueJson(r, p),
      comment: commentJson(this.urls, r, c),
      sender: userJson(this.urls, user),
    });
    return c;
  }

  private addStatus(
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
    this.statusEvent(r, s);
    return s;
  }

  private prFacts(
    r: Repo,
    p: Pr,
    baseSha: string,
    mergeable: boolean | null,
    mergeableState: string,
  ): PrFacts {
    return {
      ...p,
      baseSha,
      mergeable,
      mergeableState,
      comments: [...r.comments.values()].filter((c) => c.number === p.number).length,
      commits: 1,
    };
  }

  private combinedState(r: Repo, sha: string): 'failure' | 'pending' | 'success' {
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
  private async prAnswer(r: Repo, p: Pr, lazy: boolean) {
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
      else if (this.combinedState(r, p.headSha) === 'failure') state = 'unstable';
      else state = 'clean';
    }
    return pullJson(this.urls, r, this.prFacts(r, p, baseSha, mergeable, state));
  }

  private issueJson(r: Repo, p: Pr) {
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

  // --- internals: CI -------------------------------------------------------------------------

  private runCi(r: Repo, branch: string, sha: string): void {
    let checks: CiCheck[];
    try {
      checks = r.ci({ branch, sha, files: (path) => this.readFile(r, sha, path) });
    } catch {
      checks = [];
    }
    if (checks.length === 0) return;
    let suite: SuiteState | null = null;
    for (const c of checks) {
      if ((c.kind ?? 'check_run') === 'status') {
        this.addStatus(r, sha, 'pending', c.name, `${c.name} is running`, null, CI_USER);
        this.later(c.delayMs ?? 50, () => {
          this.addStatus(
            r,
            sha,
            statusState(c.conclusion),
            c.name,
            `${c.name}: ${c.conclusion}`,
            `${this.urls.web}/${r.owner}/${r.name}/ci/${sha}`,
            CI_USER,
          );
        });
        continue;
      }
      if (!suite) {
        const now = Date.now();
        suite = { id: this.id(), sha, branch, createdAt: now, updatedAt: now };
        r.suites.set(`${sha}:${suite.id}`, suite);
      }
      const run: CheckRunFacts = {
        id: this.id(),
        name: c.name,
        headSha: sha,
        status: 'in_progress',
        conclusion: null,
        startedAt: Date.now(),
        completedAt: null,
        suiteId: suite.id,
      };
      r.checkRuns.push(run);
      const s = suite;
      this.later(c.delayMs ?? 50, () => this.completeCheckRun(r, s, run, c.conclusion));
    }
  }

  private completeCheckRun(
    r: Repo,
    suite: SuiteState,
    run: CheckRunFacts,
    conclusion: CheckConclusion,
  ): void {
    run.status = 'completed';
    run.conclusion = conclusion;
    run.completedAt = Date.now();
    suite.updatedAt = run.completedAt;
    this.emit(r, 'check_run', {
      action: 'completed',
      check_run: this.checkRunEventJson(r, suite, run),
      sender: userJson(this.urls, CI_USER, 'Bot'),
    });
    const runs = latestPerName(r.checkRuns.filter((c) => c.suiteId === suite.id));
    if (runs.every((c) => c.status === 'completed')) {
      const json = this.suiteJson(r, suite, runs);
      this.emit(
        r,
        'check_suite',
        (async () => {
          const c = await this.commitJson(r, suite.sha);
          json.head_commit = {
            id: c.sha,
            tree_id: c.tree,
            message: c.message,
            timestamp: c.cd,
            author: { name: c.an, email: c.ae },
            committer: { name: c.cn, email: c.ce },
          };
          return {
            action: 'completed',
            check_suite: json,
            sender: userJson(this.urls, CI_USER, 'Bot'),
          };
        })(),
      );
    }
  }

  private suiteConclusion(runs: CheckRunFacts[]): string | null {
    if (runs.some((c) => c.status !== 'completed')) return null;
    for (const bad of ['failure', 'timed_out', 'cancelled', 'action_required'])
      if (runs.some((c) => c.conclusion === bad)) return bad;
    if (runs.every((c) => c.conclusion === 'skipped')) return 'skipped';
    if (runs.every((c) => c.conclusion === 'neutral' || c.conclusion === 'skipped')) return 'neutral';
    return 'success';
  }

  private suiteJson(r: Repo, suite: SuiteState, runs: CheckRunFacts[]) {
    const api = `${this.urls.api}/repos/${r.owner}/${r.name}`;
    const conclusion = this.suiteConclusion(runs);
    return {
      id: suite.id,
      node_id: nodeId('CheckSuite', suite.id),
      head_branch: suite.branch,
      head_sha: suite.sha,
      status: conclusion === null ? 'in_progress' : 'completed',
      conclusion,
      url: `${api}/check-suites/${suite.id}`,
      before: ZERO,
      after: suite.sha,
      pull_requests: [],
      app: appJson(this.urls, CI_APP),
      created_at: iso(suite.createdAt),
      updated_at: iso(suite.updatedAt),
      latest_check_runs_count: runs.length,
      check_runs_url: `${api}/check-suites/${suite.id}/check-runs`,
      rerequestable: true,
      runs_rerequestable: true,
      head_commit: null as unknown,
    };
  }

  private checkRunEventJson(r: Repo, suite: SuiteState, run: CheckRunFacts) {
    const base = checkRunJson(this.urls, r, CI_APP, run);
    const runs = latestPerName(r.checkRuns.filter((c) => c.suiteId === suite.id));
    const s = this.suiteJson(r, suite, runs);
    const {
      head_commit: _hc,
      latest_check_runs_count: _l,
      check_runs_url: _u,
      rerequestable: _r,
      runs_rerequestable: _rr,
      ...simple
    } = s;
    return { ...base, check_suite: simple };
  }

  private readFile(r: Repo, sha: string, path: string): Promise<string | null> {
    return this.git
      .run(['--git-dir', r.dir, 'cat-file', 'blob', `${sha}:${path}`], { okCodes: [128] })
      .then((res) => (res.code === 0 ? res.stdout : null));
  }

  // --- internals: webhooks -------------------------------------------------------------------

  /** Queues a delivery; payloads still being built (git reads) keep their place in the order. */
  private emit(
    r: Repo,
    event: string,
    payload: Record<string, unknown> | Promise<Record<string, unknown> | null>,
  ): void {
    const built = Promise.resolve(payload);
    const run = this.emitOrder
      .then(() => built)
      .then((p) => {
        if (p) this.emitNow(r, event, p);
      });
    this.emitOrder = run.catch(() => undefined);
    this.track(run);
  }
  private emitOrder: Promise<unknown> = Promise.resolve();

  private emitNow(r: Repo, event: string, payload: Record<string, unknown>): void {
    const full: Record<string, unknown> = { ...payload, repository: repoJson(this.urls, r) };
    const inst = [...this.installations.values()].find((i) => i.owner === r.owner && i.repo === r.name);
    if (inst) full.installation = { id: inst.id, node_id: nodeId('Installation', inst.id) };
    if (this.validator) {
      const v = this.validator.webhook(event, full);
      if (v)
        this.schemaViolations.push(
          `webhook ${event}${typeof full.action === 'string' ? `.${full.action}` : ''}: ${v}`,
        );
    }
    if (!this.webhook) return;
    const id = randomUUID();
    const body = JSON.stringify(full);
    const d: Delivery = {
      id,
      event,
      status: 0,
      payload: full,
      ...(typeof payload.action === 'string' ? { action: payload.action } : {}),
    };
    this.bodies.set(id, { event, body });
    const run = this.deliveryChain.then(async () => {
      if (this.closed) return;
      d.status = await this.post(id, event, body);
      this.deliveries.push(d);
    });
    this.deliveryChain = run.catch(() => undefined);
    this.track(run);
  }

  private async post(id: string, event: string, body: string): Promise<number> {
    const hook = this.webhook;
    if (!hook || this.closed) return 0;
    try {
      const res = await fetch(hook.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'GitHub-Hookshot/emulator',
          'x-github-event': event,
          'x-github-delivery': id,
          'x-github-hook-id': '1',
          'x-github-hook-installation-target-type': 'repository',
          'x-hub-signature-256': await signPayload(hook.secret, body),
        },
        body,
        signal: AbortSignal.any([this.abort.signal, AbortSignal.timeout(10_000)]),
      });
      await res.arrayBuffer();
      return res.status;
    } catch {
      return 0;
    }
  }

  private prEvent(r: Repo, p: Pr, action: string, actor: string, extra: Record<string, unknown> = {}): void {
    // Snapshot now: the PR may change before the git read below finishes.
    const snapshot: Pr = { ...p };
    const run = (async () => {
      const baseSha = (await this.resolve(r, `refs/heads/${snapshot.base}`)) ?? snapshot.headSha;
      return {
        action,
        number: snapshot.number,
        ...extra,
        pull_request: pullJson(this.urls, r, this.prFacts(r, snapshot, baseSha, null, 'unknown')),
        sender: userJson(this.urls, actor),
      };
    })();
    this.emit(r, 'pull_request', run);
  }

  private async commitJson(r: Repo, sha: string) {
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

  private async pushPayload(
    r: Repo,
    branch: string,
    before: string | null,
    after: string | null,
    forced: boolean,
    actor: string,
  ): Promise<Record<string, unknown> | null> {
    if (!this.webhook && !this.validator) return null;
    const web = `${this.urls.web}/${r.owner}/${r.name}`;
    const commits: unknown[] = [];
    let head: unknown = null;
    if (after !== null) {
      const range =
        before === null ? [after, '--not', '--branches', '--exclude', branch] : [`${before}..${after}`];
      const list = (await this.git.git(r.dir, ['rev-list', '--reverse', '--max-count=20', ...range]))
        .split('\n')
        .filter(Boolean);
      const toJson = async (sha: string) => {
        const c = await this.commitJson(r, sha);
        const files = await this.git.git(r.dir, [
          'diff-tree',
          '--no-commit-id',
          '--name-status',
          '-r',
          '--root',
          sha,
        ]);
        const added: string[] = [];
        const removed: string[] = [];
        const modified: string[] = [];
        for (const line of files.split('\n').filter(Boolean)) {
          const [st, path] = line.split('\t');
          (st === 'A' ? added : st === 'D' ? removed : modified).push(path);
        }
        return {
          id: c.sha,
          tree_id: c.tree,
          distinct: true,
          message: c.message,
          timestamp: c.cd,
          url: `${web}/commit/${c.sha}`,
          author: { name: c.an, email: c.ae, date: c.ad },
          committer: { name: c.cn, email: c.ce, date: c.cd },
          added,
          removed,
          modified,
        };
      };
      for (const sha of list) commits.push(await toJson(sha));
      head = await toJson(after);
    }
    return {
      ref: `refs/heads/${branch}`,
      before: before ?? ZERO,
      after: after ?? ZERO,
      created: before === null,
      deleted: after === null,
      forced,
      base_ref: null,
      compare: `${web}/compare/${(before ?? ZERO).slice(0, 12)}...${(after ?? ZERO).slice(0, 12)}`,
      commits,
      head_commit: head,
      pusher: { name: actor, email: `${actor.replace(/[^A-Za-z0-9._-]/g, '')}@users.noreply.github.com` },
      sender: userJson(this.urls, actor),
    };
  }

  private statusEvent(r: Repo, s: StatusFacts): void {
    if (!this.webhook && !this.validator) return;
    const snapshot = { ...s };
    const run = (async () => {
      const c = await this.commitJson(r, snapshot.sha);
      const api = `${this.urls.api}/repos/${r.owner}/${r.name}`;
      const web = `${this.urls.web}/${r.owner}/${r.name}`;
      const containing = (
        await this.git.git(r.dir, [
          'for-each-ref',
          '--format=%(refname:lstrip=2)',
          '--points-at',
          snapshot.sha,
          'refs/heads',
        ])
      )
        .split('\n')
        .filter(Boolean);
      return {
        id: snapshot.id,
        sha: snapshot.sha,
        name: `${r.owner}/${r.name}`,
        target_url: snapshot.targetUrl,
        avatar_url: null,
        context: snapshot.context,
        description: snapshot.description,
        state: snapshot.state,
        commit: {
          sha: c.sha,
          node_id: nodeId('Commit', Number.parseInt(c.sha.slice(0, 8), 16)),
          commit: {
            author: { name: c.an, email: c.ae, date: c.ad },
            committer: { name: c.cn, email: c.ce, date: c.cd },
            message: c.message,
            tree: { sha: c.tree, url: `${api}/git/trees/${c.tree}` },
            url: `${api}/git/commits/${c.sha}`,
            comment_count: 0,
            verification: {
              verified: false,
              reason: 'unsigned',
              signature: null,
              payload: null,
              verified_at: null,
            },
          },
          url: `${api}/commits/${c.sha}`,
          html_url: `${web}/commit/${c.sha}`,
          comments_url: `${api}/commits/${c.sha}/comments`,
          author: null,
          committer: null,
          parents: c.parents.map((p) => ({
            sha: p,
            url: `${api}/commits/${p}`,
            html_url: `${web}/commit/${p}`,
          })),
        },
        branches: containing.map((b) => ({
          name: b,
          commit: { sha: snapshot.sha, url: `${api}/commits/${snapshot.sha}` },
          protected: false,
        })),
        created_at: iso(snapshot.createdAt),
        updated_at: iso(snapshot.createdAt),
        sender: userJson(this.urls, snapshot.creator),
      };
    })();
    this.emit(r, 'status', run);
  }

  // --- internals: HTTP -----------------------------------------------------------------------

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    const git = /^\/([^/]+)\/([^/]+)\.git(\/.*)$/.exec(url.pathname);
    if (git && !url.pathname.startsWith(`${this.prefix}/`))
      return this.handleGit(req, res, git[1], git[2], git[3], url.search.slice(1));
    if (this.prefix && !url.pathname.startsWith(`${this.prefix}/`) && url.pathname !== this.prefix) {
      res.statusCode = 404;
      res.end('Not Found');
      return;
    }
    return this.handleRest(req, res, url);
  }

  private tokenFromBasic(header: string | undefined): string | null {
    if (!header) return null;
    const trimmed = header.trim();
    const space = trimmed.search(/\s/);
    if (space <= 0) return null;
    const m = [trimmed, trimmed.slice(0, space), trimmed.slice(space).trim()];
    if (!m[2]) return null;
    const scheme = m[1].toLowerCase();
    if (scheme === 'bearer' || scheme === 'token') return m[2];
    if (scheme !== 'basic') return null;
    const decoded = Buffer.from(m[2], 'base64').toString('utf8');
    const i = decoded.indexOf(':');
    const user = i < 0 ? decoded : decoded.slice(0, i);
    const pass = i < 0 ? '' : decoded.slice(i + 1);
    if (pass && pass !== 'x-oauth-basic') return pass;
    return user || null;
  }

  private validToken(text: string | null): TokenInfo | null {
    if (text === null) return null;
    const t = this.tokens.get(text);
    if (!t) return null;
    if (t.expiresAt !== undefined && t.expiresAt <= Date.now()) return null;
    return t;
  }

  private canSee(t: TokenInfo, r: Repo): boolean {
    if (t.kind === 'pat') return true;
    const inst = this.installations.get(t.installationId!);
    return inst !== undefined && inst.owner === r.owner && inst.repo === r.name;
  }

  private async handleGit(
    req: IncomingMessage,
    res: ServerResponse,
    owner: string,
    name: string,
    rest: string,
    query: string,
  ): Promise<void> {
    const r = this.repos.get(`${owner}/${name}`);
    const token = this.validToken(this.tokenFromBasic(req.headers.authorization));
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
    if (!r || !this.canSee(token, r)) {
      req.resume();
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('Repository not found.\n');
      return;
    }
    const isPush = rest === '/git-receive-pack' && req.method === 'POST';
    // After a push, the emulator reacts (PR updates, push event, CI) before git's answer completes,
    // so a test's `git push` returns with GitHub's state already updated.
    const afterPush = isPush
      ? () => this.track(this.locked(r, () => this.syncRefs(r, token.login)))
      : undefined;
    await this.git.serveHttpBackend(
      req,
      res,
      this.reposRoot,
      `/${owner}/${name}.git${rest}`,
      query,
      token.login,
      afterPush,
      rest === '/git-upload-pack' && req.method === 'POST' ? r.gitReadDelayMs : 0,
    );
  }

  private rateHeaders(key: string, count: boolean): Record<string, string> {
    const now = Math.floor(Date.now() / 1000);
    let e = this.rateUsed.get(key);
    if (!e || e.reset <= now) {
      e = { used: 0, reset: now + 3600 };
      this.rateUsed.set(key, e);
    }
    if (count) e.used++;
    return {
      'x-ratelimit-limit': String(RATE_LIMIT),
      'x-ratelimit-remaining': String(Math.max(0, RATE_LIMIT - e.used)),
      'x-ratelimit-reset': String(e.reset),
      'x-ratelimit-used': String(e.used),
      'x-ratelimit-resource': 'core',
    };
  }

  private async handleRest(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    // Octokit sends `heads/x` as `heads%2Fx`; GitHub reads both.
    const path = url.pathname.slice(this.prefix.length).replace(/%2F/gi, '/') || '/';
    const method = req.method ?? 'GET';
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const tokenText = this.tokenFromBasic(req.headers.authorization);
    const rateKey = tokenText ?? `ip:${req.socket.remoteAddress}`;
    const route = this.routes.find((rt) => rt.method === method && rt.re.test(path));
    const isRateLimitEndpoint = route?.template === '/rate_limit';
    let headers = this.rateHeaders(rateKey, !isRateLimitEndpoint);
    let answer: Answer;
    const forced = this.forced.shift();
    if (forced && forced.kind === 'primary') {
      const e = this.rateUsed.get(rateKey)!;
      e.used = RATE_LIMIT;
      headers = this.rateHeaders(rateKey, false);
      const who = this.tokens.get(tokenText ?? '');
      answer = {
        status: 403,
        body: {
          message: `API rate limit exceeded for ${who?.kind === 'installation' ? `installation ID ${who.installationId}` : `user ID ${who ? userJsonId(who.login) : 0}`}. If you reach out to GitHub Support for help, please include the request ID ${randomUUID()}.`,
          documentation_url:
            'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-primary-rate-limits',
          status: '403',
        },
      };
      // The window resets after a second, so clients that wait for reset do not wait long.
      e.reset = Math.floor(Date.now() / 1000) + 1;
      headers['x-ratelimit-reset'] = String(e.reset);
      e.used = 0;
    } else if (forced) {
      answer = {
        status: forced.status,
        headers: { 'retry-after': String(forced.retryAfter) },
        body: {
          message: `You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID ${randomUUID()}.`,
          documentation_url:
            'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits',
          status: String(forced.status),
        },
      };
    } else if (!route) {
      answer = notFound('https://docs.github.com/rest');
    } else {
      answer = await this.dispatch(route, req, path, url, raw, tokenText);
    }
    const body = answer.body === undefined ? '' : JSON.stringify(answer.body);
    const out: Record<string, string> = {
      ...headers,
      'x-github-request-id': randomBytes(8).toString('hex').toUpperCase(),
      'x-github-media-type': 'github.v3; format=json',
      ...(this.style === 'ghes' ? { 'x-github-enterprise-version': '3.19.0' } : {}),
      ...answer.headers,
    };
    let status = answer.status;
    if (method === 'GET' && status === 200) {
      const etag = `W/"${createHash('sha256').update(body).digest('hex')}"`;
      out.etag = etag;
      out['cache-control'] = 'private, max-age=60, s-maxage=60';
      out.vary = 'Accept, Authorization, Cookie, X-GitHub-OTP';
      const inm = req.headers['if-none-match'];
      if (inm && inm.split(',').some((t) => t.trim() === etag || t.trim() === etag.slice(2))) {
        status = 304;
        // Conditional requests that answer 304 do not count against the rate limit.
        const e = this.rateUsed.get(rateKey);
        if (e && !isRateLimitEndpoint) e.used = Math.max(0, e.used - 1);
        Object.assign(out, this.rateHeaders(rateKey, false));
      }
    }
    this.requests.push({ method, path, status, token: tokenText });
    if (this.validator && status !== 304) {
      const v = this.validator.response(method, route?.template ?? path, status, answer.body);
      if (v) this.schemaViolations.push(`${method} ${path} ${status}: ${v}`);
    }
    if (status === 304 || answer.body === undefined) {
      res.writeHead(status, out);
      res.end();
      return;
    }
    out['content-type'] = 'application/json; charset=utf-8';
    res.writeHead(status, out);
    res.end(body);
  }

  private async dispatch(
    route: Route,
    req: IncomingMessage,
    path: string,
    url: URL,
    raw: string,
    tokenText: string | null,
  ): Promise<Answer> {
    const params = route.re
      .exec(path)!
      .slice(1)
      .map((s) => decodeURIComponent(s));
    let body: Record<string, unknown> = {};
    if (raw.length > 0) {
      try {
        const parsed: unknown = JSON.parse(raw);
        if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
          throw new Error('not an object');
        body = parsed as Record<string, unknown>;
      } catch {
        return {
          status: 400,
          body: { message: 'Problems parsing JSON', documentation_url: route.doc, status: '400' },
        };
      }
    }
    let token: TokenInfo | null = null;
    let app: AppState | null = null;
    if (route.auth === 'jwt') {
      const checked = this.checkJwt(tokenText);
      if (typeof checked === 'string')
        return { status: 401, body: { message: checked, documentation_url: route.doc, status: '401' } };
      app = checked;
    } else if (route.auth === 'token') {
      if (tokenText === null)
        return {
          status: 401,
          body: { message: 'Requires authentication', documentation_url: route.doc, status: '401' },
        };
      token = this.validToken(tokenText);
      if (!token)
        return {
          status: 401,
          body: {
            message: 'Bad credentials',
            documentation_url: 'https://docs.github.com/rest',
            status: '401',
          },
        };
    }
    try {
      return await route.handler({ req, params, query: url.searchParams, body, token, tokenText, app });
    } catch (e) {
      if (e instanceof HttpError) {
        return {
          status: e.status,
          body: { message: e.message, documentation_url: route.doc, ...e.extra, status: String(e.status) },
        };
      }
      throw e;
    }
  }

  /** Verifies an App JWT (RS256, iss = app id, exp in the future and at most 10 minutes after iat); returns GitHub's message when bad. */
  private checkJwt(text: string | null): string | AppState {
    if (text === null) return 'A JSON web token could not be decoded';
    const parts = text.split('.');
    if (parts.length !== 3) return 'A JSON web token could not be decoded';
    let header: { alg?: string };
    let claims: { iss?: string | number; exp?: number; iat?: number };
    try {
      header = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8')) as { alg?: string };
      claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as typeof claims;
    } catch {
      return 'A JSON web token could not be decoded';
    }
    if (header.alg !== 'RS256') return 'A JSON web token could not be decoded';
    const app = this.apps.get(Number(claims.iss));
    if (!app) return `Integration not found`;
    const ok = verifySig(
      'RSA-SHA256',
      Buffer.from(`${parts[0]}.${parts[1]}`),
      app.publicKey,
      Buffer.from(parts[2], 'base64url'),
    );
    if (!ok) return 'A JSON web token could not be decoded';
    const now = Math.floor(Date.now() / 1000);
    if (typeof claims.exp !== 'number' || claims.exp <= now)
      return "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires";
    if (typeof claims.iat !== 'number' || claims.iat > now + 60)
      return "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued";
    if (claims.exp - claims.iat > 600 + 60) return "'Expiration time' claim ('exp') is too far in the future";
    return app;
  }

  private repoFor(c: Ctx): Repo {
    const r = this.repos.get(`${c.params[0]}/${c.params[1]}`);
    if (!r || !c.token || !this.canSee(c.token, r)) throw new HttpError(404, 'Not Found');
    return r;
  }

  private prFor(r: Repo, n: string): Pr {
    const p = /^\d+$/.test(n) ? r.prs.get(Number(n)) : undefined;
    if (!p) throw new HttpError(404, 'Not Found');
    return p;
  }

  private buildRoutes(): Route[] {
    const routes: Route[] = [];
    const seg = '([^/]+)';
    const add = (
      method: string,
      template: string,
      doc: string,
      auth: Route['auth'],
      handler: Route['handler'],
      re?: RegExp,
    ) => {
      const pattern = re ?? new RegExp(`^${template.replace(/\{[^{}]+\}/g, seg)}$`);
      routes.push({
        method,
        template,
        re: pattern,
        doc: `https://docs.github.com/${this.style === 'ghes' ? 'enterprise-server@3.19/' : ''}rest/${doc}`,
        auth,
        handler,
      });
    };
    const validation = (resource: string, field: string, code = 'invalid', message?: string) =>
      new HttpError(422, 'Validation Failed', {
        errors: [{ resource, field, code, ...(message ? { message } : {}) }],
      });

    add(
      'GET',
      '/rate_limit',
      'rate-limit/rate-limit#get-rate-limit-status-for-the-authenticated-user',
      'none',
      (c) => {
        const h = this.rateHeaders(c.tokenText ?? `ip:${c.req.socket.remoteAddress}`, false);
        const core = {
          limit: Number(h['x-ratelimit-limit']),
          remaining: Number(h['x-ratelimit-remaining']),
          reset: Number(h['x-ratelimit-reset']),
          used: Number(h['x-ratelimit-used']),
        };
        const search = { limit: 30, remaining: 30, reset: core.reset, used: 0 };
        return { status: 200, body: { resources: { core, search, graphql: { ...core } }, rate: core } };
      },
    );

    add('GET', '/repos/{owner}/{repo}', 'repos/repos#get-a-repository', 'token', (c) => {
      const r = this.repoFor(c);
      return { status: 200, body: repoJson(this.urls, r) };
    });

    add(
      'GET',
      '/repos/{owner}/{repo}/pulls/{pull_number}',
      'pulls/pulls#get-a-pull-request',
      'token',
      async (c) => {
        const r = this.repoFor(c);
        return { status: 200, body: await this.prAnswer(r, this.prFor(r, c.params[2]), true) };
      },
    );

    add('POST', '/repos/{owner}/{repo}/pulls', 'pulls/pulls#create-a-pull-request', 'token', async (c) => {
      const r = this.repoFor(c);
      const { title, head, base, body, draft } = c.body;
      if (typeof head !== 'string' || head === '') throw validation('PullRequest', 'head', 'missing_field');
      if (typeof base !== 'string' || base === '') throw validation('PullRequest', 'base', 'missing_field');
      if (typeof title !== 'string' || title === '')
        throw validation('PullRequest', 'title', 'missing_field');
      const headBranch = head.includes(':') ? head.slice(head.indexOf(':') + 1) : head;
      return this.locked(r, async () => {
        const headSha = await this.resolve(r, `refs/heads/${headBranch}`);
        if (headSha === null) throw validation('PullRequest', 'head', 'invalid');
        const baseSha = await this.resolve(r, `refs/heads/${base}`);
        if (baseSha === null) throw validation('PullRequest', 'base', 'invalid');
        if ([...r.prs.values()].some((p) => p.state === 'open' && p.head === headBranch && p.base === base))
          throw new HttpError(422, 'Validation Failed', {
            errors: [
              {
                resource: 'PullRequest',
                code: 'custom',
                message: `A pull request already exists for ${r.owner}:${headBranch}.`,
              },
            ],
          });
        if (await this.isAncestor(r, headSha, baseSha))
          throw new HttpError(422, 'Validation Failed', {
            errors: [
              {
                resource: 'PullRequest',
                code: 'custom',
                message: `No commits between ${base} and ${headBranch}`,
              },
            ],
          });
        const p = await this.openPr(r, {
          head: headBranch,
          base,
          title,
          body: typeof body === 'string' ? body : null,
          user: c.token!.login,
          draft: draft === true,
        });
        return {
          status: 201,
          body: await this.prAnswer(r, p, false),
          headers: { location: `${this.urls.api}/repos/${r.owner}/${r.name}/pulls/${p.number}` },
        };
      });
    });

    add(
      'PATCH',
      '/repos/{owner}/{repo}/pulls/{pull_number}',
      'pulls/pulls#update-a-pull-request',
      'token',
      async (c) => {
        const r = this.repoFor(c);
        const p = this.prFor(r, c.params[2]);
        const { title, body, state, base } = c.body;
        const actor = c.token!.login;
        if (state !== undefined && state !== 'open' && state !== 'closed')
          throw validation('PullRequest', 'state', 'invalid');
        if (title !== undefined && typeof title !== 'string')
          throw validation('PullRequest', 'title', 'invalid');
        if (
          base !== undefined &&
          (typeof base !== 'string' || (await this.resolve(r, `refs/heads/${base}`)) === null)
        )
          throw validation('PullRequest', 'base', 'invalid');
        const changes: Record<string, unknown> = {};
        if (typeof title === 'string' && title !== p.title) {
          changes.title = { from: p.title };
          p.title = title;
        }
        if (body !== undefined && (typeof body === 'string' || body === null) && body !== p.body) {
          changes.body = { from: p.body ?? '' };
          p.body = body;
        }
        if (typeof base === 'string' && base !== p.base) {
          const oldSha = (await this.resolve(r, `refs/heads/${p.base}`)) ?? ZERO;
          changes.base = { ref: { from: p.base }, sha: { from: oldSha } };
          p.base = base;
        }
        p.updatedAt = Date.now();
        if (Object.keys(changes).length > 0) this.prEvent(r, p, 'edited', actor, { changes });
        if (state === 'closed' && p.state === 'open') this.setClosed(r, p, actor);
        else if (state === 'open' && p.state === 'closed' && !p.merged) {
          p.state = 'open';
          p.closedAt = null;
          r.openIssues++;
          this.prEvent(r, p, 'reopened', actor);
        }
        return { status: 200, body: await this.prAnswer(r, p, false) };
      },
    );

    add(
      'PUT',
      '/repos/{owner}/{repo}/pulls/{pull_number}/merge',
      'pulls/pulls#merge-a-pull-request',
      'token',
      async (c) => {
        const r = this.repoFor(c);
        const p = this.prFor(r, c.params[2]);
        const { sha, merge_method: method = 'merge', commit_title, commit_message } = c.body;
        if (method !== 'merge' && method !== 'squash' && method !== 'rebase')
          throw validation('PullRequest', 'merge_method', 'invalid');
        return this.locked(r, async () => {
          if (p.state !== 'open') throw new HttpError(405, 'Pull Request is not mergeable');
          if (p.draft) throw new HttpError(405, 'Pull Request is still a draft');
          if (sha !== undefined && sha !== p.headSha)
            throw new HttpError(409, 'Head branch was modified. Review and try the merge again.');
          const baseSha = (await this.resolve(r, `refs/heads/${p.base}`))!;
          const title =
            typeof commit_title === 'string'
              ? commit_title
              : method === 'merge'
                ? `Merge pull request #${p.number} from ${r.owner}/${p.head}`
                : `${p.title} (#${p.number})`;
          const message = `${title}\n\n${typeof commit_message === 'string' ? commit_message : p.title}`;
          let newSha: string;
          const env = commitEnv(c.token!.login);
          if (method === 'rebase') {
            newSha = await this.rebase(r, baseSha, p.headSha, c.token!.login);
          } else {
            const mt = await this.git.run(
              ['--git-dir', r.dir, 'merge-tree', '--write-tree', baseSha, p.headSha],
              { okCodes: [1] },
            );
            if (mt.code === 1) throw new HttpError(405, 'Pull Request is not mergeable');
            const tree = mt.stdout.split('\n')[0];
            const parents = method === 'merge' ? ['-p', baseSha, '-p', p.headSha] : ['-p', baseSha];
            newSha = await this.git.git(r.dir, ['commit-tree', tree, ...parents, '-m', message], { env });
          }
          await this.git.git(r.dir, ['update-ref', `refs/heads/${p.base}`, newSha, baseSha]);
          p.merged = true;
          p.mergedAt = Date.now();
          p.mergedBy = c.token!.login;
          p.mergeCommitSha = newSha;
          this.setClosed(r, p, c.token!.login);
          await this.syncRefs(r, c.token!.login);
          return {
            status: 200,
            body: { sha: newSha, merged: true, message: 'Pull Request successfully merged' },
          };
        });
      },
    );

    const refRe = /^\/repos\/([^/]+)\/([^/]+)\/git\/refs\/(heads\/.+)$/;
    add(
      'PATCH',
      '/repos/{owner}/{repo}/git/refs/{ref}',
      'git/refs#update-a-reference',
      'token',
      async (c) => {
        const r = this.repoFor(c);
        const ref = `refs/${c.params[2]}`;
        const { sha, force } = c.body;
        if (typeof sha !== 'string' || !/^[0-9a-f]{40}$/.test(sha))
          throw new HttpError(422, 'Invalid request.\n\n"sha" wasn\'t supplied.');
        return this.locked(r, async () => {
          const current = await this.resolve(r, ref);
          if (current === null) throw new HttpError(422, 'Reference does not exist');
          if ((await this.resolve(r, sha)) === null) throw new HttpError(422, 'Object does not exist');
          if (force !== true && !(await this.isAncestor(r, current, sha)))
            throw new HttpError(422, 'Update is not a fast forward');
          const upd = await this.git.run(['--git-dir', r.dir, 'update-ref', ref, sha, current], {
            okCodes: [1, 128],
          });
          if (upd.code !== 0) throw new HttpError(422, 'Update is not a fast forward');
          await this.syncRefs(r, c.token!.login);
          return { status: 200, body: this.refJson(r, ref, sha) };
        });
      },
      refRe,
    );

    add(
      'DELETE',
      '/repos/{owner}/{repo}/git/refs/{ref}',
      'git/refs#delete-a-reference',
      'token',
      async (c) => {
        const r = this.repoFor(c);
        const ref = `refs/${c.params[2]}`;
        return this.locked(r, async () => {
          const current = await this.resolve(r, ref);
          if (current === null) throw new HttpError(422, 'Reference does not exist');
          await this.git.git(r.dir, ['update-ref', '-d', ref, current]);
          await this.syncRefs(r, c.token!.login);
          return { status: 204 };
        });
      },
      refRe,
    );

    const commitsRe = (tail: string) => new RegExp(`^/repos/([^/]+)/([^/]+)/commits/(.+)/${tail}$`);
    add(
      'GET',
      '/repos/{owner}/{repo}/commits/{ref}/check-runs',
      'checks/runs#list-check-runs-for-a-git-reference',
      'token',
      async (c) => {
        const r = this.repoFor(c);
        const sha = await this.resolveRef(r, c.params[2]);
        if (sha === null) throw new HttpError(422, `No commit found for SHA: ${c.params[2]}`);
        let runs = r.checkRuns.filter((x) => x.headSha === sha);
        if (c.query.get('filter') !== 'all') runs = latestPerName(runs);
        const name = c.query.get('check_name');
        if (name) runs = runs.filter((x) => x.name === name);
        const st = c.query.get('status');
        if (st) runs = runs.filter((x) => x.status === st);
        runs = [...runs].sort((a, b) => b.id - a.id);
        const total = runs.length;
        const perPage = Math.min(100, Number(c.query.get('per_page') ?? 30) || 30);
        const page = Math.max(1, Number(c.query.get('page') ?? 1) || 1);
        runs = runs.slice((page - 1) * perPage, page * perPage);
        const last = Math.max(1, Math.ceil(total / perPage));
        const pageUrl = (n: number) => {
          const q = new URLSearchParams(c.query);
          q.set('per_page', String(perPage));
          q.set('page', String(n));
          return `<${this.urls.api}/repos/${r.owner}/${r.name}/commits/${c.params[2]}/check-runs?${q}>`;
        };
        const links = [
          ...(page < last ? [`${pageUrl(page + 1)}; rel="next"`, `${pageUrl(last)}; rel="last"`] : []),
          ...(page > 1 ? [`${pageUrl(1)}; rel="first"`, `${pageUrl(page - 1)}; rel="prev"`] : []),
        ];
        return {
          status: 200,
          body: { total_count: total, check_runs: runs.map((x) => checkRunJson(this.urls, r, CI_APP, x)) },
          ...(links.length > 0 ? { headers: { link: links.join(', ') } } : {}),
        };
      },
      commitsRe('check-runs'),
    );

    add(
      'GET',
      '/repos/{owner}/{repo}/commits/{ref}/status',
      'commits/statuses#get-the-combined-status-for-a-specific-reference',
      'token',
      async (c) => {
        const r = this.repoFor(c);
        const sha = await this.resolveRef(r, c.params[2]);
        if (sha === null) throw new HttpError(404, 'Not Found');
        const latest = new Map<string, StatusFacts>();
        for (const s of r.statuses) if (s.sha === sha) latest.set(s.context, s);
        const list = [...latest.values()];
        const state = list.some((s) => s.state === 'failure' || s.state === 'error')
          ? 'failure'
          : list.length === 0 || list.some((s) => s.state === 'pending')
            ? 'pending'
            : 'success';
        const api = `${this.urls.api}/repos/${r.owner}/${r.name}`;
        return {
          status: 200,
          body: {
            state,
            statuses: list.map((s) => {
              const { creator: _c, ...rest } = statusJson(this.urls, r, s);
              return rest;
            }),
            sha,
            total_count: list.length,
            repository: minimalRepo(repoJson(this.urls, r)),
            commit_url: `${api}/commits/${sha}`,
            url: `${api}/commits/${sha}/status`,
          },
        };
      },
      commitsRe('status'),
    );

    add(
      'POST',
      '/repos/{owner}/{repo}/statuses/{sha}',
      'commits/statuses#create-a-commit-status',
      'token',
      async (c) => {
        const r = this.repoFor(c);
        const sha = c.params[2];
        const { state, target_url, description, context } = c.body;
        if (state !== 'error' && state !== 'failure' && state !== 'pending' && state !== 'success')
          throw validation('Status', 'state', 'custom', 'state is not included in the list');
        if (!/^[0-9a-f]{40}$/.test(sha) || (await this.resolve(r, sha)) === null)
          throw new HttpError(422, `No commit found for SHA: ${sha}`);
        const s = this.addStatus(
          r,
          sha,
          state,
          typeof context === 'string' ? context : 'default',
          typeof description === 'string' ? description.slice(0, 140) : null,
          typeof target_url === 'string' ? target_url : null,
          c.token!.login,
        );
        return { status: 201, body: statusJson(this.urls, r, s) };
      },
    );

    add(
      'POST',
      '/repos/{owner}/{repo}/issues/{issue_number}/comments',
      'issues/comments#create-an-issue-comment',
      'token',
      (c) => {
        const r = this.repoFor(c);
        const p = this.prFor(r, c.params[2]);
        if (typeof c.body.body !== 'string' || c.body.body === '')
          throw validation('IssueComment', 'body', 'missing_field');
        const cm = this.addComment(r, p, c.token!.login, c.body.body);
        return {
          status: 201,
          body: commentJson(this.urls, r, cm),
          headers: { location: `${this.urls.api}/repos/${r.owner}/${r.name}/issues/comments/${cm.id}` },
        };
      },
    );

    add(
      'PATCH',
      '/repos/{owner}/{repo}/issues/comments/{comment_id}',
      'issues/comments#update-an-issue-comment',
      'token',
      (c) => {
        const r = this.repoFor(c);
        const cm = r.comments.get(Number(c.params[2]));
        if (!cm) throw new HttpError(404, 'Not Found');
        if (typeof c.body.body !== 'string' || c.body.body === '')
          throw validation('IssueComment', 'body', 'missing_field');
        cm.body = c.body.body;
        cm.updatedAt = Date.now();
        return { status: 200, body: commentJson(this.urls, r, cm) };
      },
    );

    add(
      'GET',
      '/repos/{owner}/{repo}/collaborators/{username}/permission',
      'collaborators/collaborators#get-repository-permissions-for-a-user',
      'token',
      (c) => {
        const r = this.repoFor(c);
        const user = c.params[2];
        const permission = r.perms.get(user) ?? 'read';
        return {
          status: 200,
          body: {
            permission,
            role_name: permission === 'none' ? 'none' : permission,
            user: { ...userJson(this.urls, user), permissions: permsOf(permission), role_name: permission },
          },
        };
      },
    );

    add(
      'GET',
      '/repos/{owner}/{repo}/installation',
      'apps/apps#get-a-repository-installation-for-the-authenticated-app',
      'jwt',
      (c) => {
        const app = c.app!;
        const inst = [...this.installations.values()].find(
          (i) => i.appId === app.id && i.owner === c.params[0] && i.repo === c.params[1],
        );
        if (!inst) throw new HttpError(404, 'Not Found');
        return { status: 200, body: this.installationJson(inst, app) };
      },
    );

    add(
      'POST',
      '/app/installations/{installation_id}/access_tokens',
      'apps/apps#create-an-installation-access-token-for-an-app',
      'jwt',
      (c) => {
        const app = c.app!;
        const inst = this.installations.get(Number(c.params[0]));
        if (!inst || inst.appId !== app.id) throw new HttpError(404, 'Not Found');
        const token = `ghs_${randomBytes(27).toString('base64url').slice(0, 36)}`;
        const expiresAt = Date.now() + app.ttlMs;
        this.tokens.set(token, {
          login: `${app.slug}[bot]`,
          kind: 'installation',
          installationId: inst.id,
          expiresAt,
        });
        this.installationTokens.push({ token, installationId: inst.id, expiresAt });
        const r = this.repos.get(`${inst.owner}/${inst.repo}`)!;
        return {
          status: 201,
          body: {
            token,
            expires_at: iso(expiresAt),
            permissions: { ...APP_PERMISSIONS },
            repository_selection: 'selected',
            repositories: [minimalRepo(repoJson(this.urls, r))],
          },
        };
      },
    );

    return routes;
  }

  private async resolveRef(r: Repo, ref: string): Promise<string | null> {
    if (/^[0-9a-f]{40}$/.test(ref)) return this.resolve(r, ref);
    return (
      (await this.resolve(r, `refs/heads/${ref}`)) ??
      (await this.resolve(r, ref.startsWith('refs/') ? ref : `refs/${ref}`))
    );
  }

  private refJson(r: Repo, ref: string, sha: string) {
    const api = `${this.urls.api}/repos/${r.owner}/${r.name}`;
    return {
      ref,
      node_id: nodeId('Ref', r.id),
      url: `${api}/git/${ref}`,
      object: { sha, type: 'commit', url: `${api}/git/commits/${sha}` },
    };
  }

  private installationJson(inst: Installation, app: AppState) {
    return {
      id: inst.id,
      account: userJson(this.urls, inst.owner),
      repository_selection: 'selected',
      access_tokens_url: `${this.urls.api}/app/installations/${inst.id}/access_tokens`,
      repositories_url: `${this.urls.api}/installation/repositories`,
      html_url: `${this.urls.web}/settings/installations/${inst.id}`,
      app_id: app.id,
      app_slug: app.slug,
      target_id: userJsonId(inst.owner),
      target_type: 'User',
      permissions: { ...APP_PERMISSIONS },
      events: [...APP_EVENTS],
      created_at: iso(inst.createdAt),
      updated_at: iso(inst.createdAt),
      single_file_name: null,
      has_multiple_single_files: false,
      single_file_paths: [],
      suspended_by: null,
      suspended_at: null,
    };
  }

  /** Rebase-merge: replays head's commits onto base in a temporary worktree. */
  private async rebase(r: Repo, baseSha: string, headSha: string, actor: string): Promise<string> {
    if (await this.isAncestor(r, baseSha, headSha)) return headSha;
    const wt = join(this.root, `wt-${randomUUID()}`);
    await this.git.git(r.dir, ['worktree', 'add', '--detach', '-q', wt, headSha]);
    try {
      const res = await this.git.run(['rebase', '-q', baseSha], {
        cwd: wt,
        env: commitEnv(actor),
        okCodes: [1, 128],
      });
      if (res.code !== 0) throw new HttpError(405, 'Pull Request is not mergeable');
      return (await this.git.run(['rev-parse', 'HEAD'], { cwd: wt })).stdout;
    } finally {
      await this.git.git(r.dir, ['worktree', 'remove', '--force', wt]).catch(() => undefined);
      rmSync(wt, { recursive: true, force: true });
      await this.git.git(r.dir, ['worktree', 'prune']).catch(() => undefined);
    }
  }
}

// ---------------------------------------------------------------------------------------------

function commitEnv(login: string): Record<string, string> {
  return {
    GIT_AUTHOR_NAME: login,
    GIT_AUTHOR_EMAIL: `${login.replace(/[^A-Za-z0-9._-]/g, '')}@users.noreply.github.com`,
    GIT_COMMITTER_NAME: 'GitHub',
    GIT_COMMITTER_EMAIL: 'noreply@github.com',
  };
}

function statusState(c: CheckConclusion): StatusFacts['state'] {
  if (c === 'success' || c === 'neutral' || c === 'skipped') return 'success';
  if (c === 'failure') return 'failure';
  return 'error';
}

function latestPerName(runs: CheckRunFacts[]): CheckRunFacts[] {
  const m = new Map<string, CheckRunFacts>();
  for (const c of runs) {
    const prev = m.get(c.name);
    if (!prev || prev.id < c.id) m.set(c.name, c);
  }
  return [...m.values()];
}

function notFound(doc: string): Answer {
  return { status: 404, body: { message: 'Not Found', documentation_url: doc, status: '404' } };
}

function userJsonId(login: string): number {
  return userJson({ api: '', web: 'http://x' }, login).id;
}

function permsOf(p: Permission) {
  return {
    admin: p === 'admin',
    maintain: p === 'admin',
    push: p === 'admin' || p === 'write',
    triage: p !== 'none',
    pull: p !== 'none',
  };
}

/** The "minimal-repository" shape some answers embed. */
function minimalRepo(full: ReturnType<typeof repoJson>) {
  const { network_count: _n, subscribers_count: _s, ...rest } = full;
  return rest;
}
