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
 *   npx tsx bench/api-v2-load.ts            # 10 s per target
 *   BENCH_SECONDS=20 BENCH_CONNECTIONS=32 npx tsx bench/api-v2-load.ts
 */
import { fork } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import Fastify from 'fastify';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
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
  const [{ buildServer }, { openStore }, { createSandboxDriver }] = await Promise.all([
    import('../src/server/index.js'),
    import('../src/store/index.js'),
    import('../src/forge/sandbox/index.js'),
  ]);
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
  process.on('disconnect', () => {
    void Promise.all([same.close(), app.close()])
      .then(() => store.close())
      .then(() => rm(dataDir, { recursive: true, force: true }))
      .then(() => process.exit(0));
  });
}

/** Requests per second of one target, after a 2 s warm-up. */
async function measure(name: string, options: autocannon.Options): Promise<number> {
  await autocannon({ connections: CONNECTIONS, duration: 2, pipelining: 1, ...options });
  const result = await autocannon({ connections: CONNECTIONS, duration: SECONDS, pipelining: 1, ...options });
  const bad = result.non2xx + result.errors + result.timeouts;
  if (bad)
    throw new Error(`${name}: ${bad} failed requests (non-2xx ${result.non2xx}, errors ${result.errors})`);
  const rps = result.requests.average;
  console.log(
    `${name.padEnd(44)} ${rps.toFixed(0).padStart(8)} req/s   p50 ${String(result.latency.p50).padStart(4)} ms   p99 ${String(result.latency.p99).padStart(4)} ms   ${(result.throughput.average / 1024 / 1024).toFixed(1)} MiB/s`,
  );
  return rps;
}

async function parent(): Promise<void> {
  const proc = fork(new URL(import.meta.url).pathname, ['--child'], { stdio: 'inherit' });
  const ready = await new Promise<Ready>((resolve, reject) => {
    proc.once('message', (m) => resolve(m as Ready));
    proc.once('exit', (code) => reject(new Error(`server process exited (${code})`)));
  });
  const headers = { authorization: `Bearer ${TOKEN}` };
  console.log(
    `v2 API load on SQLite, ${SECONDS} s per target, ${CONNECTIONS} connections, ${cpus().length} CPUs, Node ${process.version}`,
  );
  console.log(
    `order: ${QUEUED} queued PRs, ${ready.orderKiB.toFixed(0)} KiB; pull-requests?limit=100: ${ready.listKiB.toFixed(0)} KiB`,
  );
  const order = await measure(`GET …/order (${QUEUED} PRs)`, { url: ready.orderUrl, headers });
  const orderBare = await measure('bare route, the same bytes as /order', { url: ready.orderBytesUrl });
  const list = await measure('GET …/pull-requests?limit=100', { url: ready.listUrl, headers });
  const listBare = await measure('bare route, the same bytes as the list', { url: ready.listBytesUrl });
  const v1 = (path: string, body: object) => ({
    url: `${ready.v1Base}/${path}`,
    method: 'POST' as const,
    headers: { 'x-api-token': TOKEN, 'content-type': 'application/json' },
    body: JSON.stringify({ repo: REPO, targetBranch: 'main', ...body }),
  });
  const getQueue = await measure(`POST /v1/getQueue (${QUEUED} PRs)`, v1('getQueue', {}));
  const listV1 = await measure('POST /v1/listPullRequests take 100', v1('listPullRequests', { take: 100 }));
  const pr = await measure('GET /v2/pull-requests/{id}', { url: ready.prUrl, headers });
  const prV1 = await measure(
    'POST /v1/getSubmittedPullRequest',
    v1('getSubmittedPullRequest', { pr: { number: QUEUED / 2 } }),
  );
  console.log(`ratio order / same bytes: ${(order / orderBare).toFixed(2)}  (goal >= 0.9)`);
  console.log(`ratio list / same bytes:  ${(list / listBare).toFixed(2)}  (goal >= 0.9)`);
  console.log(
    `ratio order / v1 getQueue:                     ${(order / getQueue).toFixed(2)}  (goal >= 0.9)`,
  );
  console.log(`ratio list / v1 listPullRequests:              ${(list / listV1).toFixed(2)}  (goal >= 0.9)`);
  console.log(`ratio pull-requests/{id} / v1 getSubmitted…:   ${(pr / prV1).toFixed(2)}  (goal >= 0.9)`);
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  proc.disconnect();
  await exited;
}

if (process.argv.includes('--child')) await child();
else await parent();
