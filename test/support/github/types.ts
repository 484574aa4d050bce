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

/**
 * Branch rules on one branch: a ruleset (default) or classic branch protection. What GitHub does
 * with them here: `mergeable_state: "blocked"` while a PR into the branch misses approvals, has
 * changes requested, misses a required check on its head or has unresolved conversations; ref
 * updates refused with 422 (REST) for actors not in `bypass` when `requirePullRequest` is set, or
 * when a required check has not succeeded on the new commit.
 */
export interface BranchRules {
  /** 'ruleset': listed by GET rules/branches/{branch}; 'classic': shown by GET branches/{branch}. Default 'ruleset'. */
  kind?: 'ruleset' | 'classic';
  /** Approving reviews a PR needs (latest review per reviewer counts). */
  requiredApprovals?: number;
  /** Check run names / status contexts that must have succeeded on a PR's head (and on a pushed commit). */
  requiredChecks?: string[];
  /** Unresolved review conversations block (see setUnresolvedConversations). */
  requireConversationResolution?: boolean;
  /** Direct updates of the branch are refused ("Changes must be made through a pull request."). */
  requirePullRequest?: boolean;
  /** Logins that may update the branch anyway (a ruleset's bypass list, classic "allow specified actors"). */
  bypass?: string[];
}
export type ReviewState = 'APPROVED' | 'CHANGES_REQUESTED' | 'COMMENTED' | 'DISMISSED';

/**
 * What happens to a delivery about to be sent: sent ('send', default), lost ('drop': recorded with
 * status 0 and `lost: true`, never sent), held until releaseDeliveries ('hold'), or sent twice with
 * the same delivery id ('duplicate').
 */
export type DeliveryFate = 'send' | 'drop' | 'hold' | 'duplicate';
export type DeliveryFilter = (d: {
  event: string;
  action?: string;
  payload: Record<string, unknown>;
}) => DeliveryFate;

/** One thing GitHub showed on a pull request, with when (ms since the epoch). */
export type PrShown =
  | { at: number; kind: 'status'; sha: string; context: string; state: string; description: string | null }
  | { at: number; kind: 'comment'; id: number; body: string; edit: boolean }
  | { at: number; kind: 'closed'; merged: boolean }
  | { at: number; kind: 'merged' };

export interface Delivery {
  id: string;
  event: string;
  /** The delivery never reached the receiver (a DeliveryFilter said 'drop'). */
  lost?: boolean;
  /** When it was sent (ms since the epoch; 0 if lost). */
  sentAt?: number;
  /** HTTP status of the last attempt (0: no answer). */
  status: number;
  action?: string;
  payload: Record<string, unknown>;
}
/** How the emulator fails a landing call (failLanding). */
export interface LandingFault {
  times?: number;
  answer?: 502 | 503 | 'drop';
  after?: boolean;
}

export interface RequestRecord {
  method: string;
  path: string;
  status: number;
  token: string | null;
  /** When the request arrived (ms since the epoch) and how long the answer took. */
  at: number;
  ms: number;
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
  /**
   * The merge API (`PUT pulls/{n}/merge`) merges at once (its webhooks go out) but answers `ms` late
   * (default 0), as a slow GitHub or network would: the caller hears of the merge after the webhooks.
   */
  setMergeAnswerDelay(owner: string, repo: string, ms: number): void;
  rerunCheck(
    owner: string,
    repo: string,
    sha: string,
    name: string,
    conclusion: CheckConclusion,
  ): Promise<void>;
  /** `contentType: 'form'` sends `application/x-www-form-urlencoded` with the JSON in `payload=` (GitHub's default for hooks made by hand). */
  setWebhook(url: string, secret: string, opts?: { contentType?: 'json' | 'form' }): void;
  readonly deliveries: Delivery[];
  redeliver(id: string): Promise<number>;
  readonly requests: RequestRecord[];
  /**
   * Git requests with a token that sees the repository, in the order their answers completed. Every
   * `git ls-remote`, fetch or push starts with one `GET /info/refs?service=…`: a test counts them to
   * know that a poller has read the branches again (a condition instead of a fixed sleep).
   */
  readonly gitRequests: GitRequestRecord[];
  resetRequestCount(): void;
  /** `status` (secondary only): 403 (default) or 429, both of which GitHub sends for secondary limits. */
  rateLimitNext(
    n: number,
    kind: 'primary' | 'secondary',
    retryAfterSeconds?: number,
    status?: 403 | 429,
  ): void;
  readonly schemaViolations: string[];
  /**
   * The next `times` landing calls on the repository (`PATCH git/refs/heads/*`, `PUT pulls/{n}/merge`)
   * fail the way a blip of GitHub or the network would: `answer` 502 or 503 (GitHub's HTML error
   * page), or `drop` (the connection is closed without an answer). `after: true` carries the call
   * out first (the branch moves, the PR merges, webhooks go out) and only then fails the answer.
   * Each is recorded in `requests` (a dropped one with status 0). `times: 0` clears the faults still armed.
   */
  failLanding(owner: string, repo: string, fault: LandingFault): void;

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

  // --- round 3: branch rules, reviews, delivery faults, what the PR showed when ---
  /** Sets (or with null removes) the rules of a branch. */
  protectBranch(owner: string, repo: string, branch: string, rules: BranchRules | null): void;
  /** A review by `user` on the PR's current head (`pull_request_review` submitted webhook). */
  review(owner: string, repo: string, number: number, user: string, state: ReviewState): Promise<void>;
  /** How many review conversations on the PR are unresolved (blocks with requireConversationResolution). */
  setUnresolvedConversations(owner: string, repo: string, number: number, count: number): void;
  /** Changes the PR's base branch, as a user editing it would (`pull_request` edited). */
  setBase(owner: string, repo: string, number: number, base: string): Promise<void>;
  /** Decides the fate of each delivery about to be sent (null: all sent). */
  setDeliveryFilter(filter: DeliveryFilter | null): void;
  /** Sends the held deliveries (in the order held, or newest first) and resolves with the receiver's statuses. */
  releaseDeliveries(opts?: { newestFirst?: boolean }): Promise<number[]>;
  /** How many deliveries are held. */
  readonly heldDeliveries: number;
  /**
   * Sends a recorded delivery's body again, signed, as someone who captured it would: with the same
   * delivery id (default, like redeliver), another id, or (null) no X-GitHub-Delivery header.
   */
  replay(id: string, opts?: { deliveryId?: string | null }): Promise<number>;
  /** Every branch change (push, ref update, merge, deletion) with its time, oldest first. */
  readonly branchMoves: Array<{
    at: number;
    owner: string;
    repo: string;
    branch: string;
    before: string | null;
    after: string | null;
  }>;
  /** What GitHub showed on the PR, in order. */
  shown(owner: string, repo: string, number: number): PrShown[];
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
    opts?: { context?: string; comment?: RegExp },
  ): { status: number | null; closed: number | null; comment: number | null; all: number | null };
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
  mergeAnswerDelayMs: number;
  refs: Map<string, string>;
  lock: Promise<unknown>;
  /** Branch name → its rules. */
  rules: Map<string, BranchRules>;
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
