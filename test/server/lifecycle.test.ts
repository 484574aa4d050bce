import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { routes } from '../../src/contract/index.js';
import type { TestRun } from '../../src/engine/index.js';
import { openStore } from '../../src/store/index.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { call, ok, REPO, shapeMismatches } from './helpers.js';

const Q = { repo: REPO, targetBranch: 'main' };
const ROOT = new URL('../..', import.meta.url).pathname;
const dirs: string[] = [];
const cleanups: (() => Promise<void>)[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'railyard-life-'));
  dirs.push(dir);
  return dir;
}
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function start(dataDir: string): Promise<TestServer> {
  const s = await startTestServer({ sandbox: true, dataDir });
  cleanups.push(() => s.close());
  return s;
}

describe('persistence', () => {
  it('serves the same queues, pull requests, settings and impacted targets after a restart', async () => {
    const dir = await tempDir();
    const a = await start(dir);
    await ok(a, 'createQueue', { ...Q, mode: 'parallel', concurrency: 2 });
    await ok(a, 'updateQueue', { ...Q, batch: true, requiredStatuses: ['ci'] });
    for (const n of [1, 2, 3]) await ok(a, 'submitPullRequest', { ...Q, pr: { number: n }, priority: n === 3 ? 'urgent' : undefined });
    const sha2 = (await ok(a, 'getSubmittedPullRequest', { ...Q, pr: { number: 2 } })).prSha;
    await ok(a, 'setImpactedTargets', { ...Q, pr: { number: 2, sha: sha2 }, impactedTargets: ['//a'] });
    await ok(a, 'setImpactedTargets', { ...Q, pr: { number: 9, sha: 'abc' }, impactedTargets: 'ALL' });
    await ok(a, 'cancelPullRequest', { ...Q, pr: { number: 1 } });
    const snapshot = async (s: TestServer) => ({
      queue: await ok(s, 'getQueue', Q),
      list: await ok(s, 'listPullRequests', Q),
      prs: await Promise.all([1, 2, 3].map((n) => ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: n } }))),
    });
    const before = await snapshot(a);
    expect(before.queue.enqueuedPullRequests.map((p: { prNumber: number }) => p.prNumber)).toEqual([2]);
    await a.close();

    const b = await start(dir);
    expect(await snapshot(b)).toEqual(before);
    // New submissions continue the order, and an early upload still applies.
    await ok(b, 'submitPullRequest', { ...Q, pr: { number: 4 } });
    const list = await ok(b, 'listPullRequests', Q);
    expect(list.pullRequests.map((p: { prNumber: number }) => p.prNumber)).toEqual([1, 2, 3, 4]);
  });

  it('serves a stored test run through getMergeQueueTestingDetails', async () => {
    const dir = await tempDir();
    const a = await start(dir);
    await ok(a, 'createQueue', Q);
    await ok(a, 'submitPullRequest', { ...Q, pr: { number: 1 } });
    await a.close();

    // A test run as the engine will store it (the engine does not start runs yet).
    const store = await openStore({ dataDir: dir });
    const [queue] = await store.loadQueues();
    const run: TestRun = {
      id: '0b6c2f36-2b1f-4d7e-9c57-1b1d1c1e0f00',
      prNumbers: [1],
      basePrNumbers: [],
      isBisection: false,
      status: 'in_progress',
      checks: { build: 'success', test: 'pending' },
      startedAt: Date.parse('2026-03-01T10:00:00Z'),
      finishedAt: null,
      failureReason: null,
      branch: 'railyard-merge/pr-1/0b6c2f36-2b1f-4d7e-9c57-1b1d1c1e0f00',
      sha: 'a'.repeat(40),
      seq: 1,
      mergeMethod: 'squash',
      requiredStatuses: null,
      mergeRequested: false,
      mergePrNumbers: null,
    };
    await store.commitQueueChange(queue.id, queue.model, { ...queue.model, runs: [run] });
    await store.close();

    const b = await start(dir);
    const details = await ok(b, 'getMergeQueueTestingDetails', { ...Q, testRunId: run.id });
    expect(shapeMismatches(routes.getMergeQueueTestingDetails.response as z.ZodType, details)).toEqual([]);
    expect(details).toMatchObject({
      testBranch: run.branch,
      testBranchSha: run.sha,
      status: 'in_progress',
      createdAt: '2026-03-01T10:00:00.000Z',
      testedPullRequests: [{ prNumber: 1, prUrl: 'https://github.com/acme/web/pull/1', title: 'Sandbox PR #1' }],
    });
    expect((await call(b, 'getMergeQueueTestingDetails', { ...Q, testRunId: 'other' })).status).toBe(404);
  });
});

describe('railyard serve', () => {
  const hasBuild = existsSync(join(ROOT, 'build/commands/serve.js'));

  function serve(args: string[]): { child: ChildProcess; ready: Promise<{ url: string; stdout: string }>; exit: Promise<number | null> } {
    const child = spawn(process.execPath, [join(ROOT, 'bin/run.js'), 'serve', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const ready = new Promise<{ url: string; stdout: string }>((resolve, reject) => {
      child.stdout!.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        const m = /Railyard API listening on (http:\/\/127\.0\.0\.1:(\d+)\/v1)\n/.exec(stdout);
        if (m && m[2] !== '0') resolve({ url: m[1], stdout });
      });
      child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      void exit.then((code) => reject(new Error(`serve exited (${code}) before it was ready: ${stdout} ${stderr}`)));
    });
    cleanups.push(async () => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    return { child, ready, exit };
  }

  it.runIf(hasBuild)('generates a token on the first start only, finishes in-flight requests on SIGTERM and exits 0', async () => {
    const dir = await tempDir();
    const first = serve(['--port', '0', '--data-dir', dir, '--sandbox']);
    const { url, stdout } = await first.ready;
    const token = /only this once[^\n]*\n\s+(\S+)\n/.exec(stdout)?.[1];
    expect(token).toBeTruthy();
    const server = { url, token: token!, org: 'local', dataDir: dir, close: async () => {} };
    await ok(server, 'createQueue', Q);

    // A request in flight when SIGTERM arrives still gets its answer.
    const { port } = new URL(url);
    const body = Buffer.from(JSON.stringify({ ...Q, pr: { number: 1 } }));
    const inflight = new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port, method: 'POST', path: '/v1/submitPullRequest', headers: { 'x-api-token': token, 'content-length': body.length } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.write(body.subarray(0, 10));
      setTimeout(() => {
        first.child.kill('SIGTERM');
        setTimeout(() => req.end(body.subarray(10)), 300);
      }, 200);
    });
    expect(await inflight).toBe(200);
    expect(await first.exit).toBe(0);

    // Second start on the same data: no new token, the same one works, the data is there.
    const second = serve(['--port', '0', '--data-dir', dir, '--sandbox']);
    const again = await second.ready;
    expect(again.stdout).not.toContain('only this once');
    const queue = await ok({ ...server, url: again.url }, 'getQueue', Q);
    expect(queue.enqueuedPullRequests.map((p: { prNumber: number }) => p.prNumber)).toEqual([1]);
    second.child.kill('SIGINT');
    expect(await second.exit).toBe(0);
  });

  it.runIf(hasBuild)('accepts tokens per organisation', async () => {
    const dir = await tempDir();
    const proc = serve(['--port', '0', '--data-dir', dir, '--sandbox', '--token', 'tok-a', '--org', 'team-a', '--org-token', 'team-b=tok-b']);
    const { url, stdout } = await proc.ready;
    expect(stdout).not.toContain('only this once');
    const a = { url, token: 'tok-a', org: 'team-a', dataDir: dir, close: async () => {} };
    await ok(a, 'createQueue', Q);
    expect((await call({ ...a, token: 'tok-b' }, 'getQueue', Q)).status).toBe(404);
    expect((await call({ ...a, token: 'tok-c' }, 'getQueue', Q)).status).toBe(401);
    proc.child.kill('SIGTERM');
    expect(await proc.exit).toBe(0);
  });
});
