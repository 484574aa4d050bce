// The GitLab emulator's state: users, tokens, projects (bare repositories), merge requests,
// pipelines, jobs, commit statuses and notes, plus the per-project git reads and background-work
// tracking the other modules (mr.ts, ci.ts, hooks.ts, rest.ts, index.ts) build on. The git
// primitives themselves are the emulators' shared ones (test/support/emulator-git/).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EmulatorWork } from '../emulator-work.js';
import { GitRunner } from '../emulator-git/index.js';
import { initProject } from './repo-init.js';

export { ZERO } from '../emulator-git/index.js';

/** GitLab's access levels (`Gitlab::Access`). */
export const ACCESS = { none: 0, guest: 10, reporter: 20, developer: 30, maintainer: 40, owner: 50 } as const;

export type MrState = 'opened' | 'closed' | 'merged' | 'locked';
export type MergeStatus = 'unchecked' | 'checking' | 'can_be_merged' | 'cannot_be_merged';
/** What keeps an MR from being mergeable besides git (approvals, discussions, external checks). */
export type MergeBlocker = 'not_approved' | 'discussions_not_resolved' | 'blocked_status' | null;
export type JobStatus =
  | 'created'
  | 'pending'
  | 'running'
  | 'success'
  | 'failed'
  | 'canceled'
  | 'skipped'
  /** A `when: manual` job waiting for someone to press play (the pipeline is `manual` while it blocks). */
  | 'manual';

export interface User {
  id: number;
  username: string;
  name: string;
  createdAt: number;
}
export interface TokenInfo {
  /** The token's id (`GET /personal_access_tokens/self`). */
  id: number;
  userId: number;
  /** Access level on projects where the user is not a member (default Maintainer for tokens), as inherited from the group. */
  defaultAccess: number;
  /** GitLab's token scopes (`api`, `read_api`, `read_repository`, `write_repository`, `read_user`, …). */
  scopes: string[];
  /** The day the token stops working (`YYYY-MM-DD`, UTC), or null: never. */
  expiresAt: string | null;
  createdAt: number;
}

/** Scopes that let a token read the REST API, write it, read and push git. */
export const SCOPES = {
  restRead: ['api', 'read_api'],
  restWrite: ['api'],
  gitRead: ['api', 'read_repository', 'write_repository'],
  gitWrite: ['api', 'write_repository'],
} as const;

/** Whether a token with `expiresAt` has expired at `now` (GitLab: from the start of that day, UTC). */
export function tokenExpired(t: Pick<TokenInfo, 'expiresAt'>, now = Date.now()): boolean {
  return t.expiresAt !== null && Date.parse(`${t.expiresAt}T00:00:00Z`) <= now;
}

/** Whether a token has one of `scopes`. */
export const hasScope = (t: Pick<TokenInfo, 'scopes'>, scopes: readonly string[]): boolean =>
  t.scopes.some((s) => scopes.includes(s));
export interface ProtectedBranch {
  id: number;
  name: string;
  pushAccessLevel: number;
  mergeAccessLevel: number;
  allowForcePush: boolean;
}
export interface Mr {
  id: number;
  iid: number;
  projectId: number;
  sourceProjectId: number;
  sourceBranch: string;
  targetBranch: string;
  title: string;
  description: string;
  authorId: number;
  state: MrState;
  draft: boolean;
  sha: string;
  createdAt: number;
  updatedAt: number;
  mergedAt: number | null;
  mergedById: number | null;
  closedAt: number | null;
  closedById: number | null;
  mergeStatus: MergeStatus;
  /** `${targetSha}:${sha}` of the last finished check, and whether it conflicted. */
  checkedKey: string | null;
  conflict: boolean;
  blocker: MergeBlocker;
}
export interface Pipeline {
  id: number;
  iid: number;
  projectId: number;
  sha: string;
  beforeSha: string;
  ref: string;
  status: JobStatus;
  source: 'push' | 'external' | 'api';
  userId: number;
  createdAt: number;
  updatedAt: number;
  startedAt: number | null;
  finishedAt: number | null;
}
/** A job of a pipeline, or an external commit status (GitLab stores both as commit statuses). */
export interface Status {
  id: number;
  kind: 'build' | 'external';
  pipelineId: number;
  projectId: number;
  sha: string;
  ref: string;
  name: string;
  stage: string;
  status: JobStatus;
  allowFailure: boolean;
  description: string | null;
  targetUrl: string | null;
  userId: number;
  retried: boolean;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
}
export interface Note {
  id: number;
  projectId: number;
  iid: number;
  body: string;
  authorId: number;
  system: boolean;
  createdAt: number;
  updatedAt: number;
}
export interface CiJob {
  name: string;
  /** The job's end state; `skipped` and `manual` jobs never run (a manual job waits for play). */
  status: 'success' | 'failed' | 'canceled' | 'skipped' | 'manual';
  delayMs?: number;
  stage?: string;
  allowFailure?: boolean;
}
export interface CiPush {
  project: string;
  branch: string;
  sha: string;
  files: (path: string) => Promise<string | null>;
}
export type CiDecide = (push: CiPush) => CiJob[];

export interface Project {
  id: number;
  /** Full namespace path, e.g. `acme/platform`. */
  namespace: string;
  path: string;
  pathWithNamespace: string;
  dir: string;
  defaultBranch: string;
  createdAt: number;
  lastActivityAt: number;
  forkedFromId: number | null;
  members: Map<number, number>;
  protectedBranches: ProtectedBranch[];
  refs: Map<string, string>;
  mrs: Map<number, Mr>;
  nextIid: number;
  nextPipelineIid: number;
  onlyAllowMergeIfPipelineSucceeds: boolean;
  /** GitLab's `allow_merge_on_skipped_pipeline`: a skipped pipeline counts as a passed one. */
  allowMergeOnSkippedPipeline: boolean;
  /** Full paths the project had before it was moved: GitLab redirects them (REST and git). */
  oldPaths: string[];
  ci: CiDecide;
  mergeabilityDelayMs: number;
  lock: Promise<unknown>;
}

const defaultCi: CiDecide = () => [{ name: 'test', status: 'success', delayMs: 50 }];

/** The emulator's state and the git work on it; see README.md next to this file. */
export class World extends EmulatorWork {
  readonly git = new GitRunner('GitLab', { name: 'Administrator', email: 'admin@example.com' });
  readonly reposRoot: string;
  readonly users = new Map<number, User>();
  readonly tokens = new Map<string, TokenInfo>();
  readonly projects = new Map<number, Project>();
  readonly pipelines: Pipeline[] = [];
  readonly statuses: Status[] = [];
  readonly notes = new Map<number, Note>();
  web = '';
  private nextId = 1;

  constructor(readonly root: string) {
    super();
    this.reposRoot = join(root, 'repos');
    mkdirSync(this.reposRoot);
  }

  id(): number {
    return this.nextId++;
  }

  // --- users and access ------------------------------------------------------------------------

  /** The user with this name, created on first mention. */
  user(username: string): User {
    for (const u of this.users.values()) if (u.username === username) return u;
    const u: User = {
      id: 100 + this.users.size + 1,
      username,
      name: titleCase(username),
      createdAt: Date.now(),
    };
    this.users.set(u.id, u);
    for (const p of this.projects.values()) this.writeAccess(p);
    return u;
  }

  mustUser(id: number): User {
    const u = this.users.get(id);
    if (!u) throw new Error(`no user ${id}`);
    return u;
  }

  /** The access level `userId` has on `p`: membership, else the token default, else none. */
  accessLevel(p: Project, userId: number): number {
    const m = p.members.get(userId);
    if (m !== undefined) return m;
    let best: number = ACCESS.none;
    for (const t of this.tokens.values()) if (t.userId === userId) best = Math.max(best, t.defaultAccess);
    return best;
  }

  // --- projects --------------------------------------------------------------------------------

  /** The project at `path`, or moved from it (GitLab's redirect routes; a current path wins). */
  projectByPath(path: string): Project | undefined {
    const lower = path.toLowerCase();
    for (const p of this.projects.values()) if (p.pathWithNamespace.toLowerCase() === lower) return p;
    for (const p of this.projects.values()) if (p.oldPaths.some((o) => o.toLowerCase() === lower)) return p;
    return undefined;
  }

  /** Moves a project to `fullPath` (a rename or a transfer); the old path keeps answering (redirects). */
  moveProject(p: Project, fullPath: string): void {
    const parts = fullPath.split('/').filter(Boolean);
    if (parts.length < 2) throw new Error(`a project path has a namespace: ${fullPath}`);
    const taken = this.projectByPath(fullPath);
    if (taken && taken !== p) throw new Error(`project ${fullPath} exists`);
    p.oldPaths.push(p.pathWithNamespace);
    p.path = parts[parts.length - 1]!;
    p.namespace = parts.slice(0, -1).join('/');
    p.pathWithNamespace = `${p.namespace}/${p.path}`;
    p.oldPaths = p.oldPaths.filter((o) => o.toLowerCase() !== p.pathWithNamespace.toLowerCase());
  }

  mustProject(path: string): Project {
    const p = this.projectByPath(path);
    if (!p) throw new Error(`no project ${path}`);
    return p;
  }

  createProject(
    fullPath: string,
    opts: { defaultBranch?: string; files?: Record<string, string>; owner?: string; forkOf?: Project } = {},
  ): Project {
    const parts = fullPath.split('/').filter(Boolean);
    if (parts.length < 2) throw new Error(`a project path has a namespace: ${fullPath}`);
    if (this.projectByPath(fullPath)) throw new Error(`project ${fullPath} exists`);
    const path = parts[parts.length - 1];
    const namespace = parts.slice(0, -1).join('/');
    const dir = join(this.reposRoot, ...parts.slice(0, -1), `${path}.git`);
    const defaultBranch = opts.forkOf?.defaultBranch ?? opts.defaultBranch ?? 'main';
    const refs = initProject(dir, this.root, defaultBranch, {
      forkOf: opts.forkOf,
      files: opts.files ?? { 'README.md': `# ${path}\n` },
    });
    const now = Date.now();
    const p: Project = {
      id: 1000 + this.projects.size + 1,
      namespace,
      path,
      pathWithNamespace: `${namespace}/${path}`,
      dir,
      defaultBranch,
      createdAt: now,
      lastActivityAt: now,
      forkedFromId: opts.forkOf?.id ?? null,
      members: new Map(),
      protectedBranches: [],
      refs,
      mrs: new Map(),
      nextIid: 1,
      nextPipelineIid: 1,
      onlyAllowMergeIfPipelineSucceeds: false,
      allowMergeOnSkippedPipeline: false,
      oldPaths: [],
      ci: defaultCi,
      mergeabilityDelayMs: 0,
      lock: Promise.resolve(),
    };
    if (opts.owner) p.members.set(this.user(opts.owner).id, ACCESS.owner);
    this.projects.set(p.id, p);
    this.writeAccess(p);
    this.writeProtected(p);
    return p;
  }

  cloneUrl(p: Project): string {
    return `${this.web}/${p.pathWithNamespace}.git`;
  }

  webUrl(p: Project): string {
    return `${this.web}/${p.pathWithNamespace}`;
  }

  /** The push rules the pre-receive hook reads: who may push at which level. */
  writeAccess(p: Project): void {
    const lines = [...this.users.values()].map((u) => `${u.username} ${this.accessLevel(p, u.id)}`);
    writeFileSync(join(p.dir, 'railyard-access'), lines.join('\n') + '\n');
  }

  writeProtected(p: Project): void {
    const lines = p.protectedBranches.map(
      (b) => `${b.name}\t${b.pushAccessLevel}\t${b.allowForcePush ? 1 : 0}`,
    );
    writeFileSync(join(p.dir, 'railyard-protected'), lines.length ? lines.join('\n') + '\n' : '');
  }

  // --- git -------------------------------------------------------------------------------------

  resolve(p: Project, rev: string): Promise<string | null> {
    return this.git.resolve(p.dir, rev);
  }

  isAncestor(p: Project, a: string, b: string): Promise<boolean> {
    return this.git.isAncestor(p.dir, a, b);
  }

  readFile(p: Project, sha: string, path: string): Promise<string | null> {
    return this.git.readFile(p.dir, sha, path);
  }

  commitFiles(
    p: Project,
    parent: string,
    files: Record<string, string | null>,
    message: string,
    author: string,
  ): Promise<string> {
    return this.git.commitFiles(p.dir, this.root, parent, files, message, commitEnv(author));
  }

  async commitJson(p: Project, sha: string) {
    const c = await this.git.commitInfo(p.dir, sha);
    return {
      id: c.sha,
      an: c.an,
      ae: c.ae,
      ad: c.ad,
      cd: c.cd,
      message: c.message,
      title: c.message.split('\n')[0],
    };
  }

  /** The branches as git has them now (`branch → sha`). */
  heads(p: Project): Promise<Map<string, string>> {
    return this.git.heads(p.dir);
  }

  // --- background work -------------------------------------------------------------------------

  async stop(): Promise<void> {
    this.endWork();
    await this.git.stop();
    await Promise.allSettled([...this.background]);
  }
}

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function titleCase(username: string): string {
  return username.replace(/[-_.]+/g, ' ').replace(/\b\w/g, (c) => c.toUpperCase());
}

export function emailOf(username: string): string {
  return `${username.replace(/[^A-Za-z0-9._-]/g, '')}@example.com`;
}

export function commitEnv(username: string): Record<string, string> {
  const now = `${Math.floor(Date.now() / 1000)} +0000`;
  return {
    GIT_AUTHOR_NAME: titleCase(username),
    GIT_AUTHOR_EMAIL: emailOf(username),
    GIT_AUTHOR_DATE: now,
    GIT_COMMITTER_NAME: titleCase(username),
    GIT_COMMITTER_EMAIL: emailOf(username),
    GIT_COMMITTER_DATE: now,
  };
}
