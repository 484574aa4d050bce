/**
 * The attacks of "a server nothing takes down", measured against the real `railyard serve` on
 * 127.0.0.1 (bounded: every loop stops by itself):
 *   1. idle connections (default 20,000) against a --git-root server whose soft open-files limit is
 *      1,024: it stays up, /v1/status answers on a connection made before, and again within 1 s of
 *      their close; a PR submitted meanwhile lands;
 *   2. 40 connections to /webhooks/github declaring 20,000,000 bytes, sending 19 MB with a bogus
 *      signature, held open: RSS growth and /v1/status p99;
 *   3. 200 of them with the server in a 1 GiB memory cgroup (cgroup v1, as root): no OOM kill.
 * Run (root, for the cgroup): nice -n 10 npx tsx bench/attacks.ts [connections]
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { createRepo } from '../test/forge/fixture.js';
import { spawnServe, type ServeProcess } from '../test/support/serve.js';
import { tempDir } from '../test/support/tmp.js';
import { floodUnverified, percentile, rssKb } from '../test/support/unverified-flood.js';

const CONNECTIONS = Number(process.argv[2] ?? 20_000);
const TOKEN = 'bench-token';
const LOCATION = { host: 'github.com', owner: 'acme', name: 'app' };
const Q = { repo: LOCATION, targetBranch: 'main' };
const env = {
  PATH: process.env.PATH ?? '',
  HOME: await tempDir('railyard-bench-home-'),
  RAILYARD_SERVER_TOKEN: TOKEN,
};
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One keep-alive socket, opened before an attack: the client that was already there. */
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
function call(
  s: ServeProcess,
  op: string,
  body?: unknown,
): Promise<{ status: number; text: string; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(`${s.url}/${op}`, {
      method: body === undefined ? 'GET' : 'POST',
      agent,
      headers: { 'x-api-token': TOKEN, 'content-type': 'application/json' },
      timeout: 10_000,
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, ms: performance.now() - t0 }));
    });
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** A child process holding `n` idle connections to 127.0.0.1:port: `open()` counts those still open, `close()` ends them all. */
async function holdConnections(port: number, n: number) {
  const script = `
    const net = require('node:net');
    const sockets = [];
    let settled = 0, connected = 0;
    const done = () => { if (++settled === ${n}) console.log('connected ' + connected); };
    (async () => {
      for (let i = 0; i < ${n}; i += 500) {
        await Promise.all(Array.from({ length: Math.min(500, ${n} - i) }, () => new Promise((resolve) => {
          const s = net.connect(${port}, '127.0.0.1', () => { connected++; done(); resolve(); });
          s.on('error', () => { done(); resolve(); });
          s.on('close', resolve);
          sockets.push(s);
        })));
      }
    })();
    process.stdin.on('data', () => console.log('open ' + sockets.filter((s) => !s.closed && !s.destroyed).length));
    process.stdin.on('end', () => { for (const s of sockets) s.destroy(); process.exit(0); });
  `;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  const line = async (prefix: string) => {
    for (;;) {
      const m = new RegExp(`${prefix} (\\d+)\\n`).exec(out);
      if (m) {
        out = out.replace(m[0], '');
        return Number(m[1]);
      }
      await sleep(20);
    }
  };
  const connected = await line('connected');
  return {
    connected,
    open: async () => {
      child.stdin.write('?');
      return line('open');
    },
    close: async () => {
      child.stdin.end();
      await new Promise((r) => child.once('exit', r));
    },
  };
}

async function connectionFlood(): Promise<void> {
  const repo = await createRepo({ location: LOCATION, checks: { test: 'true' } });
  repo.openPr(1, { 'one.txt': '1\n' }, { title: 'One' });
  const s = await spawnServe(
    ['--data-dir', await tempDir('railyard-bench-'), '--git-root', repo.root, '--log-level', 'error'],
    env,
    {
      wrapper: ['prlimit', '--nofile=1024:1024'],
    },
  );
  const pid = s.child.pid!;
  await call(s, 'createQueue', Q);
  const { port } = new URL(s.url);
  // Held by child processes of 10,000 each (a process here has at most 20,000 descriptors).
  const t0 = performance.now();
  const holders = await Promise.all(
    Array.from({ length: Math.ceil(CONNECTIONS / 10_000) }, (_, i) =>
      holdConnections(Number(port), Math.min(10_000, CONNECTIONS - i * 10_000)),
    ),
  );
  const connected = holders.reduce((a, h) => a + h.connected, 0);
  // Meanwhile: the PR is submitted, and /v1/status asked, on the connection made before.
  const submitted = await call(s, 'submitPullRequest', { ...Q, pr: { number: 1 } }).catch((e: Error) => ({
    status: 0,
    text: e.message,
    ms: 0,
  }));
  const during: number[] = [];
  let failures = 0;
  for (let i = 0; i < 100; i++) {
    const r = await call(s, 'status').catch(() => null);
    if (r?.status === 200) during.push(r.ms);
    else failures++;
    await sleep(20);
  }
  const held = (await Promise.all(holders.map((h) => h.open()))).reduce((a, b) => a + b, 0);
  const upDuring = alive(pid);
  await Promise.all(holders.map((h) => h.close()));
  const closed = performance.now();
  let answeredAfterMs = Number.NaN;
  while (performance.now() - closed < 10_000) {
    const ok = await fetch(`${s.url}/status`, { signal: AbortSignal.timeout(1_000) }).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) {
      answeredAfterMs = performance.now() - closed;
      break;
    }
    await sleep(20);
  }
  agent.destroy();
  if (submitted.status !== 200)
    await fetch(`${s.url}/submitPullRequest`, {
      method: 'POST',
      headers: { 'x-api-token': TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify({ ...Q, pr: { number: 1 } }),
    });
  let state = '';
  const until = Date.now() + 60_000;
  while (Date.now() < until && !['merged', 'failed'].includes(state)) {
    const r = await fetch(`${s.url}/getSubmittedPullRequest`, {
      method: 'POST',
      headers: { 'x-api-token': TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify({ ...Q, pr: { number: 1 } }),
    });
    state = ((await r.json()) as { state: string }).state;
    await sleep(100);
  }
  console.log(
    `connections: ${CONNECTIONS} opened in ${((performance.now() - t0) / 1000).toFixed(1)} s (${connected} connected, ${held} still held after the probes), server soft limit 1024, --max-connections 4096`,
  );
  console.log(
    `  server up during: ${upDuring}; /v1/status on an earlier connection: p50 ${percentile(during, 50).toFixed(1)} ms, p99 ${percentile(during, 99).toFixed(1)} ms, ${failures} failed`,
  );
  console.log(
    `  submitPullRequest meanwhile: ${submitted.status}; /v1/status on a new connection ${answeredAfterMs.toFixed(0)} ms after the close; PR #1: ${state}; server up: ${alive(pid)}`,
  );
  await s.kill();
  await repo.cleanup();
}

async function githubServer(wrapper?: string[]): Promise<ServeProcess> {
  const secrets = await tempDir('railyard-bench-secrets-');
  writeFileSync(join(secrets, 'token'), 'ghp_bench\n');
  writeFileSync(join(secrets, 'hook'), 'bench-webhook-secret\n');
  return spawnServe(
    [
      '--data-dir',
      await tempDir('railyard-bench-'),
      '--github',
      '--github-api-url',
      'http://127.0.0.1:9/api/v3',
      '--github-token-file',
      join(secrets, 'token'),
      '--github-webhook-secret-file',
      join(secrets, 'hook'),
      '--log-level',
      'error',
    ],
    env,
    wrapper ? { wrapper } : {},
  );
}

async function bodyFlood(connections: number, s: ServeProcess): Promise<void> {
  const r = await floodUnverified({
    url: s.url.replace(/\/v1$/, '/webhooks/github'),
    headers: {
      'content-type': 'application/json',
      'x-github-event': 'push',
      'x-hub-signature-256': 'sha256=' + '0'.repeat(64),
    },
    connections,
    declared: 20_000_000,
    send: 19_000_000,
    pid: s.child.pid!,
    statusUrl: `${s.url}/status`,
    holdMs: 3_000,
  });
  console.log(
    `webhook bodies: ${connections} x 19 MB (bogus signature), answers ${JSON.stringify(r.answers)}`,
  );
  console.log(
    `  RSS ${(r.rssBeforeKb / 1024).toFixed(0)} -> peak ${(r.rssPeakKb / 1024).toFixed(0)} MB (+${((r.rssPeakKb - r.rssBeforeKb) / 1024).toFixed(0)} MB); /v1/status p50 ${percentile(r.statusMs, 50).toFixed(1)} ms, p99 ${percentile(r.statusMs, 99).toFixed(1)} ms over ${r.statusMs.length}, ${r.statusFailures} failed; server up: ${r.alive}`,
  );
}

await connectionFlood();
{
  const s = await githubServer();
  await bodyFlood(40, s);
  await s.kill();
}
const cg = `/sys/fs/cgroup/memory/railyard-bench-${process.pid}`;
if (existsSync('/sys/fs/cgroup/memory') && process.getuid?.() === 0) {
  mkdirSync(cg);
  try {
    writeFileSync(join(cg, 'memory.limit_in_bytes'), String(1024 * 1024 * 1024));
    const s = await githubServer(['sh', '-c', `echo $$ > ${cg}/cgroup.procs && exec "$@"`, 'sh']);
    await bodyFlood(200, s);
    const oom = /oom_kill (\d+)/.exec(readFileSync(join(cg, 'memory.oom_control'), 'utf8'))?.[1] ?? '?';
    const max = Number(readFileSync(join(cg, 'memory.max_usage_in_bytes'), 'utf8')) / 1024 / 1024;
    console.log(
      `  in a 1 GiB cgroup: OOM kills ${oom}, cgroup max usage ${max.toFixed(0)} MB, server RSS now ${(rssKb(s.child.pid!) / 1024).toFixed(0)} MB`,
    );
    await s.kill();
  } finally {
    for (let i = 0; i < 50 && existsSync(cg); i++) {
      try {
        rmdirSync(cg);
      } catch {
        await sleep(100);
      }
    }
  }
} else console.log('cgroup part skipped (needs root and cgroup v1 memory)');
spawnSync('true');
process.exit(0);
