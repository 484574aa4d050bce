/**
 * Out of file descriptors, the server stays up. A `--git-root` server whose soft limit is low
 * (started under `prlimit --nofile=384:384`) is flooded with more idle TCP connections than it has
 * descriptors: its next `spawn git` failed with EMFILE and an unhandled 'error' event ended the
 * process, every organisation's queue with it. Now the spawn fails that one operation; once the
 * connections close, /v1/status answers within a second and a PR lands. Also: `--max-connections`
 * closes the connections past it at once, and the soft limit is raised to the hard one at start.
 */
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { openFilesLimit } from '../../src/server/connections.js';
import { createRepo } from '../forge/fixture.js';
import { isolatedEnv } from '../support/cli.js';
import { cleanupsAfterEach } from '../support/hooks.js';
import { spawnServe, type ServeProcess } from '../support/serve.js';
import { tempDir } from '../support/tmp.js';

const cleanup = cleanupsAfterEach();
const TOKEN = 'fd-test-token';
const LOCATION = { host: 'github.com', owner: 'acme', name: 'app' };
const Q = { repo: LOCATION, targetBranch: 'main' };
const hasPrlimit = spawnSync('prlimit', ['--version'], { stdio: 'ignore' }).status === 0;

/** A keep-alive agent of one socket: a request made while the server can accept nothing rides on it. */
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function api(
  s: ServeProcess,
  op: string,
  body: unknown,
  timeoutMs = 10_000,
): Promise<{ status: number; text: string }> {
  const url = new URL(`${s.url}/${op}`);
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: 'POST',
      agent,
      headers: { 'x-api-token': TOKEN, 'content-type': 'application/json' },
      timeout: timeoutMs,
    });
    req.on('timeout', () => req.destroy(new Error(`${op}: no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.end(JSON.stringify(body));
  });
}

/** Opens `n` idle TCP connections to the server (connected or refused, each settles). */
async function flood(url: string, n: number): Promise<Socket[]> {
  const { port } = new URL(url);
  const sockets: Socket[] = [];
  await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<void>((resolve) => {
          const s = connect(Number(port), '127.0.0.1', () => resolve());
          s.on('error', () => resolve());
          s.on('close', () => resolve());
          sockets.push(s);
        }),
    ),
  );
  return sockets;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function until<T>(
  what: string,
  get: () => Promise<T | null | undefined>,
  timeoutMs = 60_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await get().catch(() => null);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('descriptor exhaustion', () => {
  it.skipIf(!hasPrlimit)(
    'a git-root server with 384 descriptors survives 800 idle connections, answers again within 1 s of their close, and lands a PR',
    { timeout: 120_000 },
    async () => {
      const repo = await createRepo({ location: LOCATION, checks: { test: 'true' } });
      cleanup(() => repo.cleanup());
      repo.openPr(1, { 'one.txt': '1\n' }, { title: 'One' });
      const s = await spawnServe(
        ['--data-dir', await tempDir('railyard-fd-'), '--git-root', repo.root, '--log-level', 'warn'],
        { ...isolatedEnv(), RAILYARD_SERVER_TOKEN: TOKEN },
        { wrapper: ['prlimit', '--nofile=384:384'] },
      );
      cleanup(() => s.kill());
      expect((await api(s, 'createQueue', Q)).status).toBe(200);

      const sockets = await flood(s.url, 800);
      cleanup(() => sockets.forEach((x) => x.destroy()));
      // Meanwhile, on a connection made before: the PR is submitted and the queue spawns git for it.
      // Accepted, or a 503 saying why (a git command could not start): never the 500 of a bug.
      const submitted = await api(s, 'submitPullRequest', { ...Q, pr: { number: 1 } }).catch((e: Error) => ({
        status: 0,
        text: e.message,
      }));
      expect([200, 503], submitted.text).toContain(submitted.status);
      // Long enough for the git forge's polling (every second) and the run to try their spawns.
      const t0 = Date.now();
      while (Date.now() - t0 < 3_000) {
        expect(alive(s.child.pid!), s.output().stderr).toBe(true);
        await new Promise((r) => setTimeout(r, 100));
      }
      for (const x of sockets) x.destroy();
      const closed = performance.now();
      agent.destroy();
      await until(
        '/v1/status',
        async () => (await fetch(`${s.url}/status`, { signal: AbortSignal.timeout(1_000) })).status === 200,
      );
      expect(performance.now() - closed).toBeLessThan(1_000);
      expect(alive(s.child.pid!)).toBe(true);

      if (submitted.status !== 200)
        expect((await api(s, 'submitPullRequest', { ...Q, pr: { number: 1 } })).status).toBe(200);
      const landed = await until('PR #1 to land', async () => {
        const r = await api(s, 'getSubmittedPullRequest', { ...Q, pr: { number: 1 } });
        const pr = JSON.parse(r.text) as { state: string; stateReason?: string };
        if (pr.state === 'failed') throw Object.assign(new Error(`#1 failed: ${r.text}`), { fatal: true });
        return pr.state === 'merged' ? pr : null;
      });
      expect(landed.state).toBe('merged');
      expect(repo.read('main', 'one.txt')).toBe('1\n');
    },
  );

  it.skipIf(!hasPrlimit)(
    'raises its soft open-files limit to the hard one, and closes connections past --max-connections at once',
    { timeout: 60_000 },
    async () => {
      const s = await spawnServe(
        [
          '--data-dir',
          await tempDir('railyard-fd-'),
          '--sandbox',
          '--max-connections',
          '5',
          '--log-level',
          'warn',
        ],
        { ...isolatedEnv(), RAILYARD_SERVER_TOKEN: TOKEN },
        { wrapper: ['prlimit', '--nofile=300:4096'] },
      );
      cleanup(() => s.kill());
      expect(openFilesLimit(s.child.pid!)).toEqual({ soft: 4096, hard: 4096 });
      const sockets = await flood(s.url, 12);
      cleanup(() => sockets.forEach((x) => x.destroy()));
      // Those past the fifth are closed by the server as soon as they are accepted.
      await until(
        'the connections past 5 to be closed',
        async () => sockets.filter((x) => x.closed).length >= 7,
        10_000,
      );
      expect(sockets.filter((x) => !x.closed).length).toBe(5);
      for (const x of sockets) x.destroy();
      await until(
        '/v1/status',
        async () => (await fetch(`${s.url}/status`, { signal: AbortSignal.timeout(1_000) })).status === 200,
      );
    },
  );
});
