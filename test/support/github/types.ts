// The emulator's types: what tests see (GitHubEmulator and its options), the internal state shapes
// shared by its layers, GitHub's error type, and small helpers.
import type { createPublicKey } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import {
  repoJson,
  userJson,
  type AppFacts,
  type CheckRunFacts,
  type CommentFacts,
  type PrFacts,
  type RepoFacts,
  type StatusFacts,
} from './json.js';

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

// ---------------------------------------------------------------------------------------------

export const ZERO = '0000000000000000000000000000000000000000';
export const RATE_LIMIT = 5000;
export const CI_APP: AppFacts = {
  id: 15368,
  slug: 'github-actions',
  owner: 'github',
  createdAt: Date.parse('2018-07-30T09:30:17Z'),
};
export const CI_USER = 'github-actions[bot]';

export interface TokenInfo {
  login: string;
  kind: 'pat' | 'installation';
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
}
export interface Pr
  extends Omit<PrFacts, 'baseSha' | 'mergeable' | 'mergeableState' | 'comments' | 'commits'> {
  /** `${baseSha}:${headSha}` of the last mergeability computation, and its result. */
  mergeKey: string | null;
  conflict: boolean;
  pendingKey: string | null;
  pending: Promise<void> | null;
}
export interface SuiteState {
  id: number;
  sha: string;
  branch: string | null;
  createdAt: number;
  updatedAt: number;
}
export interface Repo extends RepoFacts {
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
export interface Answer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}
export interface Ctx {
  req: IncomingMessage;
  params: string[];
  query: URLSearchParams;
  body: Record<string, unknown>;
  token: TokenInfo | null;
  tokenText: string | null;
  /** The App whose JWT authenticated the request ('jwt' routes). */
  app: AppState | null;
}
export type AddRoute = (
  method: string,
  template: string,
  doc: string,
  auth: Route['auth'],
  handler: Route['handler'],
  re?: RegExp,
) => void;
export interface Route {
  method: string;
  template: string;
  re: RegExp;
  doc: string;
  /** 'jwt': only an App JWT; 'token': a PAT or installation token; 'none': anyone. */
  auth: 'jwt' | 'token' | 'none';
  handler: (c: Ctx) => Promise<Answer> | Answer;
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export const defaultCi: CiDecide = () => [{ name: 'ci', conclusion: 'success', delayMs: 50 }];

export function commitEnv(login: string): Record<string, string> {
  return {
    GIT_AUTHOR_NAME: login,
    GIT_AUTHOR_EMAIL: `${login.replace(/[^A-Za-z0-9._-]/g, '')}@users.noreply.github.com`,
    GIT_COMMITTER_NAME: 'GitHub',
    GIT_COMMITTER_EMAIL: 'noreply@github.com',
  };
}

export function statusState(c: CheckConclusion): StatusFacts['state'] {
  if (c === 'success' || c === 'neutral' || c === 'skipped') return 'success';
  if (c === 'failure') return 'failure';
  return 'error';
}

export function latestPerName(runs: CheckRunFacts[]): CheckRunFacts[] {
  const m = new Map<string, CheckRunFacts>();
  for (const c of runs) {
    const prev = m.get(c.name);
    if (!prev || prev.id < c.id) m.set(c.name, c);
  }
  return [...m.values()];
}

export function notFound(doc: string): Answer {
  return { status: 404, body: { message: 'Not Found', documentation_url: doc, status: '404' } };
}

export function userJsonId(login: string): number {
  return userJson({ api: '', web: 'http://x' }, login).id;
}

export function permsOf(p: Permission) {
  return {
    admin: p === 'admin',
    maintain: p === 'admin',
    push: p === 'admin' || p === 'write',
    triage: p !== 'none',
    pull: p !== 'none',
  };
}

/** The "minimal-repository" shape some answers embed. */
export function minimalRepo(full: ReturnType<typeof repoJson>) {
  const { network_count: _n, subscribers_count: _s, ...rest } = full;
  return rest;
}
