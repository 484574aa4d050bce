// A stateful GitHub emulator for tests: real bare repositories served over smart HTTP by
// `git http-backend`, the REST subset Railyard's GitHub forge uses (docs: decisions.md "GitHub forge"),
// signed webhooks, a GitHub App with expiring installation tokens, rate-limit answers and a
// configurable CI. See README.md next to this file. This file is the public face (what tests call);
// the layers under it are state.ts, ci.ts, webhooks.ts, http.ts and the routes-*.ts files.
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { appendFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { EmulatorHttp } from './http.js';
import type { CheckRunFacts } from './json.js';
import {
  CI_USER,
  defaultCi,
  statusState,
  ZERO,
  type CheckConclusion,
  type CiDecide,
  type EmulatorOptions,
  type GitHubEmulator,
  type LandingFault,
  type Permission,
  type PrShown,
} from './types.js';

export type {
  LandingFault,
  BranchRules,
  DeliveryFate,
  DeliveryFilter,
  PrShown,
  ReviewState,
  CheckConclusion,
  CiCheck,
  CiDecide,
  CiPush,
  Delivery,
  EmulatorOptions,
  GitHubEmulator,
  Permission,
  RequestRecord,
} from './types.js';

export async function startGitHubEmulator(opts: EmulatorOptions = {}): Promise<GitHubEmulator> {
  const e = new Emulator(opts);
  await e.start();
  return e;
}

class Emulator extends EmulatorHttp implements GitHubEmulator {
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
      rules: new Map(),
      ci: defaultCi,
      mergeabilityDelayMs: 0,
      gitReadDelayMs: 0,
      mergeAnswerDelayMs: 0,
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

  async setBase(owner: string, repo: string, number: number, base: string): Promise<void> {
    const r = this.mustRepo(owner, repo);
    const p = this.mustPr(r, number);
    if (p.base === base) return;
    if ((await this.resolve(r, `refs/heads/${base}`)) === null) throw new Error(`setBase: no branch ${base}`);
    const oldSha = (await this.resolve(r, `refs/heads/${p.base}`)) ?? ZERO;
    const changes = { base: { ref: { from: p.base }, sha: { from: oldSha } } };
    p.base = base;
    p.updatedAt = Date.now();
    this.prEvent(r, p, 'edited', p.user, { changes });
  }

  shown(owner: string, repo: string, number: number): PrShown[] {
    return [...this.mustPr(this.mustRepo(owner, repo), number).shown];
  }

  finalShownAt(
    owner: string,
    repo: string,
    number: number,
    opts: { context?: string; comment?: RegExp } = {},
  ): { status: number | null; closed: number | null; comment: number | null; all: number | null } {
    const context = opts.context ?? 'railyard/merge-queue';
    const final = opts.comment ?? /\b(merged|failed|cancelled)\b/i;
    let status: number | null = null;
    let closed: number | null = null;
    let comment: number | null = null;
    for (const s of this.shown(owner, repo, number)) {
      if (status === null && s.kind === 'status' && s.context === context && s.state !== 'pending')
        status = s.at;
      if (closed === null && s.kind === 'closed') closed = s.at;
      if (comment === null && s.kind === 'comment' && final.test(s.body)) comment = s.at;
    }
    const all =
      status !== null && closed !== null && comment !== null ? Math.max(status, closed, comment) : null;
    return { status, closed, comment, all };
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

  setMergeAnswerDelay(owner: string, repo: string, ms: number): void {
    this.mustRepo(owner, repo).mergeAnswerDelayMs = ms;
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

  // --- observation and faults ----------------------------------------------------------------

  resetRequestCount(): void {
    this.requests.length = 0;
  }

  failLanding(owner: string, repo: string, fault: LandingFault): void {
    this.mustRepo(owner, repo);
    const key = `${owner}/${repo}`.toLowerCase();
    if (fault.times === 0) {
      this.landingFaults.delete(key);
      return;
    }
    const list = this.landingFaults.get(key) ?? [];
    for (let i = 0; i < (fault.times ?? 1); i++) list.push({ answer: fault.answer ?? 502, after: fault.after ?? false });
    this.landingFaults.set(key, list);
  }

  rateLimitNext(
    n: number,
    kind: 'primary' | 'secondary',
    retryAfterSeconds = 60,
    status: 403 | 429 = 403,
  ): void {
    for (let i = 0; i < n; i++) this.forced.push({ kind, retryAfter: retryAfterSeconds, status });
  }
}
