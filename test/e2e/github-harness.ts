/**
 * End-to-end harness for `railyard serve --github`: the real built binary as a child process,
 * talking to the GitHub emulator of test/support/github over real HTTP and real git.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, type TestContext } from 'vitest';
import { startGitHubEmulator, type GitHubEmulator } from '../support/github/index.js';
import { call, ok } from '../server/helpers.js';
import type { TestServer } from '../support/server.js';
import * as shared from '../support/forge-e2e.js';
import {
  API_TOKEN,
  baseUrlOf,
  checkAnswersAtCleanup,
  checkAtCleanup,
  explainFailures,
  onCleanup,
  settled,
  sharedResources,
  spawnRailyard,
  tempDir,
  until,
  type Pr,
  type RailyardProcess,
} from '../support/forge-e2e.js';

export { API_TOKEN, settled, tempDir, until, type RailyardProcess } from '../support/forge-e2e.js';

export const OWNER = 'acme';
export const NAME = 'app';
export const GH_TOKEN = 'ghp_e2e_secret_token';
export const WEBHOOK_SECRET = 'e2e-webhook-secret';

export interface StartOptions {
  webhooks: boolean;
  auth?: { kind: 'token' } | { kind: 'app'; appId: number; privateKeyPem: string };
  dataDir: string;
  pollSeconds?: number;
  /** --github-ci-start-seconds: generous by default, so a loaded CI machine's slow emulator CI never reads as "no checks". */
  ciStartSeconds?: number;
  /** --github-write-interval-ms (tests: 0; null: the server's default). */
  writeIntervalMs?: number | null;
  extraArgs?: string[];
}

/**
 * Runs the cleanups registered by this harness (call from afterEach), then fails the test if any
 * answer the emulator gave the server did not match GitHub's OpenAPI description.
 */
export const cleanup = (): Promise<void> => shared.cleanup("GitHub's schema");

/** A test body with its own cleanups (checked against GitHub's schema), for tests that run side by side. */
export const scoped = <C extends TestContext>(fn: (ctx: C) => Promise<void>) =>
  shared.ownCleanups("GitHub's schema", fn);

export async function emulator(): Promise<GitHubEmulator> {
  const gh = await startGitHubEmulator({ validate: true });
  checkAtCleanup(gh);
  gh.addToken(GH_TOKEN, { login: 'railyard-bot' });
  return gh;
}

/** Starts `railyard serve --github` against the emulator and waits until it listens. */
export async function startRailyard(gh: GitHubEmulator, opts: StartOptions): Promise<RailyardProcess> {
  const secrets = tempDir('railyard-secrets-');
  const args = [
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
    ...(opts.writeIntervalMs === null
      ? []
      : ['--github-write-interval-ms', String(opts.writeIntervalMs ?? 0)]),
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
  const proc = await spawnRailyard(args, secrets, opts.dataDir);
  if (opts.webhooks) gh.setWebhook(`${baseUrlOf(proc)}/webhooks/github`, WEBHOOK_SECRET);
  return proc;
}

/**
 * One test's GitHub world: the emulator with `acme/app` (a README) and `railyard serve --github` on
 * it with `opts` and a data dir of its own (`dataDirPrefix…`).
 */
export async function githubWorld(
  opts: Omit<StartOptions, 'dataDir'>,
  dataDirPrefix = 'railyard-gh-',
): Promise<{ gh: GitHubEmulator; server: RailyardProcess }> {
  const gh = await emulator();
  gh.createRepo(OWNER, NAME, { files: { 'README.md': 'app\n' } });
  const server = await startRailyard(gh, { dataDir: tempDir(dataDirPrefix), ...opts });
  return { gh, server };
}

/** The queue's comment on PR `n` of `acme/app` ('' before there is one). */
export const ourComment = (gh: GitHubEmulator, n: number): string =>
  gh.comments(OWNER, NAME, n).find((c) => c.body.includes('railyard:merge-queue'))?.body ?? '';

/** The repository a test's PRs are on: `acme/app`, or the test's own on a shared lane (`sharedLane`). */
const repoNames = new WeakMap<GitHubEmulator, string>();
export const repoName = (gh: GitHubEmulator): string => repoNames.get(gh) ?? NAME;

export function repoOf(gh: GitHubEmulator) {
  return { host: gh.host, owner: OWNER, name: repoName(gh) };
}

/** What a test on a shared lane gets: the lane's emulator and server, its own repository's name. */
export interface LaneWorld {
  gh: GitHubEmulator;
  server: RailyardProcess;
  /** This test's repository on the emulator (`app-<n>`; the owner is OWNER). */
  NAME: string;
  /** What the server wrote since this test began. */
  output(): string;
}

/**
 * One emulator and one `railyard serve --github` (webhooks, the harness's default flags) for the
 * tests of a describe that run one after another: call it in the describe's body (it registers a
 * beforeAll and an afterAll) and call what it returns at the start of each test. Each test gets a
 * repository of its own (`acme/app-<n>`: the harness's helpers act on it); when the test ends its
 * open PRs are cancelled and its queue deleted (the server stops watching that repository), and the
 * emulator's answers during the test are checked against GitHub's schema. Saves a server start
 * (~0.55 CPU-s) per test. Tests that need other server flags, a restart or the whole log start
 * their own (`emulator`, `startRailyard`).
 */
export function sharedLane(): (opts?: { files?: Record<string, string> }) => Promise<LaneWorld> {
  let shared: { value: { gh: GitHubEmulator; server: RailyardProcess }; close(): Promise<void> } | undefined;
  let n = 0;
  beforeAll(async () => {
    shared = await sharedResources("GitHub's schema", async () => {
      const gh = await emulator();
      const server = await startRailyard(gh, { webhooks: true, dataDir: tempDir('railyard-gh-') });
      return { gh, server };
    });
  });
  afterAll(() => shared?.close());
  return async (opts = {}) => {
    if (!shared) throw new Error("sharedLane: the describe's beforeAll did not start the lane");
    const { gh, server } = shared.value;
    const name = `app-${++n}`;
    gh.createRepo(OWNER, name, { files: opts.files ?? { 'README.md': 'app\n' } });
    repoNames.set(gh, name);
    const mark = server.output().length;
    const output = () => server.output().slice(mark);
    const seen = gh.schemaViolations.length;
    checkAnswersAtCleanup({
      idle: () => gh.idle(),
      get schemaViolations() {
        return gh.schemaViolations.slice(seen);
      },
    });
    explainFailures(server.url, output);
    const q = { repo: { host: gh.host, owner: OWNER, name }, targetBranch: 'main' };
    onCleanup(async () => {
      const list = await call(server, 'listPullRequests', q);
      for (const pr of (list.json?.pullRequests ?? []) as Pr[])
        if (!settled(pr)) await call(server, 'cancelPullRequest', { ...q, pr: { number: pr.prNumber } });
      // Deleted once empty (a PR whose landing is under way settles first).
      await until(
        `the queue of ${name} deleted`,
        async () => [200, 404].includes((await call(server, 'deleteQueue', q)).status),
        30_000,
      );
    });
    return { gh, server, NAME: name, output };
  };
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

export function submit(
  server: TestServer,
  gh: GitHubEmulator,
  n: number,
  extra: Record<string, unknown> = {},
) {
  return shared.submitTo(server, repoOf(gh), n, extra);
}

export function waitFor(
  server: TestServer,
  gh: GitHubEmulator,
  n: number,
  done: (pr: Pr) => boolean,
  timeoutMs = 30_000,
): Promise<Pr> {
  return shared.waitForPr(server, repoOf(gh), n, `#${n}`, done, timeoutMs);
}

/** Waits until PR `n` is being tested and has its test run. */
export function waitForTesting(server: TestServer, gh: GitHubEmulator, n: number): Promise<Pr> {
  return waitFor(server, gh, n, (p) => p.state === 'testing' && Boolean(p.testRunId));
}

/** The SHA of a run's test commit, once it is built and pushed (getMergeQueueTestingDetails' testBranchSha). */
export async function waitForTestCommit(
  server: TestServer,
  gh: GitHubEmulator,
  runId: string,
): Promise<string> {
  let sha = '';
  await until('the test commit', async () => {
    const d = await call(server, 'getMergeQueueTestingDetails', {
      repo: repoOf(gh),
      targetBranch: 'main',
      testRunId: runId,
    });
    sha = d.json?.testBranchSha ?? '';
    return d.status === 200 && sha !== '';
  });
  return sha;
}

export interface OnePrOptions {
  /** Queue settings for createQueue (createPrsForTestingBranches is false unless given). */
  queue?: Record<string, unknown>;
  draft?: boolean;
  /** Submit it once the queue exists (default true). */
  submit?: boolean;
}

/** Opens the pull request `feat` ("Feature", one commit writing f.txt), creates the queue on `main` and submits it. */
export async function onePr(server: TestServer, gh: GitHubEmulator, opts: OnePrOptions = {}) {
  const pr = await gh.createPullRequest(OWNER, repoName(gh), {
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
  const one = await gh.createPullRequest(OWNER, repoName(gh), specs[0]);
  const two = await gh.createPullRequest(OWNER, repoName(gh), specs[1]);
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
    if (i === 0 && mode === 'in-line')
      await waitFor(server, gh, pr.number, (p) => p.state === 'testing' || settled(p));
  }
  return { one, two };
}

/**
 * Per landed PR of `prNumbers`: ms from the target first moving to its commit (or one after it: a
 * PR can land with those above it) to GitHub showing its final state (status, closed, comment: the
 * emulator's finalShownAt), waiting up to 60 s for each to show. The target's log must be linear
 * (squash). With DEBUG_LAGS set, prints the writes, the target's moves and what each PR showed when.
 */
export async function finalShownLags(gh: GitHubEmulator, prNumbers: number[]): Promise<number[]> {
  const log = await gh.log(OWNER, NAME, 'main'); // newest first
  const lags: number[] = [];
  for (const n of prNumbers) {
    const landed = log.findIndex((c) => c.message.includes(`(#${n})`));
    const at = gh.branchMoves.find((m) => {
      const i = m.branch === 'main' && m.after !== null ? log.findIndex((c) => c.sha === m.after) : -1;
      return i >= 0 && i <= landed;
    })!.at;
    await until(`#${n} final on GitHub`, () => gh.finalShownAt(OWNER, NAME, n).all !== null, 60_000);
    lags.push(gh.finalShownAt(OWNER, NAME, n).all! - at);
  }
  if (process.env.DEBUG_LAGS) {
    const t0 = gh.requests[0]?.at ?? 0;
    for (const r of gh.requests.filter((x) => x.method !== 'GET'))
      console.log(`${r.at - t0} +${r.ms} ${r.method} ${r.path} ${r.status}`);
    for (const m of gh.branchMoves.filter((x) => x.branch === 'main'))
      console.log(`move ${m.at - t0} ${m.after?.slice(0, 7)}`);
    for (const n of prNumbers)
      console.log(
        `#${n}`,
        JSON.stringify(gh.finalShownAt(OWNER, NAME, n)),
        gh
          .shown(OWNER, NAME, n)
          .map((x) => `${x.kind}@${x.at - t0}`)
          .join(' '),
      );
  }
  return lags;
}
