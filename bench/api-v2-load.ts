/**
 * v2 API load: autocannon against, on the same machine in the same run,
 *   (a) GET /v2/merge-queues/{id}/order of a queue with 1,000 queued pull requests,
 *   (b) GET /v2/merge-queues/{id}/pull-requests?limit=100 of the same queue,
 * each beside a bare Fastify route sending the same bytes (goal: each >= 0.9 x its bare route), and
 * beside the v1 route that answers the same question on the same server (goal: >= 0.9 x it):
 *   /order ~ POST /v1/getQueue, the list ~ POST /v1/listPullRequests (take 100),
 *   GET /v2/pull-requests/{id} ~ POST /v1/getSubmittedPullRequest.
 * The server runs in a child process, autocannon here.
 *
 * The machine is shared, so two targets are never measured minutes apart: each pair runs in
 * BENCH_ROUNDS short alternating rounds (a b, b a, …) and the ratio printed is the median of the
 * rounds' ratios. Beside req/s, each target's server CPU time per request (the server process's
 * user + system time over the requests it answered in the round): load elsewhere slows a target
 * but changes its CPU per request much less, and the "CPU ratio" (bare µs ÷ route µs) is what the
 * ratio would be on an idle machine if the server alone were the limit.
 *
 * The server is the built one (build/): run `npm run build` first.
 *
 *   npx tsx bench/api-v2-load.ts              # 10 s per target, in 10 rounds
 *   BENCH_SECONDS=5 BENCH_ROUNDS=10 BENCH_CONNECTIONS=32 npx tsx bench/api-v2-load.ts
 *   BENCH_ONLY=list npx tsx bench/api-v2-load.ts        # some of: order, list, v1
 *   BENCH_PROFILE=list npx tsx bench/api-v2-load.ts     # then a CPU profile of one target (order, list, pr,
 *                                                       # self time by function, µs per request
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import Fastify from 'fastify';
import { summarise, type CpuProfile } from './cpu-profile.js';

/** Seconds per target in all (split into ROUNDS alternating rounds). */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const QUEUED = 1000;
const TOKEN = 'bench-token';
const REPO = { host: 'github.com', owner: 'acme', name: 'web' };

interface Ready {
  prUrl: string;
  v1Base: string;
  orderUrl: string;
  listUrl: string;
  orderBytesUrl: string;
  listBytesUrl: string;
  orderKiB: number;
  listKiB: number;
}

async function child(): Promise<void> {
  // The built server (`npm run build`), as `railyard serve` runs it: not the sources through tsx,
  // whose transform names every closure at run time (a defineProperty per request-made closure).
  const built = <T>(path: string) => import(new URL(`../build/${path}`, import.meta.url).href) as Promise<T>;
  const [{ buildServer }, { openStore }, { createSandboxDriver }] = await Promise.all([
    built<typeof import('../src/server/index.js')>('server/index.js'),
    built<typeof import('../src/store/index.js')>('store/index.js'),
    built<typeof import('../src/forge/sandbox/index.js')>('forge/sandbox/index.js'),
  ]).catch((error: unknown) => {
    throw new Error(`the built server is missing or broken: run \`npm run build\` first (${String(error)})`);
  });
  const dataDir = await mkdtemp(join(tmpdir(), 'railyard-bench-'));
  const store = await openStore({ dataDir });
  await store.accounts.addToken('local', TOKEN);
  const app = await buildServer({ store, driver: createSandboxDriver() });
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  const service = app.railyard.service;
  await service.createQueue('local', REPO, 'main');
  for (let n = 1; n <= QUEUED; n++)
    await service.submit(service.registry.require('local', REPO, 'main'), n, {});
  const id = service.registry.require('local', REPO, 'main').id;
  const orderUrl = `${address}/v2/merge-queues/${id}/order`;
  const listUrl = `${address}/v2/merge-queues/${id}/pull-requests?limit=100`;
  const bytesOf = async (url: string) =>
    Buffer.from(await (await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } })).arrayBuffer());
  const [orderBytes, listBytes] = [await bytesOf(orderUrl), await bytesOf(listUrl)];
  const same = Fastify();
  same.get('/order', (_request, reply) => reply.type('application/json; charset=utf-8').send(orderBytes));
  same.get('/list', (_request, reply) => reply.type('application/json; charset=utf-8').send(listBytes));
  const sameUrl = await same.listen({ host: '127.0.0.1', port: 0 });
  const list = (await (
    await fetch(`${listUrl}&state=pending`, { headers: { authorization: `Bearer ${TOKEN}` } })
  ).json()) as { data: { id: string; number: number }[] };
  const middle = list.data.find((p) => p.number === QUEUED / 2) ?? list.data[0]!;
  process.send!({
    prUrl: `${address}/v2/pull-requests/${middle.id}`,
    v1Base: `${address}/v1`,
    orderUrl,
    listUrl,
    orderBytesUrl: `${sameUrl}/order`,
    listBytesUrl: `${sameUrl}/list`,
    orderKiB: orderBytes.length / 1024,
    listKiB: listBytes.length / 1024,
  } satisfies Ready);
  const session = new Session();
  process.on('message', (m: { id: number; kind: string; requests?: number }) => {
    const answer = (value: unknown) => process.send!({ id: m.id, answer: value });
    if (m.kind === 'cpu') answer(process.cpuUsage());
    else if (m.kind === 'profile-start') {
      session.connect();
      void session
        .post('Profiler.enable')
        .then(() => session.post('Profiler.setSamplingInterval', { interval: 100 }))
        .then(() => session.post('Profiler.start'))
        .then(() => answer(null));
    } else if (m.kind === 'profile-stop')
      void session.post('Profiler.stop').then(async ({ profile }) => {
        session.disconnect();
        const file = join(tmpdir(), `api-v2-load-${process.pid}.cpuprofile`);
        await writeFile(file, JSON.stringify(profile));
        answer([...summarise(profile as CpuProfile, 30, m.requests), `(the whole profile: ${file})`]);
      });
  });
  process.on('disconnect', () => {
    void Promise.all([same.close(), app.close()])
      .then(() => store.close())
      .then(() => rm(dataDir, { recursive: true, force: true }))
      .then(() => process.exit(0));
  });
}

type Target = { name: string } & autocannon.Options;

/** One short run of a target: its requests per second and the server's CPU (µs) per request. */
async function round(proc: ChildProcess, target: Target, seconds: number): Promise<Sample> {
  const before = await ask<Cpu>(proc, { kind: 'cpu' });
  const { name, ...options } = target;
  const result = await autocannon({ connections: CONNECTIONS, duration: seconds, pipelining: 1, ...options });
  const after = await ask<Cpu>(proc, { kind: 'cpu' });
  const bad = result.non2xx + result.errors + result.timeouts;
  if (bad)
    throw new Error(`${name}: ${bad} failed requests (non-2xx ${result.non2xx}, errors ${result.errors})`);
  const requests = result.requests.total;
  return {
    rps: requests / result.duration,
    cpuUs: (after.user + after.system - before.user - before.system) / Math.max(1, requests),
    requests,
  };
}

interface Sample {
  rps: number;
  cpuUs: number;
  requests: number;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/**
 * `a` against `b` in ROUNDS short alternating rounds (a b, b a, a b, …), so that load from
 * elsewhere on the machine falls on both alike; the ratio is the median of the rounds' ratios.
 */
async function compare(proc: ChildProcess, a: Target, b: Target, goal: string): Promise<void> {
  const seconds = SECONDS / ROUNDS;
  await round(proc, a, 1);
  await round(proc, b, 1);
  const as: Sample[] = [];
  const bs: Sample[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    if (i % 2 === 0) {
      as.push(await round(proc, a, seconds));
      bs.push(await round(proc, b, seconds));
    } else {
      bs.push(await round(proc, b, seconds));
      as.push(await round(proc, a, seconds));
    }
  }
  const line = (name: string, samples: Sample[]) =>
    `  ${name.padEnd(42)} ${median(samples.map((s) => s.rps))
      .toFixed(0)
      .padStart(7)} req/s  ${median(samples.map((s) => s.cpuUs))
      .toFixed(1)
      .padStart(6)} µs CPU/request (server, median of ${ROUNDS})`;
  const ratio = median(as.map((s, i) => s.rps / bs[i]!.rps));
  const cpuRatio = median(bs.map((s) => s.cpuUs)) / median(as.map((s) => s.cpuUs));
  console.log(`${a.name} / ${b.name}`);
  console.log(line(a.name, as));
  console.log(line(b.name, bs));
  console.log(
    `  ratio ${ratio.toFixed(2)} (median of rounds; min ${Math.min(...as.map((s, i) => s.rps / bs[i]!.rps)).toFixed(2)}, max ${Math.max(...as.map((s, i) => s.rps / bs[i]!.rps)).toFixed(2)})   CPU ratio ${cpuRatio.toFixed(2)}   (goal ${goal})`,
  );
}

interface Cpu {
  user: number;
  system: number;
}

let asked = 0;
/** A question to the server process and its answer. */
function ask<T>(proc: ChildProcess, message: object): Promise<T> {
  const id = ++asked;
  return new Promise((resolve) => {
    const listen = (m: { id?: number; answer?: T }) => {
      if (m.id !== id) return;
      proc.off('message', listen);
      resolve(m.answer as T);
    };
    proc.on('message', listen);
    proc.send({ ...message, id });
  });
}

async function parent(): Promise<void> {
  const proc = fork(new URL(import.meta.url).pathname, ['--child'], { stdio: 'inherit' });
  const ready = await new Promise<Ready>((resolve, reject) => {
    proc.once('message', (m) => resolve(m as Ready));
    proc.once('exit', (code) => reject(new Error(`server process exited (${code})`)));
  });
  const headers = { authorization: `Bearer ${TOKEN}` };
  console.log(
    `v2 API load on SQLite, ${ROUNDS} alternating rounds of ${(SECONDS / ROUNDS).toFixed(2)} s per target, ${CONNECTIONS} connections, ${cpus().length} CPUs, Node ${process.version}, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  console.log(
    `order: ${QUEUED} queued PRs, ${ready.orderKiB.toFixed(0)} KiB; pull-requests?limit=100: ${ready.listKiB.toFixed(0)} KiB`,
  );
  const v1 = (name: string, path: string, body: object): Target => ({
    name,
    url: `${ready.v1Base}/${path}`,
    method: 'POST' as const,
    headers: { 'x-api-token': TOKEN, 'content-type': 'application/json' },
    body: JSON.stringify({ repo: REPO, targetBranch: 'main', ...body }),
  });
  const order: Target = { name: `GET …/order (${QUEUED} PRs)`, url: ready.orderUrl, headers };
  const list: Target = { name: 'GET …/pull-requests?limit=100', url: ready.listUrl, headers };
  const pr: Target = { name: 'GET /v2/pull-requests/{id}', url: ready.prUrl, headers };
  const orderBare: Target = { name: 'bare route, the same bytes as /order', url: ready.orderBytesUrl };
  const listBare: Target = { name: 'bare route, the same bytes as the list', url: ready.listBytesUrl };
  const targets: Record<string, Target> = { order, list, pr, 'order-bare': orderBare, 'list-bare': listBare };
  const only = process.env.BENCH_ONLY?.split(',');
  const want = (key: string) => !only || only.includes(key);
  if (want('order')) await compare(proc, order, orderBare, '>= 0.9');
  if (want('list')) await compare(proc, list, listBare, '>= 0.9');
  if (want('v1')) {
    await compare(proc, order, v1(`POST /v1/getQueue (${QUEUED} PRs)`, 'getQueue', {}), '>= 0.9');
    await compare(
      proc,
      list,
      v1('POST /v1/listPullRequests take 100', 'listPullRequests', { take: 100 }),
      '>= 0.9',
    );
    await compare(
      proc,
      pr,
      v1('POST /v1/getSubmittedPullRequest', 'getSubmittedPullRequest', { pr: { number: QUEUED / 2 } }),
      '>= 0.9',
    );
  }
  const profiled = process.env.BENCH_PROFILE;
  if (profiled) {
    const target = targets[profiled];
    if (!target) throw new Error(`BENCH_PROFILE: one of ${Object.keys(targets).join(', ')}`);
    await ask(proc, { kind: 'profile-start' });
    const { requests } = await round(proc, target, SECONDS);
    const lines = await ask<string[]>(proc, { kind: 'profile-stop', requests });
    console.log(`CPU profile of ${target.name}, ${SECONDS} s (server process):`);
    for (const l of lines) console.log(l);
  }
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  proc.disconnect();
  await exited;
}

if (process.argv.includes('--child')) await child();
else await parent();
