import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boardLine, boardRows } from '../../src/watch/board.js';
import type { GetQueueResponse, QueueListItem } from '../../src/contract/index.js';
import { BIN, isolatedEnv, railyard } from '../support/cli.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { ok, REPO as REPO_OBJ } from '../server/helpers.js';

// `mq watch`, `mq queue list` and `mq status --wait` through the real binary against a real
// server (sandbox forge: runs take 1 s; a run containing #3 fails).
let server: TestServer;
let env: Record<string, string>;
const REPO = ['--repo', 'github.com/acme/web'];
const Q = { repo: REPO_OBJ, targetBranch: 'main' };

beforeAll(async () => {
  server = await startTestServer({
    sandbox: { testSeconds: 1, failPrs: new Set([3]) },
    tokens: { 'cli-token': 'acme', 'other-token': 'globex' },
  });
  env = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: 'cli-token' });
  await ok(server, 'createQueue', { ...Q, concurrency: 1 });
});
afterAll(async () => {
  await server?.close();
  await rm(env.HOME, { recursive: true, force: true });
});

describe('railyard mq watch', () => {
  it('piped: one line per change in queue order, with position, run, time in queue and ETA; exit 0 once the PRs merged', async () => {
    // Submitted while paused, so the watch sees them wait; resumed once it printed them.
    await ok(server, 'updateQueue', { ...Q, state: 'paused' });
    for (const n of [1, 2]) await ok(server, 'submitPullRequest', { ...Q, pr: { number: n } });
    const child = spawn(
      process.execPath,
      [BIN, 'mq', 'watch', '1', '2', ...REPO, '--interval', '100ms', '--timeout', '30s'],
      { env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const result = { stdout: '', stderr: '', code: -1 };
    child.stdout.on('data', (d: Buffer) => (result.stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (result.stderr += d.toString()));
    const exited = new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? -1)));
    for (let i = 0; i < 300 && !result.stdout.includes('#2 pending'); i++)
      await new Promise((r) => setTimeout(r, 50));
    await ok(server, 'updateQueue', { ...Q, state: 'running' });
    result.code = await exited;
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trim().split('\n');
    for (const line of lines) expect(line).toMatch(/^\d\d:\d\d:\d\d /);
    // #1 is tested first (position 1), #2 waits behind it (position 2), then moves up.
    expect(lines.find((l) => l.includes('#1 testing'))).toMatch(
      /^\S+ 1\. #1 testing run [0-9a-f]{8} {2}\d+s in queue/,
    );
    expect(lines.find((l) => l.includes(' #1 pending'))).toMatch(
      / 1\. #1 pending \(API_REQUESTED\) {2}\d+s in queue/,
    );
    expect(lines.find((l) => l.includes(' #2 pending'))).toMatch(
      / 2\. #2 pending \(API_REQUESTED\) {2}\d+s in queue/,
    );
    // #2's run starts once #1's has passed, and #1 may still be landing then (position 2 for a
    // moment: seen at load 15); once #1 merged, #2 is first.
    expect(lines.find((l) => l.includes('#2 testing'))).toMatch(/ [12]\. #2 testing run /);
    const oneMerged = lines.findIndex((l) => / #1 merged/.test(l));
    const twoAfter = lines.slice(oneMerged + 1).filter((l) => l.includes(' #2 '));
    expect(oneMerged, result.stdout).toBeGreaterThan(-1);
    for (const line of twoAfter.filter((l) => !/#2 merged/.test(l))) expect(line).toMatch(/ 1\. #2 /);
    expect(lines.some((l) => / 1\. #2 /.test(l)), result.stdout).toBe(true);
    // Once a run finished, waiting and testing PRs get an ETA range.
    expect(lines.some((l) => /#2 .*ETA ~\d+s/.test(l))).toBe(true);
    expect(lines.at(-1)).toMatch(/#2 merged \(MERGE_GRAPH_MERGE\)$/);
    expect(lines.filter((l) => / #\d merged/.test(l))).toHaveLength(2);
    // No change, no line: each state/position of a PR is printed once.
    expect(new Set(lines.map((l) => l.slice(9))).size).toBe(lines.length);
  });

  it('exits 1 when a watched PR fails (as mq status --wait), and --json gives the final states', async () => {
    await ok(server, 'submitPullRequest', { ...Q, pr: { number: 3 } });
    const result = await railyard(['mq', 'watch', '3', ...REPO, '--interval', '100ms', '--json'], env);
    expect(result.code).toBe(1);
    const out = JSON.parse(result.stdout);
    expect(out.pullRequests).toMatchObject([
      { prNumber: 3, state: 'failed', stateReason: 'TEST_RUN_REQUIRED_STATUS_FAILED' },
    ]);
  });

  it('a failed PR: mq status shows the detail and the next commands; mq restart says to resubmit', async () => {
    // A queue of its own: the other tests count the runs of main.
    const D = { ...Q, targetBranch: 'develop' };
    const DEVELOP = [...REPO, '--branch', 'develop'];
    await ok(server, 'createQueue', D);
    await ok(server, 'submitPullRequest', { ...D, pr: { number: 3 } });
    await railyard(['mq', 'watch', '3', ...DEVELOP, '--interval', '100ms', '--json'], env);
    const status = await railyard(['mq', 'status', '3', ...DEVELOP], env);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/^reason +TEST_RUN_REQUIRED_STATUS_FAILED$/m);
    expect(status.stdout).toMatch(/^detail +\S/m);
    expect(status.stdout).toContain('railyard mq logs 3 --repo github.com/acme/web --branch develop (what failed)');
    const restart = await railyard(['mq', 'restart', '3', ...DEVELOP], env);
    expect(restart.code).toBe(1);
    expect(restart.stderr).toContain(
      'Error: #3 is failed (TEST_RUN_REQUIRED_STATUS_FAILED): restart re-tests a PR in the queue; resubmit it with `railyard mq submit 3 --repo github.com/acme/web --branch develop`',
    );
    await ok(server, 'deleteQueue', D);
  });

  it('gives up at the timeout with exit 1 and says which PRs are still in the queue', async () => {
    await ok(server, 'updateQueue', { ...Q, state: 'paused' });
    await ok(server, 'submitPullRequest', { ...Q, pr: { number: 4 } });
    const result = await railyard(
      ['mq', 'watch', '4', ...REPO, '--interval', '100ms', '--timeout', '1500ms', '--heartbeat', '400ms'],
      env,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('#4 still in the queue at the timeout');
    // Piped and nothing changing: a heartbeat line says what it still waits for, so a CI log never goes silent.
    const lines = result.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^\d\d:\d\d:\d\d +1\. #4 pending/);
    expect(lines.filter((l) => /^\d\d:\d\d:\d\d still +1\. #4 pending .* in queue/.test(l)).length).toBeGreaterThanOrEqual(1);
    await ok(server, 'cancelPullRequest', { ...Q, pr: { number: 4 } });
    await ok(server, 'updateQueue', { ...Q, state: 'running' });
  });
});

describe('railyard mq status --wait', () => {
  it('shows the position, the time in queue and what holds the PR while it waits', async () => {
    await ok(server, 'updateQueue', { ...Q, state: 'paused' });
    await ok(server, 'submitPullRequest', { ...Q, pr: { number: 5 } });
    await ok(server, 'submitPullRequest', { ...Q, pr: { number: 6 } });
    const result = await railyard(
      ['mq', 'status', '6', ...REPO, '--wait', '--interval', '100ms', '--timeout', '1s'],
      env,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^#6: pending \(API_REQUESTED\)\n#6 is pending, position 2 of 2, \d+s in queue, waiting for the queue, which is paused\n/,
    );
    for (const n of [5, 6]) await ok(server, 'cancelPullRequest', { ...Q, pr: { number: n } });
    await ok(server, 'updateQueue', { ...Q, state: 'running' });
    expect(result.stderr).not.toMatch(/s left/);
  });
});

describe('railyard mq queue list', () => {
  it("lists the organisation's queues with depth and recent run durations; another organisation sees none of them", async () => {
    await ok(server, 'createQueue', { repo: { ...REPO_OBJ, name: 'api' }, targetBranch: 'release' });
    const all = JSON.parse((await railyard(['mq', 'queue', 'list', '--json'], env)).stdout);
    expect(
      all.queues.map((q: { repo: { name: string }; targetBranch: string }) => `${q.repo.name}:${q.targetBranch}`),
    ).toEqual(['api:release', 'web:main']);
    const web = all.queues[1];
    expect(web).toMatchObject({
      state: 'running',
      mode: 'single',
      concurrency: 1,
      depth: 0,
      notReady: 0,
      testing: 0,
    });
    expect(web.recentTestSeconds.samples).toBe(3); // the runs of #1, #2 and #3
    expect(web.recentTestSeconds.p25).toBeGreaterThanOrEqual(0.9);
    expect(web.recentTestSeconds.p90).toBeLessThan(30);
    const only = JSON.parse(
      (await railyard(['mq', 'queue', 'list', '--repo', 'acme/api', '--json'], env)).stdout,
    );
    expect(only.queues).toHaveLength(1);
    const table = await railyard(['mq', 'queue', 'list'], env);
    expect(table.stdout).toMatch(/^github\.com\/acme\/web\s+main\s+running/m);
    const other = JSON.parse(
      (await railyard(['mq', 'queue', 'list', '--json'], { ...env, RAILYARD_TOKEN: 'other-token' })).stdout,
    );
    expect(other.queues).toEqual([]);
  });
});

describe('ETA of the board', () => {
  const item = (n: number, state: QueueListItem['state'], changedAgoS: number): QueueListItem => ({
    prNumber: n,
    state,
    stateChangedAt: new Date(NOW - changedAgoS * 1000).toISOString(),
    enqueuedAt: new Date(NOW - 600_000).toISOString(),
    priorityValue: 100,
    priorityName: 'medium',
    skipTheLine: false,
    prTitle: '',
    prSha: '',
    prBaseBranch: 'main',
    prAuthor: '',
    noBatch: false,
  });
  const NOW = Date.parse('2026-11-23T12:00:00Z');
  const queue = (prs: QueueListItem[]) =>
    ({ concurrency: 2, enqueuedPullRequests: prs }) as unknown as GetQueueResponse;
  const summary = { recentTestSeconds: { samples: 10, p25: 100, p50: 120, p90: 200 } } as never;

  it('counts down a testing PR; waiting PRs take the first slot that frees up and land after the PRs ahead', () => {
    const rows = boardRows(
      queue([item(1, 'testing', 40), item(2, 'pending', 5), item(3, 'pending', 5), item(4, 'pending', 5)]),
      summary,
      NOW,
    );
    expect(rows.map((r) => r.position)).toEqual([1, 2, 3, 4]);
    // What is left of #1's run: 100 s (p25, this summary has no p10) to 200 s (p90), 40 s in.
    expect(rows[0].eta).toEqual({ lowMs: 60_000, highMs: 160_000 });
    // Concurrency 2: #2 starts at once in the free slot; #3 when #1's run ends; #4 when #2's does.
    expect(rows[1].eta).toEqual({ lowMs: 100_000, highMs: 200_000 });
    expect(rows[2].eta).toEqual({ lowMs: 160_000, highMs: 360_000 });
    expect(rows[3].eta).toEqual({ lowMs: 200_000, highMs: 400_000 });
    expect(rows[0].inQueueMs).toBe(600_000);
    expect(boardRows(queue([item(1, 'pending', 1)]), undefined, NOW)[0].eta).toBeNull();
  });

  it('plays each lane on its own, allows for the failures expected ahead, and gives no ETA to a PR whose run failed', () => {
    const inLane = (pr: QueueListItem, lane: number) => ({ ...pr, lane });
    const parallel = (prs: QueueListItem[]) =>
      ({ concurrency: 1, mode: 'parallel', enqueuedPullRequests: prs }) as unknown as GetQueueResponse;
    const withRate = { failureRateLastDay: 0.5, recentTestSeconds: { samples: 10, p10: 80, p25: 100, p50: 120, p90: 200 } } as never;
    const rows = boardRows(
      parallel([inLane(item(1, 'testing', 0), 1), inLane(item(2, 'pending', 0), 2), inLane(item(3, 'pending', 0), 1)]),
      withRate,
      NOW,
    );
    expect(rows[0].eta).toEqual({ lowMs: 80_000, highMs: 200_000 });
    // Lane 2 has its own slot: #2 starts at once, whatever lane 1 does.
    expect(rows[1].eta).toEqual({ lowMs: 80_000, highMs: 200_000 });
    // #3 waits for #1's slot, and #1 may fail (rate 0.5): half a long run more at the high end.
    expect(rows[2].eta).toEqual({ lowMs: 160_000, highMs: 500_000 });
    expect(boardLine(rows[2])).toMatch(/^ {2}3\. lane 1 {2}#3 pending {2}10m 00s in queue {2}ETA ~2m 40s–8m 20s/);

    const failing = boardRows(
      parallel([inLane(item(1, 'pending_failure', 0), 1), inLane(item(2, 'testing', 0), 1)]),
      { recentTestSeconds: { samples: 10, p10: 80, p25: 100, p50: 120, p90: 200 } } as never,
      NOW,
    );
    expect(failing[0].eta).toBeNull();
    expect(failing[1].eta).toEqual({ lowMs: 80_000, highMs: 400_000 }); // #1 will fail or be retried: one long run more
  });
});
