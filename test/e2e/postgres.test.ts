/**
 * Failover: two real `railyard serve` processes on one PostgreSQL database and one git root. The
 * replica driving the queue is killed with SIGKILL in the middle of a stream of submits; the other
 * takes the queue over. Every acknowledged submit must be there, the queue must settle, no PR may
 * land twice, and the target's history must be exactly the commits that were tested.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRepo } from '../forge/fixture.js';
import { call, ok } from '../server/helpers.js';
import { cleanupsAfterEach, postgresForFile } from '../support/hooks.js';
import { skipWithoutPostgres } from '../support/postgres.js';
import type { TestServer } from '../support/server.js';
import { withChecksDir } from '../support/serve.js';

const ROOT = new URL('../..', import.meta.url).pathname;
const hasBuild = existsSync(join(ROOT, 'build/commands/serve.js'));
const noPostgres = skipWithoutPostgres();
const LOCATION = { host: 'github.com', owner: 'acme', name: 'app' };
const Q = { repo: LOCATION, targetBranch: 'main' };
const TOKEN = 'failover-token';
const PRS = 10;

// Its own cluster: the failover figures it prints and bounds are not shared with other files' load.
const cluster = postgresForFile(noPostgres, { own: true });
const cleanup = cleanupsAfterEach();

interface Replica {
  child: ChildProcess;
  server: TestServer;
  exited: Promise<number | null>;
}

async function replica(gitRoot: string, databaseUrl: string): Promise<Replica> {
  const dataDir = mkdtempSync(join(tmpdir(), 'railyard-replica-'));
  cleanup(() => rmSync(dataDir, { recursive: true, force: true }));
  const args = [
    'serve',
    '--port',
    '0',
    ...withChecksDir(['--data-dir', dataDir, '--git-root', gitRoot]),
    '--token',
    TOKEN,
    '--lease-seconds',
    '2',
  ];
  const child = spawn(process.execPath, [join(ROOT, 'bin/run.js'), ...args], {
    cwd: ROOT,
    env: { ...process.env, RAILYARD_DATABASE_URL: databaseUrl },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  cleanup(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+\/v1)/.exec(out);
      if (m) resolve(m[1]);
    });
    void exited.then((code) => reject(new Error(`serve exited ${code}: ${out} ${err}`)));
  });
  return { child, exited, server: { url, token: TOKEN, org: 'local', dataDir, close: async () => {} } };
}

async function settle(
  server: TestServer,
  prs: number[],
  timeoutMs: number,
): Promise<Map<number, { state: string; testRunId?: string }>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answers = await Promise.all(
      prs.map((n) => ok(server, 'getSubmittedPullRequest', { ...Q, pr: { number: n } })),
    );
    if (answers.every((a) => ['merged', 'failed', 'cancelled'].includes(a.state)))
      return new Map(prs.map((n, i) => [n, answers[i]]));
    if (Date.now() > deadline)
      throw new Error(`not settled: ${answers.map((a, i) => `#${prs[i]} ${a.state}`).join(', ')}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe.skipIf(noPostgres || !hasBuild)('failover between replicas', () => {
  it('loses no acknowledged write and lands nothing twice when the driving replica is killed', async () => {
    const repo = await createRepo({
      location: LOCATION,
      checks: { test: 'sleep 0.2' },
      files: { 'README.md': 'app\n' },
    });
    cleanup(() => repo.cleanup());
    for (let n = 1; n <= PRS; n++)
      repo.openPr(n, { [`file-${n}.txt`]: `change ${n}\n` }, { title: `Change ${n}` });
    const databaseUrl = await cluster().createDatabase();

    // The first replica creates the queue and drives it (it holds the lease before the second starts).
    const a = await replica(repo.root, databaseUrl);
    await ok(a.server, 'createQueue', { ...Q, concurrency: 3 });
    await new Promise((r) => setTimeout(r, 700));
    const b = await replica(repo.root, databaseUrl);

    const acknowledged = new Set<number>();
    const killAfter = 2 + Math.floor(Math.random() * (PRS - 4));
    let killedAt = 0;
    for (let n = 1; n <= PRS; n++) {
      if (n === killAfter) {
        a.child.kill('SIGKILL');
        killedAt = Date.now();
      }
      const target = n % 2 && !killedAt ? a : b;
      const answer = await call(target.server, 'submitPullRequest', { ...Q, pr: { number: n } }).catch(
        () => null,
      );
      if (answer?.status === 200) acknowledged.add(n);
      else {
        // The replica died under the request: a client retries on another one.
        expect((await call(b.server, 'submitPullRequest', { ...Q, pr: { number: n } })).status).toBe(200);
        acknowledged.add(n);
      }
    }
    expect(await a.exited).toBe(null);

    const prs = [...acknowledged].sort((x, y) => x - y);
    expect(prs).toHaveLength(PRS);
    const states = await settle(b.server, prs, 60_000);
    const tookOver = Date.now() - killedAt;
    expect([...states.values()].map((s) => s.state)).toEqual(prs.map(() => 'merged'));

    // The target's history is exactly the tested commits, one per PR, each PR's change once.
    const history = repo.log('main').slice(0, -1);
    expect(history).toHaveLength(PRS);
    const tested = new Set<string>();
    for (const [, pr] of states) {
      const details = await ok(b.server, 'getMergeQueueTestingDetails', { ...Q, testRunId: pr.testRunId });
      tested.add(details.testBranchSha);
    }
    expect(new Set(history.map((c) => c.sha))).toEqual(tested);
    for (let n = 1; n <= PRS; n++) expect(repo.read('main', `file-${n}.txt`)).toBe(`change ${n}\n`);
    console.log(
      `failover: killed after ${killAfter - 1} submits; ${PRS} PRs merged ${tookOver} ms after the kill`,
    );
  });
});

const run = promisify(execFile);

async function railyard(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [join(ROOT, 'bin/run.js'), ...args], {
      cwd: ROOT,
      env: { ...process.env, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe.skipIf(noPostgres || !hasBuild)('railyard serve and migrate on PostgreSQL', () => {
  it('migrates ahead of a rolling upgrade, once', async () => {
    const databaseUrl = await cluster().createDatabase();
    const first = await railyard(['migrate', '--database-url', databaseUrl]);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(
      /^Applied \d+ migration\(s\) to postgres:\/\/postgres@127\.0\.0\.1:\d+\/\w+: 001_core, /,
    );
    const again = await railyard(['migrate'], { RAILYARD_DATABASE_URL: databaseUrl });
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/is up to date/);
  });

  it('says in one line, without the password, that the database cannot be reached, and exits non-zero', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'railyard-replica-'));
    cleanup(() => rmSync(dataDir, { recursive: true, force: true }));
    const r = await railyard([
      'serve',
      '--sandbox',
      '--port',
      '0',
      '--data-dir',
      dataDir,
      '--database-url',
      'postgres://railyard:s3cret@127.0.0.1:1/railyard',
    ]);
    expect(r.code).toBe(2);
    const lines = r.stderr
      .trim()
      .split('\n')
      .filter((l) => l.trim() && !l.includes('npm warn'));
    // The URL on the command line showed its password in ps: a warning says so, then the one-line error.
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /^warning: a database URL on the command line shows its password .*--database-url-file/,
    );
    expect(lines[1]).toMatch(
      /^railyard serve: cannot reach the database at postgres:\/\/railyard:\*\*\*@127\.0\.0\.1:1\/railyard: .*ECONNREFUSED/,
    );
    expect(r.stderr).not.toContain('s3cret');
    // From a file, the same URL is not in ps and draws no warning.
    const urlFile = join(dataDir, 'database-url');
    writeFileSync(urlFile, 'postgres://railyard:s3cret@127.0.0.1:1/railyard\n', { mode: 0o600 });
    const fromFile = await railyard([
      'serve',
      '--sandbox',
      '--port',
      '0',
      '--data-dir',
      dataDir,
      '--database-url-file',
      urlFile,
    ]);
    expect(fromFile.code).toBe(2);
    expect(fromFile.stderr.split('\n').filter((l) => l.trim() && !l.includes('npm warn'))).toEqual([
      expect.stringMatching(/^railyard serve: cannot reach the database at postgres:\/\/railyard:\*\*\*@/),
    ]);
    const wrong = await railyard([
      'serve',
      '--sandbox',
      '--data-dir',
      dataDir,
      '--database-url',
      'mysql://db/x',
    ]);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('--database-url: expected postgres://');
  });
});
