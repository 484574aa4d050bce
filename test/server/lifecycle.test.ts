import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, type TestContext } from 'vitest';
import type { z } from 'zod';
import { routes } from '../../src/contract/index.js';
import { eachDatabase, type TestDatabase } from '../support/hooks.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { call, ok, REPO, shapeMismatches } from './helpers.js';

const Q = { repo: REPO, targetBranch: 'main' };
const ROOT = new URL('../..', import.meta.url).pathname;
// Most tests run side by side (the persistence copies, the serve processes): what a test starts
// and creates goes when that test ends (onTestFinished, last registered first).

/** A data dir removed when test `t` ends. */
async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'railyard-life-'));
  t.onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Restarts, once per database: a restarted server (on PostgreSQL, a replica) finds what was stored. */
function persistenceSuite(database: TestDatabase): void {
  async function start(t: TestContext, dataDir: string): Promise<TestServer> {
    const s = await startTestServer({ dataDir, ...(await database()) });
    t.onTestFinished(() => s.close());
    return s;
  }

  describe('persistence', () => {
    it('serves the same queues, pull requests, settings and impacted targets after a restart', async (t) => {
      const dir = await tempDir(t);
      const a = await start(t, dir);
      await ok(a, 'createQueue', { ...Q, mode: 'parallel', concurrency: 2 });
      await ok(a, 'updateQueue', { ...Q, batch: true, requiredStatuses: ['ci'] });
      for (const n of [1, 2, 3])
        await ok(a, 'submitPullRequest', {
          ...Q,
          pr: { number: n },
          priority: n === 3 ? 'urgent' : undefined,
        });
      const sha2 = (await ok(a, 'getSubmittedPullRequest', { ...Q, pr: { number: 2 } })).prSha;
      await ok(a, 'setImpactedTargets', { ...Q, pr: { number: 2, sha: sha2 }, impactedTargets: ['//a'] });
      await ok(a, 'setImpactedTargets', { ...Q, pr: { number: 9, sha: 'abc' }, impactedTargets: 'ALL' });
      await ok(a, 'cancelPullRequest', { ...Q, pr: { number: 1 } });
      const snapshot = async (s: TestServer) => ({
        queue: await ok(s, 'getQueue', Q),
        list: await ok(s, 'listPullRequests', Q),
        prs: await Promise.all(
          [1, 2, 3].map((n) => ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: n } })),
        ),
      });
      const before = await snapshot(a);
      expect(before.queue.enqueuedPullRequests.map((p: { prNumber: number }) => p.prNumber)).toEqual([2]);
      await a.close();

      const b = await start(t, dir);
      expect(await snapshot(b)).toEqual(before);
      // New submissions continue the order, and an early upload still applies.
      await ok(b, 'submitPullRequest', { ...Q, pr: { number: 4 } });
      const list = await ok(b, 'listPullRequests', Q);
      // Queue order: #2 in the line, then the PRs not ready (#3 urgent first), then #1 that left.
      expect(list.pullRequests.map((p: { prNumber: number }) => p.prNumber)).toEqual([2, 3, 4, 1]);
    });

    it('reports a run through getMergeQueueTestingDetails, and a server restarted mid-run finishes it without losing anything', async (t) => {
      const dir = await tempDir(t);
      const a = await startTestServer({ dataDir: dir, sandbox: { testSeconds: 3 }, ...(await database()) });
      t.onTestFinished(() => a.close());
      await ok(a, 'createQueue', Q);
      await ok(a, 'updateQueue', { ...Q, requiredStatuses: ['build', 'test'] });
      await ok(a, 'submitPullRequest', { ...Q, pr: { number: 1 } });
      const pr = await waitFor(a, 1, (p) => p.state === 'testing' && p.testRunId);
      const waitForBranch = async () => {
        for (let i = 0; i < 50; i++) {
          const d = await ok(a, 'getMergeQueueTestingDetails', { ...Q, testRunId: pr.testRunId });
          if (d.testBranch) return d;
          await new Promise((r) => setTimeout(r, 50));
        }
        throw new Error('the run never got a test branch');
      };
      const details = await waitForBranch();
      expect(shapeMismatches(routes.getMergeQueueTestingDetails.response as z.ZodType, details)).toEqual([]);
      expect(details).toMatchObject({
        testBranch: `railyard-merge/pr-1/${pr.testRunId}`,
        testBranchSha: expect.stringMatching(/^[0-9a-f]{40}$/),
        status: 'in_progress',
        requiredStatuses: ['build', 'test'],
        testedPullRequests: [
          { prNumber: 1, prUrl: 'https://github.com/acme/web/pull/1', title: 'Sandbox PR #1' },
        ],
      });
      expect((await call(a, 'getMergeQueueTestingDetails', { ...Q, testRunId: 'other' })).status).toBe(404);
      await a.close();

      // Restarted before the run finished: the run is re-attached (same id) and the PR lands once.
      const b = await startTestServer({ dataDir: dir, sandbox: { testSeconds: 3 }, ...(await database()) });
      t.onTestFinished(() => b.close());
      const merged = await waitFor(b, 1, (p) => p.state === 'merged');
      expect(merged.testRunId).toBe(pr.testRunId);
      const after = await ok(b, 'getMergeQueueTestingDetails', { ...Q, testRunId: pr.testRunId });
      expect(after).toMatchObject({ status: 'succeeded', testBranchSha: details.testBranchSha });
      const list = await ok(b, 'listPullRequests', { ...Q, state: 'merged' });
      expect(list.pullRequests.map((p: { prNumber: number }) => p.prNumber)).toEqual([1]);
    });
  });
}

describe('shutdown', () => {
  it('a server closed right after it re-attached to several runs stops at once (no run is started after close)', async (t) => {
    const dir = await tempDir(t);
    const sandbox = { testSeconds: 30 };
    const a = await startTestServer({ dataDir: dir, sandbox });
    t.onTestFinished(() => a.close());
    await ok(a, 'createQueue', { ...Q, concurrency: 3 });
    for (const n of [1, 2, 3]) await ok(a, 'submitPullRequest', { ...Q, pr: { number: n } });
    for (const n of [1, 2, 3]) await waitFor(a, n, (p) => p.state === 'testing');
    await a.close();

    // The restarted server queues the three runs' builds one after the other; close comes first.
    const b = await startTestServer({ dataDir: dir, sandbox });
    t.onTestFinished(() => b.close());
    const started = Date.now();
    await b.close();
    expect(Date.now() - started).toBeLessThan(5000); // a run takes 30 s: before, close waited for one
  });
});

// The two persistence copies and the serve processes below: side by side.
eachDatabase(persistenceSuite, { sideBySide: true });

/** Polls getSubmittedPullRequest until `done` holds (at most 20 s). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function waitFor(s: TestServer, prNumber: number, done: (pr: any) => unknown): Promise<any> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const pr = await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: prNumber } });
    if (done(pr)) return pr;
    if (Date.now() > deadline) throw new Error(`#${prNumber} stayed ${pr.state}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.concurrent('railyard serve', () => {
  const hasBuild = existsSync(join(ROOT, 'build/commands/serve.js'));

  function serve(
    t: TestContext,
    args: string[],
  ): {
    child: ChildProcess;
    ready: Promise<{ url: string; stdout: string }>;
    exit: Promise<number | null>;
  } {
    const child = spawn(process.execPath, [join(ROOT, 'bin/run.js'), 'serve', ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
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
      void exit.then((code) =>
        reject(new Error(`serve exited (${code}) before it was ready: ${stdout} ${stderr}`)),
      );
    });
    t.onTestFinished(async () => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    return { child, ready, exit };
  }

  it.runIf(hasBuild)(
    'generates a token on the first start only, finishes in-flight requests on SIGTERM and exits 0',
    async (t) => {
      const dir = await tempDir(t);
      const first = serve(t, [
        '--port',
        '0',
        '--data-dir',
        dir,
        '--sandbox',
        '--sandbox-test-seconds',
        '3600',
      ]);
      const { url, stdout } = await first.ready;
      const token = /only this once[^\n]*\n\s+(\S+)\n/.exec(stdout)?.[1];
      expect(token, stdout).toBeTruthy();
      const server = { url, token: token!, org: 'local', dataDir: dir, close: async () => {} };
      await ok(server, 'createQueue', Q);

      // A request in flight when SIGTERM arrives still gets its answer.
      const { port } = new URL(url);
      const body = Buffer.from(JSON.stringify({ ...Q, pr: { number: 1 } }));
      const inflight = new Promise<number>((resolve, reject) => {
        const req = httpRequest(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/v1/submitPullRequest',
            headers: { 'x-api-token': token, 'content-length': body.length },
          },
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
      const second = serve(t, [
        '--port',
        '0',
        '--data-dir',
        dir,
        '--sandbox',
        '--sandbox-test-seconds',
        '3600',
      ]);
      const again = await second.ready;
      expect(again.stdout).not.toContain('only this once');
      const queue = await ok({ ...server, url: again.url }, 'getQueue', Q);
      expect(queue.enqueuedPullRequests.map((p: { prNumber: number }) => p.prNumber)).toEqual([1]);
      second.child.kill('SIGINT');
      expect(await second.exit).toBe(0);
    },
  );

  it.runIf(hasBuild)('accepts tokens per organisation', async (t) => {
    const dir = await tempDir(t);
    const proc = serve(t, [
      '--port',
      '0',
      '--data-dir',
      dir,
      '--sandbox',
      '--token',
      'tok-a',
      '--org',
      'team-a',
      '--org-token',
      'team-b=tok-b',
    ]);
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

describe.concurrent('railyard serve logs', () => {
  const hasBuild = existsSync(join(ROOT, 'build/commands/serve.js'));

  /** A real `serve` process; `lines()` is what it wrote to stdout so far. */
  function serveLogged(t: TestContext, args: string[]) {
    const child = spawn(process.execPath, [join(ROOT, 'bin/run.js'), 'serve', ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    t.onTestFinished(async () => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    const ready = (async () => {
      for (let i = 0; i < 200; i++) {
        const m = /Railyard API listening on (http:\/\/127\.0\.0\.1:(\d+)\/v1)\n/.exec(stdout);
        if (m) return m[1];
        if (child.exitCode !== null) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`serve did not start: ${stdout}`);
    })();
    return { child, ready, exit, stdout: () => stdout };
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const jsonLines = (text: string): any[] =>
    text
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l));

  it.runIf(hasBuild)(
    'writes one JSON line per request and per queue event, never a token or a body, and says when it stopped',
    async (t) => {
      const dir = await tempDir(t);
      const token = 'secret-token-4711';
      const proc = serveLogged(t, [
        '--port',
        '0',
        '--data-dir',
        dir,
        '--sandbox',
        '--sandbox-test-seconds',
        '1',
        '--token',
        token,
      ]);
      const url = await proc.ready;
      const server = { url, token, org: 'local', dataDir: dir, close: async () => {} };
      await ok(server, 'createQueue', Q);
      await ok(server, 'submitPullRequest', { ...Q, pr: { number: 1 } });
      expect((await call({ ...server, token: 'wrong-token-0815' }, 'getQueue', Q)).status).toBe(401);
      expect((await call(server, 'getQueue', { ...Q, targetBranch: 'nope' })).status).toBe(404);
      await ok(server, 'getQueue', { ...Q, note: 'body-marker-9911' });
      await waitFor(server, 1, (p) => p.state === 'merged');
      proc.child.kill('SIGTERM');
      expect(await proc.exit).toBe(0);

      const out = proc.stdout();
      expect(out).not.toContain(token);
      expect(out).not.toContain('wrong-token-0815');
      expect(out).not.toContain('body-marker-9911');
      const lines = jsonLines(out);
      const requests = lines.filter((l) => l.msg === 'request');
      const submit = requests.find((l) => l.route === '/v1/submitPullRequest');
      expect(submit).toMatchObject({
        level: 30,
        method: 'POST',
        status: 200,
        org: 'local',
        reqId: expect.any(String),
      });
      expect(submit.durationMs).toBeGreaterThanOrEqual(0);
      // The request line is the only line of a request: no "incoming request" / "request completed" pairs.
      expect(requests.filter((l) => l.reqId === submit.reqId)).toHaveLength(1);
      expect(lines.some((l) => l.msg === 'incoming request')).toBe(false);
      const getQueue = requests.filter((l) => l.route === '/v1/getQueue').map((l) => [l.status, l.error]);
      expect(getQueue).toEqual([
        [401, 'x-api-token: unknown token'],
        [404, expect.stringContaining('no merge queue for branch "nope"')],
        [200, undefined],
      ]);

      const changes = lines.filter((l) => l.msg === 'pull request state changed' && l.pr === 1);
      expect(changes.map((l) => [l.from, l.to])).toEqual([
        [null, 'not_ready'],
        ['not_ready', 'pending'],
        ['pending', 'testing'],
        ['testing', 'tests_passed'],
        ['tests_passed', 'merged'],
      ]);
      expect(changes[0]).toMatchObject({
        org: 'local',
        repo: 'acme/web',
        branch: 'main',
        reason: 'API_REQUESTED',
      });
      expect(changes[4].reason).toBe('MERGE_GRAPH_MERGE');
      const runId = changes[2].testRunId;
      expect(runId).toEqual(expect.any(String));
      expect(lines.find((l) => l.msg === 'test run started')).toMatchObject({ testRunId: runId, prs: [1] });
      expect(lines.find((l) => l.msg === 'test run finished')).toMatchObject({
        testRunId: runId,
        status: 'succeeded',
      });
      expect(lines.find((l) => l.msg === 'merged')).toMatchObject({ testRunId: runId, prs: [1] });
      // The server's own last words (a client's late poll may still be answered, and logged, while it stops).
      expect(
        lines
          .filter((l) => l.msg !== 'request')
          .map((l) => l.msg)
          .slice(-2),
      ).toEqual(['stopping: finishing requests in flight and queued commands', 'stopped cleanly']);
    },
  );

  it.runIf(hasBuild)(
    '--log-level warn drops the request lines; --log-format pretty writes lines for people',
    async (t) => {
      const dir = await tempDir(t);
      const quiet = serveLogged(t, [
        '--port',
        '0',
        '--data-dir',
        dir,
        '--sandbox',
        '--token',
        't',
        '--log-level',
        'warn',
      ]);
      const url = await quiet.ready;
      await ok({ url, token: 't', org: 'local', dataDir: dir, close: async () => {} }, 'createQueue', Q);
      quiet.child.kill('SIGTERM');
      expect(await quiet.exit).toBe(0);
      expect(jsonLines(quiet.stdout())).toEqual([]);

      const pretty = serveLogged(t, [
        '--port',
        '0',
        '--data-dir',
        dir,
        '--sandbox',
        '--log-format',
        'pretty',
      ]);
      const url2 = await pretty.ready;
      await ok({ url: url2, token: 't', org: 'local', dataDir: dir, close: async () => {} }, 'getQueue', Q);
      pretty.child.kill('SIGINT');
      expect(await pretty.exit).toBe(0);
      expect(jsonLines(pretty.stdout())).toEqual([]);
      expect(pretty.stdout()).toMatch(/INFO.*request[^\n]*\n(\s+\S+: .*\n)*\s+route: "\/v1\/getQueue"/);
      expect(pretty.stdout()).toMatch(/INFO.*stopped cleanly/);
    },
  );

  it.runIf(hasBuild)('refuses an unknown --log-level or --log-format', async (t) => {
    for (const flag of ['--log-level', '--log-format']) {
      const bad = serveLogged(t, ['--port', '0', '--sandbox', flag, 'loud']);
      bad.ready.catch(() => undefined);
      expect(await bad.exit).toBe(2);
    }
  });
});
