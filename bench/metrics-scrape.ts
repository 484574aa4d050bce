/**
 * Metrics scrape benchmark: one organisation with 2,000 merge queues (each with a few pull
 * requests admitted in the last hour), scraped over HTTP with getMergeQueueMetrics. The server
 * runs in a child process; this process scrapes and reads every byte.
 * Prints the time the server's event loop spends rendering (first with nothing cached, then
 * again), then the median, p90 and max of HTTP scrapes read to the last byte, and the size.
 * Goal: a scrape of 2,000 queues in ≤ 100 ms.
 *
 *   npx tsx bench/metrics-scrape.ts            # 2,000 queues, 20 scrapes
 *   BENCH_QUEUES=500 BENCH_SCRAPES=50 npx tsx bench/metrics-scrape.ts
 */
import { fork } from 'node:child_process';
import { get } from 'node:http';
import { performance } from 'node:perf_hooks';

const QUEUES = Number(process.env.BENCH_QUEUES ?? 2000);
const SCRAPES = Number(process.env.BENCH_SCRAPES ?? 20);
const PRS_PER_QUEUE = 3;
const TOKEN = 'bench-token';

async function child(): Promise<void> {
  const [{ buildServer, renderMetrics }, { openStore }, { createSandboxDriver }] = await Promise.all([
    import('../src/server/index.js'),
    import('../src/store/index.js'),
    import('../src/forge/sandbox/index.js'),
  ]);
  const store = await openStore({ sqlitePath: ':memory:' });
  await store.accounts.addToken('local', TOKEN);
  // The limits are raised: the bench measures an organisation past the default of 1,000 queues.
  const app = await buildServer({
    store,
    driver: createSandboxDriver(),
    logLevel: 'silent',
    limits: { queuesPerOrg: QUEUES, prsPerQueue: 10_000 },
  });
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  const service = app.railyard.service;
  const t0 = performance.now();
  for (let q = 0; q < QUEUES; q++) {
    const repo = { host: 'github.com', owner: `team-${q % 50}`, name: `repo-${q}` };
    await service.createQueue('local', repo, 'main');
    for (let n = 1; n <= PRS_PER_QUEUE; n++) await service.submit(service.registry.require('local', repo, 'main'), n, {});
  }
  console.log(
    `set-up: ${QUEUES} queues × ${PRS_PER_QUEUE} PRs in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
  // What a scrape costs the event loop: rendering every queue (first: nothing cached), then again.
  const loop: string[] = [];
  for (let i = 0; i < 3; i++) {
    const start = performance.now();
    const cpu = process.cpuUsage();
    renderMetrics(service.registry.queues(), Date.now());
    const used = process.cpuUsage(cpu);
    loop.push(`${(performance.now() - start).toFixed(1)} ms (CPU ${((used.user + used.system) / 1000).toFixed(1)} ms)`);
  }
  // CPU time is the figure to compare on a busy machine: wall time includes waiting for a core.
  console.log(`render on the event loop: first ${loop[0]}, then ${loop.slice(1).join(', ')}`);
  process.send!(`${address}/v1/getMergeQueueMetrics`);
  process.on('disconnect', () => {
    void app
      .close()
      .then(() => store.close())
      .then(() => process.exit(0));
  });
}

/** One scrape, read to its last byte (counted, not decoded: the figure is the server's). */
function scrape(url: string): Promise<{ status: number; size: number }> {
  return new Promise((resolve, reject) => {
    get(url, { headers: { 'x-api-token': TOKEN } }, (res) => {
      let size = 0;
      res.on('data', (chunk: Buffer) => (size += chunk.length));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, size }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

async function timed(url: string): Promise<{ ms: number; size: number }> {
  const start = performance.now();
  const { status, size } = await scrape(url);
  if (status !== 200) throw new Error(`scrape answered ${status}`);
  return { ms: performance.now() - start, size };
}

async function parent(): Promise<void> {
  const proc = fork(new URL(import.meta.url).pathname, ['--child'], { stdio: 'inherit' });
  const url = await new Promise<string>((resolve, reject) => {
    proc.once('message', (m) => resolve(String(m)));
    proc.once('exit', (code) => reject(new Error(`server process exited (${code})`)));
  });
  const first = await timed(url);
  const times: number[] = [];
  for (let i = 0; i < SCRAPES; i++) times.push((await timed(url)).ms);
  times.sort((a, b) => a - b);
  const at = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))];
  console.log(
    `HTTP scrape of ${QUEUES} queues (${(first.size / 1024 / 1024).toFixed(1)} MiB), ${SCRAPES} times: median ${at(0.5).toFixed(1)} ms, p90 ${at(0.9).toFixed(1)} ms, max ${times[times.length - 1].toFixed(1)} ms`,
  );
  proc.disconnect();
}

if (process.argv.includes('--child')) await child();
else await parent();
