import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedEnv, railyard } from '../support/cli.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { SQLITE_FILE } from '../../src/store/index.js';
import { ok, REPO as REPO_OBJ } from '../server/helpers.js';

// PR history through the real binary against a real server (sandbox forge: runs take 1 s, PR #2 fails).
let dataDir: string;
let server: TestServer;
let env: Record<string, string>;
const REPO = ['--repo', 'github.com/acme/web'];

async function start(): Promise<TestServer> {
  return startTestServer({
    dataDir,
    sandbox: { testSeconds: 1, failPrs: new Set([2]) },
    tokens: { 'cli-token': 'acme', 'other-token': 'globex' },
  });
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'railyard-history-'));
  server = await start();
  env = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: 'cli-token' });
});
afterAll(async () => {
  await server?.close();
  await rm(dataDir, { recursive: true, force: true });
  await rm(env.HOME, { recursive: true, force: true });
});

async function json(args: string[], extraEnv: Record<string, string> = {}) {
  const result = await railyard([...args, '--json'], { ...env, ...extraEnv });
  expect(result.code, `${args.join(' ')} → ${result.stderr}`).toBe(0);
  return JSON.parse(result.stdout);
}

describe('railyard mq history', () => {
  it('lists every state change with its time, reason and test run, over every submission, and keeps them across a restart', async () => {
    await json(['mq', 'queue', 'create', ...REPO]);
    await json(['mq', 'submit', '1', ...REPO, '--wait', '--interval', '200ms', '--timeout', '20s']);
    const failed = await railyard(
      ['mq', 'submit', '2', ...REPO, '--wait', '--interval', '200ms', '--timeout', '20s'],
      env,
    );
    expect(failed.code, failed.stderr).toBe(1);
    await json(['mq', 'queue', 'pause', ...REPO]);
    await json(['mq', 'submit', '3', ...REPO]);
    await json(['mq', 'cancel', '3', ...REPO]);
    await json(['mq', 'submit', '3', ...REPO]);

    const one = await json(['mq', 'history', '1', ...REPO]);
    expect(one.prNumber).toBe(1);
    expect(
      one.transitions.map((t: { previousState?: string; state: string }) => [t.previousState, t.state]),
    ).toEqual([
      [undefined, 'not_ready'],
      ['not_ready', 'pending'],
      ['pending', 'testing'],
      ['testing', 'tests_passed'],
      ['tests_passed', 'merged'],
    ]);
    expect(one.transitions[0].reason).toBe('API_REQUESTED');
    expect(one.transitions[4].reason).toBe('MERGE_GRAPH_MERGE');
    const runId = one.transitions[2].testRunId;
    expect(runId).toEqual(expect.any(String));
    expect(one.transitions.slice(2).map((t: { testRunId?: string }) => t.testRunId)).toEqual([
      runId,
      runId,
      runId,
    ]);
    expect(one.transitions[0].testRunId).toBeUndefined();
    const times = one.transitions.map((t: { at: string }) => Date.parse(t.at));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    // The test took ~1 s: the gap between testing and tests_passed says so.
    expect(times[3] - times[2]).toBeGreaterThanOrEqual(900);

    const two = await json(['mq', 'history', '2', ...REPO]);
    expect(two.transitions.map((t: { state: string }) => t.state).slice(-3)).toEqual([
      'testing',
      'pending_failure',
      'failed',
    ]);
    expect(two.transitions.at(-1)).toMatchObject({
      state: 'failed',
      reason: 'TEST_RUN_REQUIRED_STATUS_FAILED',
      testRunId: expect.any(String),
    });

    const three = await json(['mq', 'history', '3', ...REPO]);
    const entries = [...new Set(three.transitions.map((t: { queueEntryId: string }) => t.queueEntryId))];
    expect(entries).toHaveLength(2);
    expect(
      three.transitions.map((t: { state: string; reason?: string }) => `${t.state}:${t.reason ?? ''}`),
    ).toEqual([
      'not_ready:API_REQUESTED',
      'pending:API_REQUESTED',
      'cancelled:USER_REQUESTED',
      'not_ready:API_REQUESTED',
      'pending:API_REQUESTED',
    ]);

    // For people: one row per change, the submission numbered; CSV for scripts.
    const table = await railyard(['mq', 'history', '3', ...REPO], env);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^Time\s+Submission\s+From\s+State\s+Reason/);
    // Times for people are relative; no borders or row separators.
    expect(table.stdout).toMatch(/^\d+ seconds? ago\s+1\s+pending\s+cancelled\s+USER_REQUESTED/m);
    expect(table.stdout).toMatch(/^\d+ seconds? ago\s+2\s+not_ready\s+API_REQUESTED/m);
    expect(table.stdout).not.toMatch(/[│─┌]/);
    const csv = await railyard(['mq', 'history', '1', ...REPO, '--format', 'csv'], env);
    const rows = parse(csv.stdout, { columns: true }) as Record<string, string>[];
    expect(rows.map((r) => r.State)).toEqual(['not_ready', 'pending', 'testing', 'tests_passed', 'merged']);
    // Times in CSV: ISO 8601 UTC.
    for (const r of rows) expect(r.Time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(rows[4]['Test run']).toBe(runId);

    // Kept in the database: the same history after a restart.
    await server.close();
    server = await start();
    const env2 = { ...env, RAILYARD_API_URL: server.url };
    expect(await json(['mq', 'history', '1', ...REPO], env2)).toEqual(one);
    env = env2;
  });

  it('404 for a PR never submitted and for another organisation (existence is not revealed)', async () => {
    const never = await railyard(['mq', 'history', '99', ...REPO], env);
    expect(never.code).toBe(1);
    expect(never.stderr).toMatch(/404.*#99 was never submitted/);
    const other = await railyard(['mq', 'history', '1', ...REPO], { ...env, RAILYARD_TOKEN: 'other-token' });
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/404.*no merge queue/);
    const bad = await railyard(['mq', 'history', 'abc', ...REPO], env);
    expect(bad.code).toBe(2);
  });
});

describe('railyard mq list --since / --until', () => {
  it('take a duration back from now as well as an ISO time', async () => {
    const merged = await json(['mq', 'list', ...REPO, '--state', 'merged', '--since', '1h']);
    expect(merged.pullRequests.map((p: { prNumber: number }) => p.prNumber)).toEqual([1]);
    expect((await json(['mq', 'list', ...REPO, '--state', 'merged', '--until', '1h'])).pullRequests).toEqual([]);
    const iso = await json(['mq', 'list', ...REPO, '--state', 'merged', '--since', new Date(Date.now() - 3_600_000).toISOString()]);
    expect(iso).toEqual(merged);
    const bad = await railyard(['mq', 'list', ...REPO, '--since', 'yesterday'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--since: expected an ISO 8601 date-time or a duration back from now (24h, 7d), got "yesterday"');
  });
});

describe('migration 007_pr_history', () => {
  it('starts the history of the PRs a database already held with the state they are in', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'railyard-history-migrate-'));
    try {
      const a = await startTestServer({ dataDir: dir });
      await ok(a, 'createQueue', { repo: REPO_OBJ, targetBranch: 'main', concurrency: 1 });
      await ok(a, 'updateQueue', { repo: REPO_OBJ, targetBranch: 'main', state: 'paused' });
      await ok(a, 'submitPullRequest', { repo: REPO_OBJ, targetBranch: 'main', pr: { number: 5 } });
      const pr = await ok(a, 'getSubmittedPullRequest', {
        repo: REPO_OBJ,
        targetBranch: 'main',
        pr: { number: 5 },
      });
      await a.close();
      // The database as a server before 007 left it: no history table and 007 not applied. The migrations after it
      // stay applied (none touches pr_transitions); the store runs a missing one out of order.
      const sqlite = new Database(join(dir, SQLITE_FILE));
      sqlite.exec(`DROP TABLE pr_transitions; DELETE FROM kysely_migration WHERE name = '007_pr_history'`);
      sqlite.close();

      const b = await startTestServer({ dataDir: dir });
      try {
        const history = await ok(b, 'getPullRequestHistory', {
          repo: REPO_OBJ,
          targetBranch: 'main',
          pr: { number: 5 },
        });
        expect(history.transitions).toEqual([
          { queueEntryId: pr.id, state: pr.state, at: pr.stateChangedAt },
        ]);
        // New changes continue it.
        await ok(b, 'cancelPullRequest', { repo: REPO_OBJ, targetBranch: 'main', pr: { number: 5 } });
        const after = await ok(b, 'getPullRequestHistory', {
          repo: REPO_OBJ,
          targetBranch: 'main',
          pr: { number: 5 },
        });
        expect(after.transitions.map((t: { state: string }) => t.state)).toEqual([pr.state, 'cancelled']);
      } finally {
        await b.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
