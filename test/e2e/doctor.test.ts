/**
 * `railyard mq doctor` on the git forge, end to end: real bare repositories, the real server over
 * HTTP and the real `railyard` binary. It names a required check that never reports on the queue's
 * test commits, a queue paused for long and PRs not ready for long, and exits 1 while it names any.
 */
import { describe, expect, it } from 'vitest';
import { createRepo, type FixtureRepo } from '../forge/fixture.js';
import { isolatedEnv, railyard } from '../support/cli.js';
import { cleanupsAfterEach } from '../support/hooks.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { ok } from '../server/helpers.js';

const LOCATION = { host: 'github.com', owner: 'acme', name: 'app' };
const Q = { repo: LOCATION, targetBranch: 'main' };
const FLAGS = ['--repo', 'github.com/acme/app'];
const HOUR = 3_600_000;

const cleanup = cleanupsAfterEach();

async function world(checks: Record<string, string>) {
  const repo: FixtureRepo = await createRepo({ location: LOCATION, checks, files: { 'app.txt': 'app\n' } });
  cleanup(() => repo.cleanup());
  // The server's clock, which a test moves forward to see what the doctor says a day later.
  const clock = { offset: 0 };
  const server: TestServer = await startTestServer({
    gitRoot: repo.root,
    now: () => Date.now() + clock.offset,
  });
  cleanup(() => server.close());
  const env = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: server.token });
  const cli = (args: string[]) => railyard(args, env);
  return { repo, server, cli, clock };
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

describe('railyard mq doctor (git forge)', () => {
  it('names a required check that never reported on a test commit, and only that one; exit 0 once healthy, 1 with notices', async () => {
    const w = await world({ test: 'true' });
    w.repo.openPr(1, { 'one.txt': '1\n' });
    w.repo.openPr(2, { 'two.txt': '2\n' });
    await ok(w.server, 'createQueue', Q);
    await ok(w.server, 'updateQueue', { ...Q, requiredStatuses: ['test'] });
    await ok(w.server, 'submitPullRequest', { ...Q, pr: { number: 1 } });
    expect(await settle(w.server, 1)).toMatchObject({ state: 'merged' });

    const healthy = await w.cli(['mq', 'doctor', ...FLAGS]);
    expect(healthy.code, healthy.stderr).toBe(0);
    expect(healthy.stdout).toBe('The acme/app main queue looks healthy: nothing to fix.\n');

    // "lint" is required, but nothing runs it on the queue's test commits.
    await ok(w.server, 'updateQueue', { ...Q, requiredStatuses: ['test', 'lint'] });
    await ok(w.server, 'submitPullRequest', { ...Q, pr: { number: 2 } });
    expect(await settle(w.server, 2)).toMatchObject({ state: 'failed' });

    const sick = await w.cli(['mq', 'doctor', ...FLAGS]);
    expect(sick.code, sick.stderr).toBe(1);
    const lines = sick.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('1 thing to fix in the acme/app main queue:');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(
      /^- Required check "lint" never reported on the queue's test commits \(2 test runs since \S+\), so every run waits for it up to testingTimeoutMinutes \(\d+ min\) and fails: make your CI run "lint" on the queue's test branches, or remove it from the queue's requiredStatuses \(railyard mq queue update --required-statuses\)\.$/,
    );

    const json = await w.cli(['mq', 'doctor', ...FLAGS, '--json']);
    expect(json.code).toBe(1);
    const answer = JSON.parse(json.stdout);
    expect(answer.notices.map((n: { kind: string; check?: string }) => [n.kind, n.check])).toEqual([
      ['required_check_never_reported', 'lint'],
    ]);
  }, 120_000);

  it('names a queue paused for more than an hour and a PR not ready for more than a day, saying why', async () => {
    const w = await world({ test: 'true' });
    w.repo.openPr(1, { 'one.txt': '1\n' }, { title: 'Waits for the queue' });
    w.repo.openPr(2, { 'app.txt': 'app, by two\n' }, { title: 'Conflicts with main' });
    w.repo.commitOn('main', { 'app.txt': 'app, moved on main\n' }, 'Moves app.txt');
    await ok(w.server, 'createQueue', Q);
    await ok(w.server, 'updateQueue', { ...Q, state: 'paused' });
    await ok(w.server, 'submitPullRequest', { ...Q, pr: { number: 1 } });
    await ok(w.server, 'submitPullRequest', { ...Q, pr: { number: 2 } });
    // #1 waits in the paused queue; #2 waits outside it, for its conflict to be fixed.
    expect(await ok(w.server, 'getSubmittedPullRequest', { ...Q, pr: { number: 1 } })).toMatchObject({
      state: 'pending',
    });
    expect(await ok(w.server, 'getSubmittedPullRequest', { ...Q, pr: { number: 2 } })).toMatchObject({
      state: 'not_ready',
    });

    // Paused for minutes, waiting for minutes: nothing to say yet.
    expect((await w.cli(['mq', 'doctor', ...FLAGS])).code).toBe(0);

    w.clock.offset = 26 * HOUR;
    const r = await w.cli(['mq', 'doctor', ...FLAGS, '--json']);
    expect(r.code, r.stderr).toBe(1);
    const notices = JSON.parse(r.stdout).notices as Array<{ kind: string; text: string; prNumber?: number }>;
    expect(notices.map((n) => [n.kind, n.prNumber])).toEqual([
      ['queue_paused', undefined],
      ['pr_not_ready', 2],
    ]);
    expect(notices[0].text).toMatch(
      /^The queue has been paused for 26 h \(since \S+\) and tests and merges nothing meanwhile \(2 PRs waiting\): resume it \(railyard mq queue resume\) once what it was paused for is fixed\.$/,
    );
    expect(notices[1].text).toMatch(
      /^PR #2 has not been ready for 26 h \(conflicts with main in app\.txt.*\): fix that on the forge, or take it out of the queue \(railyard mq cancel 2\)\.$/,
    );

    // Resumed: the queue is no longer named (PR #2 still conflicts).
    w.clock.offset = 0;
    await ok(w.server, 'updateQueue', { ...Q, state: 'running' });
    expect(await settle(w.server, 1)).toMatchObject({ state: 'merged' });
    w.clock.offset = 26 * HOUR;
    const after = JSON.parse((await w.cli(['mq', 'doctor', ...FLAGS, '--json'])).stdout);
    expect(after.notices.map((n: { kind: string; prNumber?: number }) => [n.kind, n.prNumber])).toEqual([
      ['pr_not_ready', 2],
    ]);
  }, 120_000);
});
