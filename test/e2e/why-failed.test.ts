/**
 * Why a run failed, end to end: real bare repositories, the real server (git forge + runner) and
 * the real `railyard` binary. The failure reasons carry their detail and the check output is served.
 */
import { describe, expect, it } from 'vitest';
import { createRepo, type FixtureRepo } from '../forge/fixture.js';
import { isolatedEnv, railyard } from '../support/cli.js';
import { cleanupsAfterEach } from '../support/hooks.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { call, ok } from '../server/helpers.js';

const LOCATION = { host: 'github.com', owner: 'acme', name: 'app' };
const Q = { repo: LOCATION, targetBranch: 'main' };
const FLAGS = ['--repo', 'github.com/acme/app'];

const cleanup = cleanupsAfterEach();

async function world(checks: Record<string, string>, files: Record<string, string>) {
  const repo: FixtureRepo = await createRepo({ location: LOCATION, checks, files });
  cleanup(() => repo.cleanup());
  const server: TestServer = await startTestServer({
    gitRoot: repo.root,
    tokens: { 'tok-a': 'acme', 'tok-b': 'globex' },
  });
  cleanup(() => server.close());
  const env = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: server.token });
  const cli = (args: string[]) => railyard(args, env);
  return { repo, server, cli };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function settle(server: TestServer, prNumber: number): Promise<any> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const pr = await ok(server, 'getSubmittedPullRequest', { ...Q, pr: { number: prNumber } });
    if (['merged', 'failed', 'cancelled'].includes(pr.state)) return pr;
    if (Date.now() > deadline) throw new Error(`#${prNumber} is still ${pr.state}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('why a run failed', () => {
  it('serves the output of the failed check, links it from the check run, and names the PR and files of a merge conflict', async () => {
    const w = await world(
      {
        build: 'echo building',
        test: 'sleep 1; grep -q fine status.txt || { echo "status.txt says $(cat status.txt)" >&2; exit 3; }',
      },
      { 'status.txt': 'fine\n', 'app.txt': 'app\n' },
    );
    w.repo.openPr(1, { 'status.txt': 'bad\n' }, { title: 'Breaks the tests' });
    w.repo.openPr(2, { 'app.txt': 'app, by two\n' }, { title: 'Two edits app.txt' });
    w.repo.openPr(3, { 'app.txt': 'app, by three\n' }, { title: 'Three edits app.txt too' });
    await ok(w.server, 'createQueue', { ...Q, concurrency: 3 });
    await ok(w.server, 'submitPullRequest', { ...Q, pr: { number: 1 } });
    expect((await settle(w.server, 1)).state).toBe('failed');
    // #3 is tested on top of #2 (concurrency 3): its changes do not apply there.
    await ok(w.server, 'submitPullRequest', { ...Q, pr: { number: 2 } });
    await ok(w.server, 'submitPullRequest', { ...Q, pr: { number: 3 } });
    const three = await settle(w.server, 3);
    expect(three).toMatchObject({ state: 'failed', stateReason: 'START_TEST_RUN_MERGE_CONFLICT' });
    expect((await settle(w.server, 2)).state).toBe('merged');

    // railyard mq logs: the reason, what it means, and the output of the failed check only.
    const logs = await w.cli(['mq', 'logs', '1', ...FLAGS]);
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toMatch(
      /^#1 failed: TEST_RUN_REQUIRED_STATUS_FAILED\n {2}test failed \(exit 3\)\n {2}test run \S+ on railyard-merge\/pr-1\//,
    );
    expect(logs.stdout).toContain('==> test (failure) <==\nstatus.txt says bad\n');
    expect(logs.stdout).toContain('[railyard] test: failure (exit code 3)');
    expect(logs.stdout).not.toContain('==> build');
    const all = JSON.parse((await w.cli(['mq', 'logs', '1', ...FLAGS, '--all', '--json'])).stdout);
    expect(all.checks.map((c: { name: string; conclusion: string }) => [c.name, c.conclusion])).toEqual([
      ['build', 'SUCCESS'],
      ['test', 'FAILURE'],
    ]);
    expect(all.checks[0].log).toContain('building\n');

    // The check run's url is the endpoint itself: fetching it with the token gives the same text.
    const pr1 = await ok(w.server, 'getSubmittedPullRequest', { ...Q, pr: { number: 1 } });
    const details = await ok(w.server, 'getMergeQueueTestingDetails', { ...Q, testRunId: pr1.testRunId });
    const testRun = details.checkSuites[0].checkRuns.find((r: { name: string }) => r.name === 'test');
    expect(testRun.url).toMatch(new RegExp(`^${w.server.url}/getCheckRunLog\\?`));
    const res = await fetch(testRun.url, { headers: { 'x-api-token': w.server.token } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await res.text()).toBe(all.checks[1].log);
    // Org-scoped: another organisation's token gets a 404, no token a 401.
    expect((await fetch(testRun.url, { headers: { 'x-api-token': 'tok-b' } })).status).toBe(404);
    expect((await fetch(testRun.url)).status).toBe(401);
    const query = Object.fromEntries(new URL(testRun.url).searchParams);
    const unknownCheck = await call(w.server, 'getCheckRunLog', { ...query, check: 'lint' });
    expect(unknownCheck.status).toBe(404);
    expect(unknownCheck.text).toBe(`check: run ${pr1.testRunId} has no check "lint" (checks: build, test)`);

    // The merge conflict names the PR it conflicts with and the file.
    const conflict = await w.cli(['mq', 'logs', '3', ...FLAGS]);
    expect(conflict.code, conflict.stderr).toBe(0);
    expect(conflict.stdout).toContain(
      '#3 failed: START_TEST_RUN_MERGE_CONFLICT\n  PR #3 conflicts with PR #2 (ahead of it in the queue) in app.txt\n',
    );
    const history = await ok(w.server, 'getPullRequestHistory', { ...Q, pr: { number: 3 } });
    expect(history.transitions.at(-1)).toMatchObject({
      state: 'failed',
      detail: 'PR #3 conflicts with PR #2 (ahead of it in the queue) in app.txt',
    });
  });

  it('says what is wrong in railyard.json and which required status has no check', async () => {
    const w = await world({ test: 'true' }, { 'app.txt': 'app\n' });
    w.repo.openPr(1, { 'one.txt': '1\n' });
    w.repo.openPr(2, { 'two.txt': '2\n' });
    await ok(w.server, 'createQueue', Q);
    await ok(w.server, 'updateQueue', { ...Q, requiredStatuses: ['test', 'lint'] });
    await ok(w.server, 'submitPullRequest', { ...Q, pr: { number: 1 } });
    expect(await settle(w.server, 1)).toMatchObject({
      state: 'failed',
      stateReason: 'START_TEST_RUN_CONFIG_MISSING_REQUIRED_STATUSES',
    });
    const missing = await w.cli(['mq', 'logs', '1', ...FLAGS]);
    expect(missing.stdout).toContain(
      '  requiredStatuses: "lint" has no check in railyard.json (checks: test)\n',
    );

    await ok(w.server, 'updateQueue', { ...Q, deleteRequiredStatuses: true });
    w.repo.commitOn('main', { 'railyard.json': '{ "checks": { "test": 42 } }\n' }, 'Break the config');
    await ok(w.server, 'submitPullRequest', { ...Q, pr: { number: 2 } });
    expect(await settle(w.server, 2)).toMatchObject({
      state: 'failed',
      stateReason: 'START_TEST_RUN_CONFIG_PARSING_FAILURE',
    });
    const parsing = await w.cli(['mq', 'logs', '2', ...FLAGS, '--json']);
    expect(JSON.parse(parsing.stdout)).toMatchObject({
      state: 'failed',
      reason: 'START_TEST_RUN_CONFIG_PARSING_FAILURE',
      detail: 'railyard.json (main): checks.test: must be a non-empty shell command string or { "run": …, "reports": […] }',
    });
  });

  it('serves the last 1 MiB of a long output and says how much it left out', async () => {
    const w = await world(
      { test: 'head -c 1500000 /dev/zero | tr "\\0" x; echo; echo THE-END; exit 1' },
      { 'app.txt': 'app\n' },
    );
    w.repo.openPr(1, { 'one.txt': '1\n' });
    await ok(w.server, 'createQueue', Q);
    await ok(w.server, 'submitPullRequest', { ...Q, pr: { number: 1 } });
    expect((await settle(w.server, 1)).state).toBe('failed');
    const out = JSON.parse((await w.cli(['mq', 'logs', '1', ...FLAGS, '--json'])).stdout);
    const log: string = out.checks[0].log;
    expect(log).toMatch(/^\[railyard\] the first \d+ bytes are left out; the last 1048576 follow\n/);
    const body = log.slice(log.indexOf('\n') + 1);
    expect(Buffer.byteLength(body)).toBe(1024 * 1024);
    expect(body).toMatch(/\nTHE-END\n\n\[railyard\] test: failure \(exit code 1\) after \d+ ms\n$/);
  });

  it('a PR that conflicts with main says with what and what to do: in the API, mq status, mq logs, mq watch', async () => {
    const w = await world({ test: 'true' }, { 'app.txt': 'app\n', 'lib.txt': 'lib\n' });
    w.repo.openPr(1, { 'app.txt': 'app, by one\n' }, { title: 'One edits app.txt' });
    w.repo.openPr(2, { 'app.txt': 'app, by two\n' }, { title: 'Two edits app.txt' });
    w.repo.openPr(3, { 'lib.txt': 'lib, by three\n' }, { title: 'Three edits lib.txt' });
    await ok(w.server, 'createQueue', Q);
    await ok(w.server, 'submitPullRequest', { ...Q, pr: { number: 1 } });
    expect((await settle(w.server, 1)).state).toBe('merged');
    const landed = w.repo.headOf('refs/heads/main')!;
    const sentence = `conflicts with main in app.txt (changed by ${landed.slice(0, 7)} 'One edits app.txt (#1)' / #1): rebase on main`;

    // #2 no longer merges onto main (#1 landed): it waits, and every view says why.
    await ok(w.server, 'submitPullRequest', { ...Q, pr: { number: 2 } });
    const two = await ok(w.server, 'getSubmittedPullRequest', { ...Q, pr: { number: 2 } });
    expect(two).toMatchObject({ state: 'not_ready' });
    expect(two.readiness.conflict).toEqual({
      message: sentence,
      files: ['app.txt'],
      commit: { sha: landed, subject: 'One edits app.txt (#1)', prNumber: 1 },
    });
    const status = await w.cli(['mq', 'status', '2', ...FLAGS]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(new RegExp(`^conflict\\s+${sentence.replace(/[()/.']/g, '\\$&')}$`, 'm'));
    expect(status.stdout).not.toContain('the forge to call it mergeable');
    const logs = await w.cli(['mq', 'logs', '2', ...FLAGS]);
    expect(logs.stdout).toContain(`\n  not tested: it ${sentence}\n`);
    expect(logs.stdout).not.toContain('(not tested yet)');
    const watch = await w.cli(['mq', 'watch', '2', ...FLAGS, '--timeout', '1s', '--interval', '200ms']);
    // Only its author can unblock it: watch stops at once with exit 3 and says what (docs/cli.md).
    expect(watch.code, watch.stderr).toBe(3);
    expect(watch.stdout).toMatch(
      new RegExp(`^\\d\\d:\\d\\d:\\d\\d #2 blocked until its author pushes: ${sentence.replace(/[()/.']/g, '\\$&')}$`, 'm'),
    );

    // A push to main outside the queue that conflicts with a waiting PR: the poll finds it, no PR named.
    await ok(w.server, 'updateQueue', { ...Q, state: 'paused' });
    await ok(w.server, 'submitPullRequest', { ...Q, pr: { number: 3 } });
    const pushed = w.repo.commitOn('main', { 'lib.txt': 'lib, on main\n' }, 'Reword lib');
    const deadline = Date.now() + 20_000;
    let three = await ok(w.server, 'getSubmittedPullRequest', { ...Q, pr: { number: 3 } });
    while (!three.readiness.conflict && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      three = await ok(w.server, 'getSubmittedPullRequest', { ...Q, pr: { number: 3 } });
    }
    expect(three.state).toBe('not_ready');
    expect(three.readiness.conflict.message).toBe(
      `conflicts with main in lib.txt (changed by ${pushed.slice(0, 7)} 'Reword lib'): rebase on main`,
    );
  });
});
