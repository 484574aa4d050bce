/**
 * API load benchmark: autocannon against
 *   (a) a bare Fastify route returning a constant (the baseline),
 *   (b) getSubmittedPullRequest,
 *   (c) getQueue of a queue with 1,000 queued pull requests,
 * on the same machine in the same run. The servers run in a child process, autocannon here.
 * Goal: (b) and (c) each serve >= 50 % of the baseline's requests per second.
 *
 *   npx tsx bench/api-load.ts            # 10 s per target
 *   BENCH_SECONDS=20 BENCH_CONNECTIONS=32 npx tsx bench/api-load.ts
 *   DATABASE=postgres npx tsx bench/api-load.ts   # the API server on a throwaway PostgreSQL cluster, as one replica
 *   BENCH_LOG=async npx tsx bench/api-load.ts     # request logs on (info), written as `railyard serve` does
 *   BENCH_LOG=sync npx tsx bench/api-load.ts      # request logs on, written synchronously (serve before issue 27)
 * With BENCH_LOG the log lines go to a file in the temp dir (as stdout redirected to a file would).
 *
 * On PostgreSQL it also prints the statements the server sent to the database per request (every
 * pg client's queries counted in the server process: the pool's and the replica's LISTEN connection's).
 */
import { fork } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import Fastify from 'fastify';
import { startPostgres } from '../test/support/postgres.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const QUEUED = 1000;
const TOKEN = 'bench-token';
const REPO = { host: 'github.com', owner: 'acme', name: 'web' };
const QUEUE = { repo: REPO, targetBranch: 'main' };
const POSTGRES = process.env.DATABASE === 'postgres';

interface Ready {
  bareUrl: string;
  apiUrl: string;
  /** A bare Fastify route answering getQueue's exact bytes (no logging, no auth, no store). */
  sameBytesUrl: string;
}

let queryCountUrl: string | undefined;
const queryCount = async (): Promise<number> => ((await (await fetch(queryCountUrl!)).json()) as { queries: number }).queries;

async function child(): Promise<void> {
  const [{ buildServer }, { openStore }, { createSandboxDriver }, { Replicas }] = await Promise.all([
    import('../src/server/index.js'),
    import('../src/store/index.js'),
    import('../src/forge/sandbox/index.js'),
    import('../src/server/queue/replicas.js'),
  ]);
  const bare = Fastify();
  bare.get('/', () => ({ ok: true }));
  let queries = 0;
  if (process.env.BENCH_DATABASE_URL) {
    const { Client } = await import('pg');
    const query = Client.prototype.query;
    Client.prototype.query = function (this: InstanceType<typeof Client>, ...args: unknown[]) {
      queries++;
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
  }
  bare.get('/queries', () => ({ queries }));
  const bareUrl = await bare.listen({ host: '127.0.0.1', port: 0 });

  const dataDir = await mkdtemp(join(tmpdir(), 'railyard-bench-'));
  const databaseUrl = process.env.BENCH_DATABASE_URL;
  const store = await openStore(databaseUrl ? { databaseUrl } : { dataDir });
  const replicas = databaseUrl ? new Replicas(store, { databaseUrl }) : undefined;
  await store.accounts.addToken('local', TOKEN);
  const logMode = process.env.BENCH_LOG;
  let logStream: NodeJS.WritableStream | undefined;
  if (logMode === 'async' || logMode === 'sync') {
    const { openSync } = await import('node:fs');
    const fd = openSync(join(dataDir, 'server.log'), 'a');
    const { destination } = await import('pino');
    logStream = (
      logMode === 'async' ? (await import('../src/server/log-destination.js')).asyncLogDestination(fd).stream : destination({ dest: fd, sync: true })
    ) as NodeJS.WritableStream;
  }
  const app = await buildServer({ store, driver: createSandboxDriver(), replicas, ...(logStream ? { logLevel: 'info', logStream } : {}) });
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  const service = app.railyard.service;
  await service.createQueue('local', REPO, 'main');
  for (let n = 1; n <= QUEUED; n++) await service.submit(service.registry.require('local', REPO, 'main'), n, {});

  const queueBody = await (
    await fetch(`${address}/v1/getQueue`, {
      method: 'POST',
      headers: { 'x-api-token': TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify(QUEUE),
    })
  ).text();
  const same = Fastify();
  const queueBytes = Buffer.from(queueBody);
  same.post('/', (_request, reply) => reply.type('application/json; charset=utf-8').send(queueBytes));
  const sameBytesUrl = await same.listen({ host: '127.0.0.1', port: 0 });
  process.send!({ bareUrl, apiUrl: `${address}/v1`, sameBytesUrl } satisfies Ready);
  process.on('disconnect', () => {
    void Promise.all([bare.close(), same.close(), app.close()])
      .then(() => store.close())
      .then(() => rm(dataDir, { recursive: true, force: true }))
      .then(() => process.exit(0));
  });
}

/** Requests per second of one target, after the same 2 s warm-up for every target (JIT, caches). */
async function measure(name: string, options: autocannon.Options): Promise<number> {
  await autocannon({ connections: CONNECTIONS, duration: 2, pipelining: 1, ...options });
  const before = queryCountUrl ? await queryCount() : 0;
  const result = await autocannon({ connections: CONNECTIONS, duration: SECONDS, pipelining: 1, ...options });
  // Requests autocannon gave up on at the end may still be answered: let them finish before counting.
  const perRequest = queryCountUrl ? `   ${((await settle(queryCount) - before) / result.requests.total).toFixed(3)} queries/request` : '';
  const bad = result.non2xx + result.errors + result.timeouts;
  if (bad) throw new Error(`${name}: ${bad} failed requests (non-2xx ${result.non2xx}, errors ${result.errors})`);
  const rps = result.requests.average;
  const mb = result.throughput.average / 1024 / 1024;
  console.log(
    `${name.padEnd(40)} ${rps.toFixed(0).padStart(8)} req/s   p50 ${String(result.latency.p50).padStart(4)} ms   p99 ${String(result.latency.p99).padStart(4)} ms   ${mb.toFixed(1)} MiB/s${perRequest}`,
  );
  return rps;
}

/** The value of `read` once it stops changing for 200 ms. */
async function settle(read: () => Promise<number>): Promise<number> {
  let last = await read();
  for (;;) {
    await new Promise((r) => setTimeout(r, 200));
    const now = await read();
    if (now === last) return now;
    last = now;
  }
}

async function parent(): Promise<void> {
  const cluster = POSTGRES ? await startPostgres() : undefined;
  const databaseUrl = await cluster?.createDatabase();
  const env = { ...process.env, ...(databaseUrl ? { BENCH_DATABASE_URL: databaseUrl } : {}) };
  const proc = fork(new URL(import.meta.url).pathname, ['--child'], { stdio: 'inherit', env });
  const ready = await new Promise<Ready>((resolve, reject) => {
    proc.once('message', (m) => resolve(m as Ready));
    proc.once('exit', (code) => reject(new Error(`server process exited (${code})`)));
  });
  if (POSTGRES) queryCountUrl = `${ready.bareUrl}/queries`;
  const headers = { 'x-api-token': TOKEN, 'content-type': 'application/json' };

  // Sanity: the queue really holds 1,000 pull requests.
  const queue = (await (await fetch(`${ready.apiUrl}/getQueue`, { method: 'POST', headers, body: JSON.stringify(QUEUE) })).json()) as {
    enqueuedPullRequests: unknown[];
  };
  if (queue.enqueuedPullRequests.length !== QUEUED) throw new Error(`expected ${QUEUED} queued PRs, got ${queue.enqueuedPullRequests.length}`);
  const queueBytes = Buffer.byteLength(JSON.stringify(queue));

  console.log(`API load on ${POSTGRES ? 'PostgreSQL (one replica)' : 'SQLite'}, logs ${process.env.BENCH_LOG ? `info, ${process.env.BENCH_LOG}` : 'off (error level)'}, ${SECONDS} s per target, ${CONNECTIONS} connections, ${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), Node ${process.version}`);
  console.log(`getQueue answer: ${QUEUED} queued PRs, ${(queueBytes / 1024).toFixed(0)} KiB`);
  const bare = await measure('bare Fastify route (constant)', { url: ready.bareUrl });
  const getPr = await measure('getSubmittedPullRequest', {
    url: `${ready.apiUrl}/getSubmittedPullRequest`,
    method: 'POST',
    headers,
    body: JSON.stringify({ ...QUEUE, pr: { number: 500 } }),
  });
  const getQueue = await measure(`getQueue (${QUEUED} queued PRs)`, {
    url: `${ready.apiUrl}/getQueue`,
    method: 'POST',
    headers,
    body: JSON.stringify(QUEUE),
  });
  const sameBytes = await measure('bare route, the same bytes as getQueue', {
    url: ready.sameBytesUrl,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(QUEUE),
  });
  const ratio = (x: number) => `${((x / bare) * 100).toFixed(0)} %`;
  console.log(`ratio getSubmittedPullRequest / bare: ${ratio(getPr)}  (goal >= 50 %)`);
  console.log(`ratio getQueue / bare:                ${ratio(getQueue)}  (goal >= 50 %)`);
  console.log(`ratio getQueue / same bytes:          ${(getQueue / sameBytes).toFixed(2)}  (goal with logs on: >= 0.8)`);
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  proc.disconnect();
  await exited;
  await cluster?.close();
}

if (process.argv.includes('--child')) await child();
else await parent();
