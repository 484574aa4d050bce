/**
 * Flaky-test ingest and query benchmark against the real `railyard serve` (built binary, embedded
 * SQLite or PostgreSQL) over HTTP on 127.0.0.1:
 *   1. ingest: UPLOADS uploads of TESTS_PER_UPLOAD JUnit results each (default 2,000 × 500 =
 *      1,000,000 results over 100,000 distinct tests, spread over the last 7 days, 70 % on main),
 *      sent UPLOAD_CONCURRENCY at a time; reports results/s and the server's peak RSS (VmHWM);
 *   2. queries: p50 / p95 latency of list-failing-tests over the 7-day window and of
 *      list-unhealthy-tests (FLAKY, BROKEN), pages of 100, every page followed, ROUNDS times.
 * Goals: ingest >= 50,000 results/s; p95 <= 50 ms for a page of 100.
 *
 *   npm run build && npx tsx bench/flaky.ts
 *   UPLOADS=200 npx tsx bench/flaky.ts      # a quick run
 *   PROFILE=/tmp/prof UPLOADS=200 npx tsx bench/flaky.ts   # and the server's CPU profile
 *   DATABASE=postgres npx tsx bench/flaky.ts  # the server on a throwaway PostgreSQL cluster
 *   DATABASE=postgres EXPLAIN_MS=20 npx tsx bench/flaky.ts  # and the plans of its statements slower than 20 ms
 *   DATABASE=postgres STATEMENTS=1 npx tsx bench/flaky.ts   # and the statements PostgreSQL spent most time on
 *   BIN=/path/to/other/checkout/bin/run.js npx tsx bench/flaky.ts   # another build
 *   TICKETS=1 npx tsx bench/flaky.ts   # tickets on (GitHub Issues on a stand-in, bench/ticket-tracker.ts),
 *                                      # then 3. BURST (default 1,000) new tests broken in one upload:
 *                                      # time until each has its ticket, and tickets opened twice (goal: ≤ 5 min, none)
 */
import { readdirSync, readFileSync } from 'node:fs';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startPostgres, type PostgresCluster } from '../test/support/postgres.js';
import { spawnServe, type ServeProcess } from '../test/support/serve.js';
import { startBenchTracker, type BenchTracker } from './ticket-tracker.js';

const UPLOADS = Number(process.env.UPLOADS ?? 2000);
const TESTS_PER_UPLOAD = Number(process.env.TESTS_PER_UPLOAD ?? 500);
const DISTINCT = Number(process.env.DISTINCT ?? 100_000);
const CONCURRENCY = Number(process.env.UPLOAD_CONCURRENCY ?? 4);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const TICKETS = process.env.TICKETS === '1';
const BURST = Number(process.env.BURST ?? 1000);
const TOKEN = 'bench-token';
const ORG = 'local';
const REPO = { host: 'github.com', owner: 'acme', name: 'monorepo' };
const DAY = 86_400_000;
const NOW = Date.now();
const START = NOW - 7 * DAY + 60_000;

/** A stable pseudo-random number in [0, 1) from two integers. */
function unit(a: number, b: number): number {
  let h = Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(b + 0x632be5ab, 0xc2b2ae35);
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d);
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b);
  return ((h ^ (h >>> 16)) >>> 0) / 2 ** 32;
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');

/**
 * Upload u holds tests (u·500 + j) mod 100,000: every test runs in 10 uploads. Test k is broken
 * when k ≡ 0 (mod 1000), fails 30 % of its runs when k ≡ 1 (mod 50), fails then passes on retry
 * in every third upload when k ≡ 3 (mod 500), is skipped when k ≡ 7 (mod 100); the rest pass.
 */
function report(u: number): string {
  const parts: string[] = ['<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="bench">'];
  let suite = -1;
  for (let j = 0; j < TESTS_PER_UPLOAD; j++) {
    const k = (u * TESTS_PER_UPLOAD + j) % DISTINCT;
    const mod = Math.floor(k / 200);
    if (mod !== suite) {
      if (suite >= 0) parts.push('</testsuite>');
      suite = mod;
      parts.push(`<testsuite name="module ${mod}" timestamp="${new Date(START).toISOString()}">`);
    }
    const attrs = `classname="pkg.module${mod}.Spec" name="${esc(`case ${k} handles input`)}" file="src/module${mod}/spec.test.ts" time="0.0${k % 90}"`;
    const failure = `<failure message="${esc(`expected ${k % 97} to equal ${u % 13} at 0x${(k * 7919).toString(16)}`)}">AssertionError\n    at src/module${mod}/spec.test.ts:${k % 300}:7</failure>`;
    if (k % 1000 === 0 || (k % 50 === 1 && unit(u, k) < 0.3)) parts.push(`<testcase ${attrs}>${failure}</testcase>`);
    else if (k % 500 === 3 && u % 3 === 0) parts.push(`<testcase ${attrs}>${failure}</testcase>`, `<testcase ${attrs}/>`);
    else if (k % 100 === 7) parts.push(`<testcase ${attrs}><skipped/></testcase>`);
    else parts.push(`<testcase ${attrs}/>`);
  }
  parts.push('</testsuite>', '</testsuites>\n');
  return parts.join('\n');
}

/**
 * node:http with kept-alive connections rather than fetch: the client shares this machine's two
 * cores with the server and PostgreSQL, and fetch spent ~1.7 ms of CPU per 60 KB upload (3.4 µs per
 * result, a tenth of what the server and PostgreSQL spent).
 */
const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });

/** POSTs `body` (JSON, or a body already serialized). */
function post<T = unknown>(url: string, body: unknown): Promise<T> {
  const payload = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  return new Promise<T>((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent,
        headers: { 'x-api-token': TOKEN, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode !== 200) reject(new Error(`${url} answered ${res.statusCode}: ${text}`));
          else resolve(JSON.parse(text) as T);
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** The server's peak resident set size (MiB), from /proc. */
function peakRssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return kb / 1024;
}

/** CPU seconds the server has used (user + system), from /proc (clock ticks of 10 ms); `thread` = only its main thread. */
function cpuSeconds(pid: number, thread = false): number {
  const fields = readFileSync(thread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * CPU seconds PostgreSQL has used: the postmaster with the children it has reaped, and its live
 * children (the backends serving the server's pool, autovacuum, the writers).
 */
function postgresCpuSeconds(postmaster: number): number {
  const stat = (pid: number | string) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  const own = stat(postmaster);
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const fields = stat(entry);
      if (Number(fields[1]) === postmaster) ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // gone meanwhile
    }
  }
  return ticks / 100;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

async function timePages(api: string, name: string, op: string, body: Record<string, unknown>): Promise<void> {
  const times: number[] = [];
  let rows = 0;
  let pages = 0;
  for (let round = 0; round < ROUNDS; round++) {
    let token = '';
    do {
      const start = performance.now();
      const answer = await post<{ page: { total_rows: number; next_page_token: string } }>(`${api}/${op}`, {
        ...body,
        page_query: { page_size: 100, page_token: token },
      });
      times.push(performance.now() - start);
      if (round === 0) {
        rows = answer.page.total_rows;
        pages++;
      }
      token = answer.page.next_page_token;
    } while (token);
  }
  times.sort((a, b) => a - b);
  console.log(
    `${name.padEnd(44)} ${String(rows).padStart(6)} tests, ${String(pages).padStart(4)} pages × ${ROUNDS}: ` +
      `p50 ${percentile(times, 50).toFixed(1)} ms   p95 ${percentile(times, 95).toFixed(1)} ms   max ${times[times.length - 1].toFixed(1)} ms`,
  );
}

const dataDir = await mkdtemp(join(tmpdir(), 'railyard-flaky-bench-'));
// DATABASE=postgres: the same run against PostgreSQL (a throwaway cluster, removed afterwards).
let cluster: PostgresCluster | null = null;
let server: ServeProcess | null = null;
// With DATABASE=postgres: STATEMENTS=1 prints the statements PostgreSQL spent most time on (pg_stat_statements);
// EXPLAIN_MS=N logs the plan (with actual rows) of every statement slower than N ms (auto_explain), copied to
// EXPLAIN_LOG (default ./flaky-explain.log) at the end.
let dataDirectory: string | null = null;
let tracker: BenchTracker | null = null;
try {
  tracker = TICKETS ? await startBenchTracker() : null;
  cluster = process.env.DATABASE === 'postgres' ? await startPostgres() : null;
  const databaseUrl = cluster ? await cluster.createDatabase() : undefined;
  if (cluster && databaseUrl && (process.env.STATEMENTS || process.env.EXPLAIN_MS)) {
    const admin = async (statements: string[]) => {
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      try {
        for (const statement of statements) await client.query(statement);
      } finally {
        await client.end();
      }
    };
    await admin([`ALTER SYSTEM SET shared_preload_libraries = pg_stat_statements, auto_explain`]);
    await cluster.stop();
    await cluster.start();
    await admin([
      'CREATE EXTENSION pg_stat_statements',
      ...(process.env.EXPLAIN_MS
        ? [
            `ALTER SYSTEM SET auto_explain.log_min_duration = ${Number(process.env.EXPLAIN_MS)}`,
            'ALTER SYSTEM SET auto_explain.log_analyze = on',
            'SELECT pg_reload_conf()',
          ]
        : []),
    ]);
  }
  let postmaster: number | null = null;
  if (cluster && databaseUrl) {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    const directory = String((await client.query('SHOW data_directory')).rows[0].data_directory);
    await client.end();
    postmaster = Number(readFileSync(join(directory, 'postmaster.pid'), 'utf8').split('\n')[0]);
    if (process.env.EXPLAIN_MS) dataDirectory = directory;
  }
  // PROFILE=DIR writes the server's CPU profile there (node --cpu-prof) when it stops.
  const nodeArgs = process.env.PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.PROFILE}`] : [];
  const database = databaseUrl ? ['--database-url', databaseUrl] : [];
  const ticketArgs = tracker ? ['--ticket-api-url', tracker.url, '--webhook-allow-private', '--webhook-allow-http'] : [];
  const env = tracker ? { ...process.env, RAILYARD_TICKET_TOKEN: 'bench-ticket-token' } : process.env;
  server = await spawnServe(['--sandbox', '--data-dir', dataDir, '--token', TOKEN, ...database, ...ticketArgs], env, { nodeArgs, bin: process.env.BIN });
  console.log(`database: ${cluster ? 'PostgreSQL 15 (throwaway cluster, fsync off)' : 'embedded SQLite'}`);
  const api = server.url;
  const pid = server.child.pid!;
  console.log(
    `Flaky ingest: ${UPLOADS} uploads × ${TESTS_PER_UPLOAD} results over ${DISTINCT} distinct tests, ${CONCURRENCY} at a time; ` +
      `${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), Node ${process.version}`,
  );
  const key = { repo: REPO, org_url_slug: ORG };
  // Each test runs ~7 times on main in the week: a 7-day window and a sample of 5 let the
  // failure-rate monitor decide (the 72 h / 10 defaults would need more runs per test).
  const tickets = tracker ? { ticket_system: 'github', ticket_project: 'acme/tracker' } : {};
  await post(`${api}/flaky-tests/update-repository-settings`, { ...key, settings: { failure_rate: { window_hours: 168, min_sample: 5 }, ...tickets } });
  if (tracker) console.log(`tickets: on (GitHub Issues stand-in at ${tracker.url})`);

  // The request bodies are made before the clock starts: the client's XML and JSON work would
  // otherwise take CPU from the server it measures (both share this machine).
  let xmlBytes = 0;
  const bodies = Array.from({ length: UPLOADS }, (_, u) => {
    const main = unit(u, -1) < 0.7;
    const content = report(u);
    xmlBytes += content.length;
    return Buffer.from(JSON.stringify({
      ...key,
      branch: main ? 'main' : `feature/change-${u}`,
      sha: (u * 2654435761).toString(16).padStart(12, '0'),
      ...(main ? {} : { pr_number: 1 + (u % 400) }),
      started_at: new Date(START + Math.floor((u * (7 * DAY - 120_000)) / UPLOADS)).toISOString(),
      reports: [{ name: `reports/junit-${u}.xml`, content }],
    }));
  });

  let next = 0;
  let results = 0;
  let lastShown = 0;
  const started = performance.now();
  const cpuBefore = cpuSeconds(pid);
  const databaseBefore = postmaster ? postgresCpuSeconds(postmaster) : 0;
  const mainBefore = cpuSeconds(pid, true);
  const clientBefore = process.cpuUsage();
  const worker = async () => {
    for (let u = next++; u < UPLOADS; u = next++) {
      const answer = await post<{ tests: number }>(`${api}/flaky-tests/upload-test-results`, bodies[u]);
      results += answer.tests;
      if (process.stderr.isTTY && performance.now() - lastShown > 500) {
        lastShown = performance.now();
        process.stderr.write(`\r  ${results.toLocaleString('en')} results …`);
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const seconds = (performance.now() - started) / 1000;
  const cpu = cpuSeconds(pid) - cpuBefore;
  const mainCpu = cpuSeconds(pid, true) - mainBefore;
  const clientUsage = process.cpuUsage(clientBefore);
  const clientCpu = (clientUsage.user + clientUsage.system) / 1e6;
  const databaseCpu = postmaster ? postgresCpuSeconds(postmaster) - databaseBefore : 0;
  if (process.stderr.isTTY) process.stderr.write('\r\x1b[K');
  console.log(
    `ingest: ${results.toLocaleString('en')} results in ${seconds.toFixed(1)} s = ${Math.round(results / seconds).toLocaleString('en')} results/s ` +
      `(${(xmlBytes / 1024 / 1024).toFixed(0)} MiB of XML); server peak RSS ${peakRssMiB(pid).toFixed(0)} MiB`,
  );
  console.log(
    `server CPU: ${cpu.toFixed(1)} s (${Math.round((cpu / seconds) * 100)} % of one core), ${((cpu / UPLOADS) * 1000).toFixed(1)} ms per upload, ` +
      `${((cpu / results) * 1e6).toFixed(1)} µs per result; its main thread ${mainCpu.toFixed(1)} s (${Math.round((mainCpu / seconds) * 100)} %), ` +
      `${((mainCpu / UPLOADS) * 1000).toFixed(1)} ms per upload; this client ${((clientCpu / results) * 1e6).toFixed(1)} µs per result`,
  );
  if (postmaster)
    console.log(
      `PostgreSQL CPU: ${databaseCpu.toFixed(1)} s, ${((databaseCpu / UPLOADS) * 1000).toFixed(1)} ms per upload, ${((databaseCpu / results) * 1e6).toFixed(1)} µs per result; ` +
        `server and PostgreSQL together ${(((cpu + databaseCpu) / results) * 1e6).toFixed(1)} µs per result`,
    );

  const window = { ...key, start_time: new Date(NOW - 7 * DAY).toISOString(), end_time: new Date(NOW).toISOString() };
  await timePages(api, 'list-failing-tests (7-day window)', 'flaky-tests/list-failing-tests', window);
  await timePages(api, 'list-unhealthy-tests FLAKY', 'flaky-tests/list-unhealthy-tests', { ...key, status: 'FLAKY' });
  await timePages(api, 'list-unhealthy-tests BROKEN', 'flaky-tests/list-unhealthy-tests', { ...key, status: 'BROKEN' });
  console.log(`server peak RSS after queries: ${peakRssMiB(pid).toFixed(0)} MiB`);
  if (tracker) await ticketBurst(api, tracker);
  if (cluster && databaseUrl) {
    // Where PostgreSQL spent its reads: sequential scans of big tables point at a missing index.
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    const tables = await db.query(
      `SELECT relname, seq_scan, seq_tup_read, idx_scan, n_tup_ins, n_tup_upd FROM pg_stat_user_tables ORDER BY seq_tup_read DESC LIMIT 6`,
    );
    console.table(tables.rows);
    if (process.env.STATEMENTS) {
      const top = await db.query(
        `SELECT calls, round(total_exec_time::numeric, 0) AS total_ms, round(mean_exec_time::numeric, 2) AS mean_ms, rows,
                left(regexp_replace(query, '\\s+', ' ', 'g'), 90) AS query
         FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
         ORDER BY total_exec_time DESC LIMIT 15`,
      );
      console.table(top.rows);
    }
    await db.end();
  }
} finally {
  await server?.stop();
  await tracker?.close();
  if (dataDirectory) {
    const log = process.env.EXPLAIN_LOG ?? 'flaky-explain.log';
    await copyFile(join(dataDirectory, '..', 'server.log'), log);
    console.log(`plans of statements slower than ${process.env.EXPLAIN_MS} ms: ${log}`);
  }
  await cluster?.close();
  await rm(dataDir, { recursive: true, force: true });
}

/**
 * Phase 3 (TICKETS=1): BURST tests of a repository of their own, each failing once in one upload
 * (min_sample 1: each is broken at once; a third as many pass beside them); waits until every one has its ticket, then a little
 * more, and says how long it took and whether any test got two.
 */
async function ticketBurst(api: string, t: BenchTracker): Promise<void> {
  const key = { repo: { host: 'github.com', owner: 'acme', name: 'burst' }, org_url_slug: ORG };
  await post(`${api}/flaky-tests/update-repository-settings`, {
    ...key,
    settings: { failure_rate: { min_sample: 1, window_hours: 24 }, ticket_system: 'github', ticket_project: 'acme/tracker' },
  });
  const cases = Array.from({ length: BURST }, (_, i) => `<testcase classname="burst.Spec" name="burst case ${i}" file="src/burst/spec.test.ts"><failure message="expected ${i} to be ok">AssertionError</failure></testcase>`);
  // And a third as many passing: an upload with ≥ 80 % failed is an infrastructure failure, kept out of detection.
  for (let i = 0; i < Math.ceil(BURST / 3); i++) cases.push(`<testcase classname="burst.Spec" name="burst passing ${i}" file="src/burst/spec.test.ts"/>`);
  const content = `<testsuites><testsuite name="burst">${cases.join('')}</testsuite></testsuites>`;
  const before = t.opened;
  const started = performance.now();
  await post(`${api}/flaky-tests/upload-test-results`, { ...key, branch: 'main', sha: 'b'.repeat(40), reports: [{ name: 'burst.xml', content }] });
  const uploaded = performance.now();
  const deadline = started + Number(process.env.BURST_WAIT_MS ?? 5 * 60_000);
  while (t.opened - before < BURST && performance.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  const done = performance.now();
  if (t.opened - before < BURST) {
    const lines = (server?.output().stdout ?? '').split('\n').filter((l) => /ticket|webhook|deliver/i.test(l));
    console.log(`not every ticket arrived; the server's delivery log lines:\n${lines.slice(-20).join('\n')}`);
  }
  await new Promise((r) => setTimeout(r, 3000));
  const mine = t.openedAt.slice(before);
  const twice = [...t.byMarker.values()].filter((n) => n > 1).length;
  console.log(
    `ticket burst: ${BURST} tests broken in one upload (answered in ${((uploaded - started) / 1000).toFixed(1)} s): ` +
      `${t.opened - before} tickets opened, the last ${((done - started) / 1000).toFixed(1)} s after the upload started ` +
      `(median ${mine.length ? ((mine.sort((a, b) => a - b)[Math.floor(mine.length / 2)] - started) / 1000).toFixed(1) : '-'} s); ` +
      `tests with two tickets: ${twice}; tickets over the whole run: ${t.opened}`,
  );
}
