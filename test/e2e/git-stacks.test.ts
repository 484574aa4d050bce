/**
 * End to end, stacked PRs on the git forge: real bare repositories where a PR's base is
 * `refs/pull/M/head` (stacked on PR M), the real server on 127.0.0.1 and the real `railyard` binary.
 */
import { describe, expect, it } from 'vitest';
import { createRepo, type FixtureRepo } from '../forge/fixture.js';
import { isolatedEnv, railyard } from '../support/cli.js';
import { cleanupsAfterEach } from '../support/hooks.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { ok } from '../server/helpers.js';

const LOCATION = { host: 'github.com', owner: 'acme', name: 'app' };
const Q = { repo: { ...LOCATION }, targetBranch: 'main' };
const FLAGS = ['--repo', 'github.com/acme/app'];

const cleanup = cleanupsAfterEach();

interface World {
  repo: FixtureRepo;
  server: TestServer;
  cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
}

async function world(checks: Record<string, string>): Promise<World> {
  const repo = await createRepo({ location: LOCATION, checks, files: { 'app.txt': 'app\n' } });
  cleanup(() => repo.cleanup());
  const server = await startTestServer({ gitRoot: repo.root });
  cleanup(() => server.close());
  const env = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: server.token });
  const cli = async (args: string[]) => {
    const r = await railyard(args, env);
    if (r.code !== 0) throw new Error(`railyard ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
    return r;
  };
  return { repo, server, cli };
}

/** What a test reads of a submitted PR. */
interface Submitted {
  state: string;
  stateReason?: string | null;
  testRunId?: string | null;
  stack?: { prNumbers: number[]; description: string };
}

async function waitFor(
  server: TestServer,
  prNumber: number,
  done: (pr: Submitted) => boolean,
  timeoutMs = 30_000,
): Promise<Submitted> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pr = (await ok(server, 'getSubmittedPullRequest', { ...Q, pr: { number: prNumber } })) as Submitted;
    if (done(pr)) return pr;
    if (Date.now() > deadline) throw new Error(`#${prNumber} is still ${pr.state} (${pr.stateReason ?? ''})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const settled = (pr: { state: string }) => ['merged', 'failed', 'cancelled'].includes(pr.state);

/** #4 on main, #5 on #4, #6 on #5: each based on the PR below it (`refs/pull/M/head`). */
function openStack(repo: FixtureRepo): void {
  repo.openPr(4, { 'a.txt': 'a\n' }, { title: 'Add a' });
  repo.openPr(
    5,
    { 'a.txt': 'a, polished\n', 'b.txt': 'b\n' },
    { title: 'Polish a, add b', from: 'refs/pull/4/head' },
  );
  repo.setPrBase(5, 'refs/pull/4/head');
  repo.openPr(6, { 'c.txt': 'c\n' }, { title: 'Add c', from: 'refs/pull/5/head' });
  repo.setPrBase(6, 'refs/pull/5/head');
}

describe('stacked PRs on the git forge', () => {
  it('submitting the top of a stack of 3 lands the stack bottom first, as one unit, each PR merged', async () => {
    const w = await world({ test: 'test -f app.txt' });
    openStack(w.repo);
    await w.cli(['mq', 'queue', 'create', ...FLAGS]);
    await w.cli(['mq', 'submit', '6', ...FLAGS]);
    const done = await Promise.all([4, 5, 6].map((n) => waitFor(w.server, n, settled)));
    expect(done.map((pr) => pr.state)).toEqual(['merged', 'merged', 'merged']);
    // One unit: one test run for the three of them, landed in one move of main.
    expect(new Set(done.map((pr) => pr.testRunId)).size).toBe(1);
    // Each PR's answer shows its stack.
    for (const pr of done)
      expect(pr.stack).toEqual({ prNumbers: [4, 5, 6], description: 'stack of 3: #4 ← #5 ← #6' });
    // The history names the stack where it was tested and where it landed.
    const history = (await ok(w.server, 'getPullRequestHistory', { ...Q, pr: { number: 5 } })) as {
      transitions: { state: string; detail?: string }[];
    };
    const named = history.transitions
      .filter((t) => t.state === 'testing' || t.state === 'merged')
      .map((t) => [t.state, t.detail]);
    expect(named).toEqual([
      ['testing', 'stack of 3: #4 ← #5 ← #6'],
      ['merged', 'stack of 3: #4 ← #5 ← #6'],
    ]);
    // And so does `mq status`, for people.
    expect((await w.cli(['mq', 'status', '5', ...FLAGS])).stdout).toMatch(/stack\s+stack of 3: #4 ← #5 ← #6/);
    expect(w.repo.log('main').map((c) => c.subject)).toEqual([
      'Add c (#6)',
      'Polish a, add b (#5)',
      'Add a (#4)',
      'Initial commit',
    ]);
    expect(w.repo.read('main', 'a.txt')).toBe('a, polished\n');
    expect(w.repo.files('main')).toEqual(expect.arrayContaining(['a.txt', 'b.txt', 'c.txt']));
    const reflog = w.repo.git(['reflog', 'show', '--format=%H', 'refs/heads/main']).trim().split('\n');
    expect(reflog.length, 'main moved once for the stack').toBeLessThanOrEqual(2);
  });

  it('pushing to the middle PR of a stack under test removes it and the PR above it; the bottom lands alone', async () => {
    const w = await world({ test: 'sleep 2' });
    openStack(w.repo);
    await w.cli(['mq', 'queue', 'create', ...FLAGS]);
    await w.cli(['mq', 'submit', '6', ...FLAGS]);
    await waitFor(w.server, 6, (p) => p.state === 'testing');
    w.repo.pushPr(5, { 'b.txt': 'b, again\n' });
    expect(await waitFor(w.server, 5, settled)).toMatchObject({
      state: 'cancelled',
      stateReason: 'PR_PUSHED_TO',
    });
    expect(await waitFor(w.server, 6, settled)).toMatchObject({
      state: 'cancelled',
      stateReason: 'STACKED_PR_MEMBER_PUSHED_TO',
    });
    expect((await waitFor(w.server, 4, settled)).state).toBe('merged');
    expect(w.repo.log('main').map((c) => c.subject)).toEqual(['Add a (#4)', 'Initial commit']);
  });

  it('refuses a stack whose bottom is based on another branch, naming it', async () => {
    const w = await world({ test: 'true' });
    w.repo.commitOn('release', { 'r.txt': 'r\n' }, 'release');
    w.repo.openPr(4, { 'a.txt': 'a\n' }, { title: 'Add a', from: 'release' });
    w.repo.setPrBase(4, 'release');
    w.repo.openPr(5, { 'b.txt': 'b\n' }, { title: 'Add b', from: 'refs/pull/4/head' });
    w.repo.setPrBase(5, 'refs/pull/4/head');
    await w.cli(['mq', 'queue', 'create', ...FLAGS]);
    const env = isolatedEnv({ RAILYARD_API_URL: w.server.url, RAILYARD_TOKEN: w.server.token });
    const r = await railyard(['mq', 'submit', '5', ...FLAGS], env);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('pull request #5 is stacked on #4, which is based on release, not main');
  });
});
