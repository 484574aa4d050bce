/**
 * End-to-end harness for `railyard serve --github`: the real built binary as a child process,
 * talking to the GitHub emulator of test/support/github over real HTTP and real git.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGitHubEmulator, type GitHubEmulator } from '../support/github/index.js';
import { BIN } from '../support/cli.js';
import { call, ok } from '../server/helpers.js';
import type { TestServer } from '../support/server.js';

export const OWNER = 'acme';
export const NAME = 'app';
export const API_TOKEN = 'e2e-api-token';
export const GH_TOKEN = 'ghp_e2e_secret_token';
export const WEBHOOK_SECRET = 'e2e-webhook-secret';

export interface RailyardProcess extends TestServer {
  /** Everything the process wrote (stdout + stderr), for assertions that no secret was logged. */
  output(): string;
  /** SIGTERM and wait for the exit (the data dir stays). */
  stop(): Promise<void>;
  /** Kill it at once, as a crash would. */
  kill(): Promise<void>;
}

export interface StartOptions {
  webhooks: boolean;
  auth?: { kind: 'token' } | { kind: 'app'; appId: number; privateKeyPem: string };
  dataDir: string;
  pollSeconds?: number;
  /** --github-ci-start-seconds: generous by default, so a loaded CI machine's slow emulator CI never reads as "no checks". */
  ciStartSeconds?: number;
  /** --github-write-interval-ms (tests: 0; the server's default is 1000). */
  writeIntervalMs?: number;
  extraArgs?: string[];
}

const cleanups: Array<() => Promise<void> | void> = [];

const emulators: GitHubEmulator[] = [];

/**
 * Runs the cleanups registered by this harness (call from afterEach), then fails the test if any
 * answer the emulator gave the server did not match GitHub's OpenAPI description.
 */
export async function cleanup(): Promise<void> {
  const violations: string[] = [];
  for (const gh of emulators.splice(0)) {
    await gh.idle().catch(() => undefined);
    violations.push(...gh.schemaViolations);
  }
  for (const c of cleanups.splice(0).reverse()) {
    try {
      await c();
    } catch {
      /* keep cleaning */
    }
  }
  if (violations.length)
    throw new Error(`the emulator's answers broke GitHub's schema:\n${violations.join('\n')}`);
}

export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export async function emulator(): Promise<GitHubEmulator> {
  const gh = await startGitHubEmulator({ validate: true });
  cleanups.push(() => gh.close());
  emulators.push(gh);
  gh.addToken(GH_TOKEN, { login: 'railyard-bot' });
  return gh;
}

/** Starts `railyard serve --github` against the emulator and waits until it listens. */
export async function startRailyard(gh: GitHubEmulator, opts: StartOptions): Promise<RailyardProcess> {
  const secrets = tempDir('railyard-secrets-');
  const args = [
    BIN,
    'serve',
    '--github',
    '--port',
    '0',
    '--data-dir',
    opts.dataDir,
    '--token',
    API_TOKEN,
    '--github-api-url',
    gh.apiUrl,
    '--github-host',
    gh.host,
    '--github-poll-seconds',
    String(opts.pollSeconds ?? 0.2),
    '--github-ci-start-seconds',
    String(opts.ciStartSeconds ?? 30),
    '--github-write-interval-ms',
    String(opts.writeIntervalMs ?? 0),
    ...(opts.extraArgs ?? []),
  ];
  const auth = opts.auth ?? { kind: 'token' };
  if (auth.kind === 'token') {
    writeFileSync(join(secrets, 'token'), GH_TOKEN + '\n');
    args.push('--github-token-file', join(secrets, 'token'));
  } else {
    writeFileSync(join(secrets, 'key.pem'), auth.privateKeyPem);
    args.push('--github-app-id', String(auth.appId), '--github-private-key-file', join(secrets, 'key.pem'));
  }
  if (opts.webhooks) {
    writeFileSync(join(secrets, 'webhook'), WEBHOOK_SECRET);
    args.push('--github-webhook-secret-file', join(secrets, 'webhook'));
  }
  const child: ChildProcess = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH ?? '', HOME: secrets, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  let alive = true;
  void exited.then(() => (alive = false));
  const port = await new Promise<string>((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error(`railyard serve did not start: ${out}`)), 30_000);
    const check = () => {
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)\/v1/.exec(out);
      if (m) {
        clearTimeout(deadline);
        resolve(m[1]!);
      } else if (!alive) {
        clearTimeout(deadline);
        reject(new Error(`railyard serve exited: ${out}`));
      } else setTimeout(check, 25);
    };
    check();
  });
  const url = `http://127.0.0.1:${port}`;
  if (opts.webhooks) gh.setWebhook(`${url}/webhooks/github`, WEBHOOK_SECRET);
  const stop = async () => {
    if (!alive) return;
    child.kill('SIGTERM');
    await exited;
  };
  const proc: RailyardProcess = {
    url: `${url}/v1`,
    token: API_TOKEN,
    org: 'local',
    dataDir: opts.dataDir,
    output: () => out,
    stop,
    close: stop,
    async kill() {
      if (!alive) return;
      child.kill('SIGKILL');
      await exited;
    },
  };
  cleanups.push(stop);
  if (process.env.RAILYARD_E2E_DEBUG) cleanups.push(() => console.log(`--- railyard output ---\n${out}`));
  return proc;
}

export function repoOf(gh: GitHubEmulator) {
  return { host: gh.host, owner: OWNER, name: NAME };
}

export async function createQueue(
  server: TestServer,
  gh: GitHubEmulator,
  settings: Record<string, unknown> = {},
): Promise<void> {
  const repo = repoOf(gh);
  await ok(server, 'createQueue', {
    repo,
    targetBranch: 'main',
    ...(settings.concurrency ? { concurrency: settings.concurrency } : {}),
  });
  const { concurrency: _c, ...rest } = settings;
  if (Object.keys(rest).length) await ok(server, 'updateQueue', { repo, targetBranch: 'main', ...rest });
}

export async function submit(
  server: TestServer,
  gh: GitHubEmulator,
  n: number,
  extra: Record<string, unknown> = {},
) {
  return ok(server, 'submitPullRequest', {
    repo: repoOf(gh),
    targetBranch: 'main',
    pr: { number: n },
    ...extra,
  });
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Pr = any;

export async function waitFor(
  server: TestServer,
  gh: GitHubEmulator,
  n: number,
  done: (pr: Pr) => boolean,
  timeoutMs = 30_000,
): Promise<Pr> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pr = await ok(server, 'getSubmittedPullRequest', {
      repo: repoOf(gh),
      targetBranch: 'main',
      pr: { number: n },
    });
    if (done(pr)) return pr;
    if (Date.now() > deadline) throw new Error(`#${n} is still ${pr.state} (${pr.stateReason ?? ''})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Waits until PR `n` is being tested and has its test run. */
export function waitForTesting(server: TestServer, gh: GitHubEmulator, n: number): Promise<Pr> {
  return waitFor(server, gh, n, (p) => p.state === 'testing' && Boolean(p.testRunId));
}

/** The SHA of a run's test commit, once it is built and pushed (getMergeQueueTestingDetails' testBranchSha). */
export async function waitForTestCommit(server: TestServer, gh: GitHubEmulator, runId: string): Promise<string> {
  let sha = '';
  await until('the test commit', async () => {
    const d = await call(server, 'getMergeQueueTestingDetails', { repo: repoOf(gh), targetBranch: 'main', testRunId: runId });
    sha = d.json?.testBranchSha ?? '';
    return d.status === 200 && sha !== '';
  });
  return sha;
}

/** Polls `check` until it returns true (or throws after timeoutMs with `what`). */
export async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export const settled = (pr: { state: string }) => ['merged', 'failed', 'cancelled'].includes(pr.state);

export interface OnePrOptions {
  /** Queue settings for createQueue (createPrsForTestingBranches is false unless given). */
  queue?: Record<string, unknown>;
  draft?: boolean;
  /** Submit it once the queue exists (default true). */
  submit?: boolean;
}

/** Opens the pull request `feat` ("Feature", one commit writing f.txt), creates the queue on `main` and submits it. */
export async function onePr(server: TestServer, gh: GitHubEmulator, opts: OnePrOptions = {}) {
  const pr = await gh.createPullRequest(OWNER, NAME, {
    head: 'feat',
    title: 'Feature',
    ...(opts.draft ? { draft: true } : {}),
    files: { 'f.txt': 'f\n' },
  });
  await createQueue(server, gh, { createPrsForTestingBranches: false, ...opts.queue });
  if (opts.submit ?? true) await submit(server, gh, pr.number);
  return pr;
}

/** A pull request to open: its branch, title, author and the files its one commit writes. */
export interface PrSpec {
  head: string;
  title: string;
  files: Record<string, string>;
  user?: string;
}

export interface TwoPrsOptions {
  /** Default: `one` ("One", one.txt) and `two` ("Two", two.txt). */
  prs?: [PrSpec, PrSpec];
  /** Queue settings for createQueue (concurrency, mode, createPrsForTestingBranches, …). */
  queue?: Record<string, unknown>;
  /** Parallel mode: the impacted targets of each PR, set before it is submitted. */
  impactedTargets?: [string[], string[]];
  /**
   * `in-line` (default): #1 is submitted and in the line (testing or done) before #2 is submitted,
   * so #1 is ahead of #2 (GitHub computes mergeability lazily, and a not_ready PR rightly lets a
   * later ready one pass). `both`: both at once. `none`: the queue exists, nothing is submitted.
   */
  submit?: 'in-line' | 'both' | 'none';
}

/** Opens two pull requests, creates the queue on `main` and submits them (see `submit`). */
export async function twoPrs(server: TestServer, gh: GitHubEmulator, opts: TwoPrsOptions = {}) {
  const specs = opts.prs ?? [
    { head: 'one', title: 'One', files: { 'one.txt': '1\n' } },
    { head: 'two', title: 'Two', files: { 'two.txt': '2\n' } },
  ];
  const one = await gh.createPullRequest(OWNER, NAME, specs[0]);
  const two = await gh.createPullRequest(OWNER, NAME, specs[1]);
  await createQueue(server, gh, opts.queue);
  const mode = opts.submit ?? 'in-line';
  if (mode === 'none') return { one, two };
  for (const [i, pr] of [one, two].entries()) {
    const targets = opts.impactedTargets?.[i];
    if (targets)
      await ok(server, 'setImpactedTargets', {
        repo: repoOf(gh),
        targetBranch: 'main',
        pr: { number: pr.number, sha: pr.headSha },
        impactedTargets: targets,
      });
    await submit(server, gh, pr.number);
    if (i === 0 && mode === 'in-line') await waitFor(server, gh, pr.number, (p) => p.state === 'testing' || settled(p));
  }
  return { one, two };
}
