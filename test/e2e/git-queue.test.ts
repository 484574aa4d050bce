/**
 * End to end: real bare git repositories, the real server (git forge + runner) on 127.0.0.1,
 * and the real `railyard` binary for every command a user would type.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRepo, type FixtureRepo } from '../forge/fixture.js';
import { isolatedEnv, railyard } from '../support/cli.js';
import { cleanupsAfterEach } from '../support/hooks.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { ok } from '../server/helpers.js';

const LOCATION = { host: 'github.com', owner: 'acme', name: 'app' };
const REPO = { ...LOCATION };
const Q = { repo: REPO, targetBranch: 'main' };
const FLAGS = ['--repo', 'github.com/acme/app'];

const cleanup = cleanupsAfterEach();

interface World {
  repo: FixtureRepo;
  server: TestServer;
  cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
}

async function world(checks: Record<string, string>, files: Record<string, string> = { 'app.txt': 'app\n' }, dataDir?: string): Promise<World> {
  const repo = await createRepo({ location: LOCATION, checks, files });
  cleanup(() => repo.cleanup());
  const server = await startTestServer({ gitRoot: repo.root, dataDir });
  cleanup(() => server.close());
  const env = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: server.token });
  const cli = async (args: string[]) => {
    const r = await railyard(args, env);
    if (r.code !== 0) throw new Error(`railyard ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
    return r;
  };
  return { repo, server, cli };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function waitFor(server: TestServer, prNumber: number, done: (pr: any) => boolean, timeoutMs = 30_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pr = await ok(server, 'getSubmittedPullRequest', { ...Q, pr: { number: prNumber } });
    if (done(pr)) return pr;
    if (Date.now() > deadline) throw new Error(`#${prNumber} is still ${pr.state} (${pr.stateReason ?? ''})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const settled = (pr: { state: string }) => ['merged', 'failed', 'cancelled'].includes(pr.state);

describe('landing real pull requests', () => {
  it.each([
    ['squash', (w: World) => {
      const log = w.repo.log('main');
      expect(log.map((c) => c.subject)).toEqual(['Second feature (#2)', 'First feature (#1)', 'Initial commit']);
      expect(log.slice(0, 2).map((c) => [c.parents.length, c.authorName, c.committerName])).toEqual([
        [1, 'Bob', 'Railyard'],
        [1, 'Alice', 'Railyard'],
      ]);
    }],
    ['merge_commit', (w: World) => {
      const log = w.repo.log('main');
      expect(log.map((c) => c.subject)).toEqual(['Merge pull request #2: Second feature', 'Merge pull request #1: First feature', 'Initial commit']);
      expect(log[0].parents[1]).toBe(w.repo.headOf('refs/pull/2/head'));
      expect(log[1].parents[1]).toBe(w.repo.headOf('refs/pull/1/head'));
    }],
    ['rebase', (w: World) => {
      const log = w.repo.log('main');
      // The fixture names a PR's last commit after the PR; rebase keeps every commit and its message.
      expect(log.map((c) => c.subject)).toEqual(['Second feature', 'First feature', 'a: add', 'Initial commit']);
      expect(log.slice(0, 3).map((c) => [c.parents.length, c.authorName, c.committerName])).toEqual([
        [1, 'Bob', 'Railyard'],
        [1, 'Alice', 'Railyard'],
        [1, 'Alice', 'Railyard'],
      ]);
    }],
  ] as const)('%s lands the expected history, testing #2 on top of #1', async (method, check) => {
    const w = await world({ test: 'test -f app.txt' });
    w.repo.openPr(1, [
      { files: { 'a.txt': 'a\n' }, message: 'a: add', author: 'Alice' },
      { files: { 'a.txt': 'a, polished\n' }, message: 'a: polish', author: 'Alice' },
    ], { title: 'First feature', author: 'Alice' });
    w.repo.openPr(2, [{ files: { 'b.txt': 'b\n' }, message: 'b: add', author: 'Bob' }], { title: 'Second feature', author: 'Bob' });
    await w.cli(['mq', 'queue', 'create', ...FLAGS, '--concurrency', '2']);
    await w.cli(['mq', 'queue', 'update', ...FLAGS, '--merge-method', method]);
    await w.cli(['mq', 'submit', '1', ...FLAGS]);
    await w.cli(['mq', 'submit', '2', ...FLAGS]);
    const two = await waitFor(w.server, 2, settled);
    expect((await waitFor(w.server, 1, settled)).state).toBe('merged');
    expect(two.state).toBe('merged');
    check(w);
    expect(w.repo.read('main', 'a.txt')).toBe('a, polished\n');
    expect(w.repo.read('main', 'b.txt')).toBe('b\n');
  });

  it('a failing PR never reaches the target; the PRs behind it still land', async () => {
    const w = await world({ test: 'test ! -f broken.txt' });
    w.repo.openPr(1, { 'one.txt': '1\n' }, { title: 'One' });
    w.repo.openPr(2, { 'broken.txt': 'oops\n' }, { title: 'Breaks the build' });
    w.repo.openPr(3, { 'three.txt': '3\n' }, { title: 'Three' });
    await w.cli(['mq', 'queue', 'create', ...FLAGS, '--concurrency', '3']);
    for (const n of [1, 2, 3]) await w.cli(['mq', 'submit', String(n), ...FLAGS]);
    const failed = await waitFor(w.server, 2, settled);
    expect(failed).toMatchObject({ state: 'failed', stateReason: 'TEST_RUN_REQUIRED_STATUS_FAILED' });
    expect((await waitFor(w.server, 3, settled)).state).toBe('merged');
    expect((await waitFor(w.server, 1, settled)).state).toBe('merged');
    expect(w.repo.files('main')).toEqual(expect.arrayContaining(['one.txt', 'three.txt']));
    expect(w.repo.files('main')).not.toContain('broken.txt');
    // What the failed run tested, as the CLI shows it.
    const details = JSON.parse((await w.cli(['mq', 'testing-details', failed.testRunId, ...FLAGS, '--json'])).stdout);
    expect(details).toMatchObject({ status: 'failed', statusChecks: [{ context: 'test', state: 'FAILURE' }] });
    expect(details.testBranch).toMatch(/^railyard-merge\/pr-(\d+-)*2\//);
    // Bare repositories have no web pages: the links the contract requires are the dashboard's pages.
    const dashboard = w.server.url.replace(/\/v1$/, '');
    expect(details.testedPullRequests.length).toBeGreaterThan(0);
    for (const t of details.testedPullRequests as { prNumber: number; prUrl: string }[])
      expect(t.prUrl).toBe(`${dashboard}/#/pr/github.com/acme/app/main/${t.prNumber}`);
    const report = `<testsuite name="s"><testcase name="t" file="test/t.test.ts"><failure message="x"/></testcase><testcase name="t" file="test/t.test.ts"/></testsuite>`;
    await ok(w.server, 'uploadTestResults', { repo: REPO, org_url_slug: w.server.org, branch: 'main', sha: 'a'.repeat(40), reports: [{ name: 'junit.xml', content: report }] });
    const [test] = (await ok(w.server, 'listUnhealthyTests', { repo: REPO, org_url_slug: w.server.org, status: 'FLAKY', page_query: { page_size: 10 } })).tests;
    expect(test).toMatchObject({
      repository: { html_url: `${dashboard}/#/flaky/github.com/acme/app` },
      html_url: `${dashboard}/#/flaky/github.com/acme/app/test/${test!.id}`,
    });
  });

  it('batching with bisection isolates the culprit and lands the rest', async () => {
    const w = await world({ test: 'test ! -f culprit.txt' });
    for (const n of [1, 2, 3, 4]) w.repo.openPr(n, n === 3 ? { 'culprit.txt': 'x\n' } : { [`f${n}.txt`]: `${n}\n` }, { title: `PR ${n}` });
    await w.cli(['mq', 'queue', 'create', ...FLAGS]);
    await w.cli(['mq', 'queue', 'update', ...FLAGS, '--batch', '--batching-min-size', '4', '--bisection-concurrency', '2']);
    for (const n of [1, 2, 3, 4]) await w.cli(['mq', 'submit', String(n), ...FLAGS]);
    for (const n of [1, 2, 4]) expect((await waitFor(w.server, n, settled)).state).toBe('merged');
    expect((await waitFor(w.server, 3, settled)).state).toBe('failed');
    expect(w.repo.files('main')).toEqual(expect.arrayContaining(['f1.txt', 'f2.txt', 'f4.txt']));
    expect(w.repo.files('main')).not.toContain('culprit.txt');
    // The first test was the whole batch on one test branch.
    const branches = w.repo.git(['for-each-ref', '--format=%(refname)', 'refs/heads/']).split('\n');
    expect(branches.filter((b) => b.includes('railyard-merge/'))).toEqual([]); // test branches are cleaned up after merges
  });

  it('a push to the target outside the queue restarts the run on the new head', async () => {
    const w = await world({ test: 'sleep 2' });
    w.repo.openPr(1, { 'one.txt': '1\n' }, { title: 'One' });
    await w.cli(['mq', 'queue', 'create', ...FLAGS]);
    await w.cli(['mq', 'submit', '1', ...FLAGS]);
    const testing = await waitFor(w.server, 1, (p) => p.state === 'testing' && Boolean(p.testRunId));
    w.repo.commitOn('main', { 'hotfix.txt': 'fix\n' }, 'Hotfix pushed by hand');
    const restarted = await waitFor(w.server, 1, (p) => p.testRunId !== testing.testRunId);
    expect(restarted.stateReason).toBe('MANUAL_PUSH_TO_TARGET_BRANCH');
    expect((await waitFor(w.server, 1, settled)).state).toBe('merged');
    expect(w.repo.log('main').map((c) => c.subject)).toEqual(['One (#1)', 'Hotfix pushed by hand', 'Initial commit']);
  });

  it('pushing to or closing a submitted PR takes it out of the queue', async () => {
    const w = await world({ test: 'sleep 2' });
    w.repo.openPr(1, { 'one.txt': '1\n' });
    w.repo.openPr(2, { 'two.txt': '2\n' });
    await w.cli(['mq', 'queue', 'create', ...FLAGS]);
    await w.cli(['mq', 'submit', '1', ...FLAGS]);
    await w.cli(['mq', 'submit', '2', ...FLAGS]);
    await waitFor(w.server, 1, (p) => p.state === 'testing');
    w.repo.pushPr(1, { 'one.txt': 'one\n' });
    w.repo.closePr(2);
    expect(await waitFor(w.server, 1, settled)).toMatchObject({ state: 'cancelled', stateReason: 'PR_PUSHED_TO' });
    expect(await waitFor(w.server, 2, settled)).toMatchObject({ state: 'cancelled', stateReason: 'PR_CLOSED' });
    expect(w.repo.files('main')).not.toContain('one.txt');
  });
});

describe('queue states and restarts', () => {
  it('pause holds, drain admits nothing new, a mode switch waits for an empty queue', async () => {
    const w = await world({ test: 'sleep 2' });
    for (const n of [1, 2, 3]) w.repo.openPr(n, { [`f${n}.txt`]: `${n}\n` });
    await w.cli(['mq', 'queue', 'create', ...FLAGS]);
    await w.cli(['mq', 'queue', 'pause', ...FLAGS]);
    await w.cli(['mq', 'submit', '1', ...FLAGS]);
    await new Promise((r) => setTimeout(r, 1000));
    expect((await waitFor(w.server, 1, () => true)).state).toBe('pending');
    expect(w.repo.files('main')).not.toContain('f1.txt');

    // A mode switch on a non-empty queue waits; draining finishes #1 but does not admit #2.
    await w.cli(['mq', 'queue', 'update', ...FLAGS, '--mode', 'parallel']);
    expect(JSON.parse((await w.cli(['mq', 'queue', 'get', ...FLAGS, '--json'])).stdout)).toMatchObject({ state: 'switching_modes', mode: 'single' });
    await w.cli(['mq', 'queue', 'drain', ...FLAGS]);
    await w.cli(['mq', 'submit', '2', ...FLAGS]);
    expect((await waitFor(w.server, 1, settled)).state).toBe('merged');
    expect((await waitFor(w.server, 2, () => true)).state).toBe('not_ready');
    const queue = JSON.parse((await w.cli(['mq', 'queue', 'get', ...FLAGS, '--json'])).stdout);
    expect(queue).toMatchObject({ state: 'draining', mode: 'parallel' });

    // Back to running: #2 (parallel mode now) needs impacted targets, then lands.
    await w.cli(['mq', 'queue', 'resume', ...FLAGS]);
    const two = await waitFor(w.server, 2, () => true);
    expect(two.state).toBe('not_ready');
    await w.cli(['mq', 'impacted-targets', '2', ...FLAGS, '--sha', two.prSha, '--target', 'web']);
    expect((await waitFor(w.server, 2, settled)).state).toBe('merged');
  });

  it('a server restarted mid-run loses nothing and merges nothing twice', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'railyard-e2e-'));
    cleanup(async () => rmSync(dataDir, { recursive: true, force: true }));
    const w = await world({ test: 'sleep 2' }, undefined, dataDir);
    for (const n of [1, 2]) w.repo.openPr(n, { [`f${n}.txt`]: `${n}\n` }, { title: `PR ${n}` });
    await w.cli(['mq', 'queue', 'create', ...FLAGS, '--concurrency', '2']);
    await w.cli(['mq', 'submit', '1', ...FLAGS]);
    await w.cli(['mq', 'submit', '2', ...FLAGS]);
    await waitFor(w.server, 2, (p) => p.state === 'testing');
    await w.server.close();
    const again = await startTestServer({ gitRoot: w.repo.root, dataDir, tokens: { [w.server.token]: w.server.org } });
    cleanup(() => again.close());
    expect((await waitFor(again, 1, settled)).state).toBe('merged');
    expect((await waitFor(again, 2, settled)).state).toBe('merged');
    expect(w.repo.log('main').map((c) => c.subject)).toEqual(['PR 2 (#2)', 'PR 1 (#1)', 'Initial commit']);
  });
});
