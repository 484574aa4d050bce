// The GitHub emulator's state: tokens, Apps and their installations, repositories (real bare git
// repositories), pull requests, statuses, check runs and comments, what was recorded for tests,
// plus the per-repository git reads and background-work tracking the other modules (pr.ts, ci.ts,
// hooks.ts, protection.ts, rest.ts, index.ts) build on. The git primitives themselves are the
// emulators' shared ones (test/support/emulator-git/).
import { generateKeyPairSync, type createPublicKey } from 'node:crypto';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmulatorWork } from '../emulator-work.js';
import { GitRunner, type CommitInfo } from '../emulator-git/index.js';
import {
  APP_PERMISSIONS,
  type AppFacts,
  type CheckRunFacts,
  type CommentFacts,
  type PrFacts,
  type RepoFacts,
  type StatusFacts,
  type Urls,
} from './json.js';
import type { SchemaValidator } from './openapi.js';
import type { BranchRules, ReviewState } from './protection.js';
import { initRepo } from './repo-init.js';
import { HttpError } from './rest.js';

export { ZERO } from '../emulator-git/index.js';

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

/** One thing GitHub showed on a pull request, with when (ms since the epoch). */
export type PrShown =
  | { at: number; kind: 'status'; sha: string; context: string; state: string; description: string | null }
  | { at: number; kind: 'comment'; id: number; body: string; edit: boolean }
  | { at: number; kind: 'closed'; merged: boolean }
  | { at: number; kind: 'merged' };

/** A branch change (push, ref update, merge, deletion) with its time. */
export interface BranchMove {
  at: number;
  owner: string;
  repo: string;
  branch: string;
  before: string | null;
  after: string | null;
}

/** A PAT's account's role in the repositories; an App installation's permissions (`contents: 'write'`, …). */
export type PatRole = 'admin' | 'write' | 'read';
export type AppPermissions = Record<string, 'read' | 'write'>;

export interface TokenInfo {
  login: string;
  kind: 'pat' | 'installation';
  /** A PAT's role on every repository (default `admin`): `read` may not push, update refs or set statuses. */
  permission?: PatRole;
  installationId?: number;
  expiresAt?: number;
}
export interface AppState extends AppFacts {
  publicKey: ReturnType<typeof createPublicKey>;
  ttlMs: number;
}
export interface Installation {
  id: number;
  appId: number;
  owner: string;
  repo: string;
  createdAt: number;
  /** What the App may do in the repository (default APP_PERMISSIONS), as GitHub lists it. */
  permissions: AppPermissions;
}
export interface Pr
  extends Omit<PrFacts, 'baseSha' | 'mergeable' | 'mergeableState' | 'comments' | 'commits'> {
  /** `${baseSha}:${headSha}` of the last mergeability computation, and its result. */
  mergeKey: string | null;
  conflict: boolean;
  pendingKey: string | null;
  pending: Promise<void> | null;
  /** Every head the PR had (statuses on any of them are shown on the PR). */
  heads: Set<string>;
  reviews: Array<{ id: number; user: string; state: ReviewState; commitId: string; at: number }>;
  unresolvedConversations: number;
  /** What GitHub showed on it, in order (statuses, comments, closing, merging). */
  shown: PrShown[];
}
export interface SuiteState {
  id: number;
  sha: string;
  branch: string | null;
  createdAt: number;
  updatedAt: number;
}
export interface IssueFacts {
  number: number;
  id: number;
  title: string;
  body: string | null;
  labels: string[];
  user: string;
  state: 'open' | 'closed';
  stateReason: string | null;
  closedBy: string | null;
  closedAt: number | null;
  createdAt: number;
  updatedAt: number;
  comments: { user: string; body: string; at: number }[];
}
export interface Repo extends RepoFacts {
  dir: string;
  prs: Map<number, Pr>;
  nextNumber: number;
  statuses: StatusFacts[];
  checkRuns: CheckRunFacts[];
  suites: Map<string, SuiteState>;
  comments: Map<number, CommentFacts>;
  /** Issues (numbered with the PRs, as on GitHub): routes-issues.ts. */
  issues: Map<number, IssueFacts>;
  perms: Map<string, Permission>;
  ci: CiDecide;
  mergeabilityDelayMs: number;
  gitReadDelayMs: number;
  mergeAnswerDelayMs: number;
  refs: Map<string, string>;
  lock: Promise<unknown>;
  /** Branch name → its rules. */
  rules: Map<string, BranchRules>;
}

const defaultCi: CiDecide = () => [{ name: 'ci', conclusion: 'success', delayMs: 50 }];

/** The emulator's state and the git work on it; see README.md next to this file. */
export class World extends EmulatorWork {
  readonly style: 'ghes' | 'dotcom';
  /** Where the REST API lives: /api/v3 (GHES) or the root (api.github.com). */
  readonly prefix: string;
  readonly root = mkdtempSync(join(tmpdir(), 'railyard-gh-'));
  readonly reposRoot = join(this.root, 'repos');
  readonly git = new GitRunner('GitHub', { name: 'GitHub', email: 'noreply@github.com' });
  urls: Urls = { api: '', web: '' };
  readonly tokens = new Map<string, TokenInfo>();
  readonly apps = new Map<number, AppState>();
  readonly installations = new Map<number, Installation>();
  readonly repos = new Map<string, Repo>();
  /** REST answers and webhook payloads that broke the OpenAPI check (with `validate: true`). */
  readonly schemaViolations: string[] = [];
  readonly branchMoves: BranchMove[] = [];
  readonly installationTokens: Array<{ token: string; installationId: number; expiresAt: number }> = [];
  validator: SchemaValidator | null = null;
  private nextId = 1;

  constructor(style: 'ghes' | 'dotcom') {
    super();
    this.style = style;
    this.prefix = style === 'ghes' ? '/api/v3' : '';
    mkdirSync(this.reposRoot);
  }

  id(): number {
    return this.nextId++;
  }

  // --- tokens --------------------------------------------------------------------------------

  /** The token's holder, or null when unknown or expired. */
  validToken(text: string | null): TokenInfo | null {
    if (text === null) return null;
    const t = this.tokens.get(text);
    if (!t) return null;
    if (t.expiresAt !== undefined && t.expiresAt <= Date.now()) return null;
    return t;
  }

  /** A PAT sees every repository; an installation token only its installation's. */
  canSee(t: TokenInfo, r: Repo): boolean {
    if (t.kind === 'pat') return true;
    const inst = this.installations.get(t.installationId!);
    return inst !== undefined && inst.owner === r.owner && inst.repo === r.name;
  }

  /** A GitHub App with a fresh RSA key pair; returns its id and private key PEM. */
  createApp(ttlMs: number): { appId: number; privateKeyPem: string } {
    const appId = 100 + this.apps.size + 1;
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    this.apps.set(appId, {
      id: appId,
      slug: `railyard-test-${appId}`,
      owner: 'railyard',
      createdAt: Date.now(),
      publicKey,
      ttlMs,
    });
    return { appId, privateKeyPem: privateKey.export({ type: 'pkcs1', format: 'pem' }).toString() };
  }

  installApp(
    appId: number,
    owner: string,
    repo: string,
    permissions: AppPermissions = APP_PERMISSIONS,
  ): number {
    if (!this.apps.has(appId)) throw new Error(`no app ${appId}`);
    this.mustRepo(owner, repo);
    const id = 40_000 + this.installations.size + 1;
    this.installations.set(id, {
      id,
      appId,
      owner,
      repo,
      createdAt: Date.now(),
      permissions: { ...permissions },
    });
    return id;
  }

  /**
   * Whether the token may write `what` (`contents`: push, update or delete refs, merge;
   * `statuses`: create commit statuses): a PAT by its holder's role, an installation token by the
   * App's permissions.
   */
  may(t: TokenInfo, what: 'contents' | 'statuses'): boolean {
    if (t.kind === 'pat') return (t.permission ?? 'admin') !== 'read';
    return this.installations.get(t.installationId!)?.permissions[what] === 'write';
  }

  /** Git over HTTP: 404 for a repository the token does not see, 403 for a push it may not make; null: go on. */
  gitRefusal(t: TokenInfo, r: Repo | undefined, pushing: boolean): { status: number; text: string } | null {
    if (!r || !this.canSee(t, r)) return { status: 404, text: 'Repository not found.\n' };
    if (pushing && !this.may(t, 'contents'))
      return { status: 403, text: `Permission to ${r.owner}/${r.name}.git denied to ${t.login}.\n` };
    return null;
  }

  /** GitHub's refusal of a write the token may not make (403, its message for an App or a PAT). */
  mustMay(t: TokenInfo, what: 'contents' | 'statuses'): void {
    if (this.may(t, what)) return;
    throw new HttpError(
      403,
      t.kind === 'pat'
        ? 'Resource not accessible by personal access token'
        : 'Resource not accessible by integration',
    );
  }

  // --- repositories and pull requests ----------------------------------------------------------

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

  createRepo(
    owner: string,
    name: string,
    opts: { defaultBranch?: string; files?: Record<string, string> },
  ): Repo {
    const key = `${owner}/${name}`;
    if (this.repos.has(key)) throw new Error(`repository ${key} exists`);
    const defaultBranch = opts.defaultBranch ?? 'main';
    const dir = join(this.reposRoot, owner, `${name}.git`);
    const sha = initRepo(dir, this.root, defaultBranch, owner, opts.files ?? { 'README.md': `# ${name}\n` });
    const now = Date.now();
    const r: Repo = {
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
      issues: new Map(),
      perms: new Map([[owner, 'admin']]),
      rules: new Map(),
      ci: defaultCi,
      mergeabilityDelayMs: 0,
      gitReadDelayMs: 0,
      mergeAnswerDelayMs: 0,
      refs: new Map([[defaultBranch, sha]]),
      lock: Promise.resolve(),
    };
    this.repos.set(key, r);
    return r;
  }

  cloneUrl(r: Repo): string {
    return `${this.urls.web}/${r.owner}/${r.name}.git`;
  }

  // --- git -----------------------------------------------------------------------------------

  resolve(r: Repo, rev: string): Promise<string | null> {
    return this.git.resolve(r.dir, rev);
  }

  /** The commit a branch points at, or null. */
  branchSha(r: Repo, branch: string): Promise<string | null> {
    return this.git.resolve(r.dir, `refs/heads/${branch}`);
  }

  isAncestor(r: Repo, a: string, b: string): Promise<boolean> {
    return this.git.isAncestor(r.dir, a, b);
  }

  readFile(r: Repo, sha: string, path: string): Promise<string | null> {
    return this.git.readFile(r.dir, sha, path);
  }

  commitFiles(
    r: Repo,
    parent: string,
    files: Record<string, string | null>,
    message: string,
    author: string,
  ): Promise<string> {
    return this.git.commitFiles(r.dir, this.root, parent, files, message, commitEnv(author));
  }

  commitJson(r: Repo, sha: string): Promise<CommitInfo> {
    return this.git.commitInfo(r.dir, sha);
  }

  // --- background work -------------------------------------------------------------------------

  /** Marks the world closed and ends its timers (their work counts as done). */
  end(): void {
    this.endWork();
  }

  /** Ends the git processes and waits for the work in flight (after end()). */
  async stop(): Promise<void> {
    await this.git.stop();
    await Promise.allSettled([...this.background]);
    await this.git.stop();
  }
}

/** What a commit GitHub makes for `login` carries: the user as author, GitHub as committer. */
export function commitEnv(login: string): Record<string, string> {
  return {
    GIT_AUTHOR_NAME: login,
    GIT_AUTHOR_EMAIL: `${login.replace(/[^A-Za-z0-9._-]/g, '')}@users.noreply.github.com`,
    GIT_COMMITTER_NAME: 'GitHub',
    GIT_COMMITTER_EMAIL: 'noreply@github.com',
  };
}
