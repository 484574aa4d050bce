/**
 * Does one big flaky-test upload stall the server? Against the real `railyard serve` (built binary,
 * embedded SQLite) over HTTP on 127.0.0.1:
 *   1. stores STORED tests first (default 400,000, in uploads of 50,000 new tests);
 *   2. uploads BIG new tests in one report (default 200,000: ~7.9 MB of JUnit XML) and, while it is
 *      ingested, asks GET /v1/status every 10 ms (one at a time, keep-alive) and a sampler in this
 *      process measures its own event-loop delay (to tell the server's stalls from the client's);
 *   3. prints the upload's time and the status requests' p50 / p99 / max latency during it.
 * Goal: p99 ≤ 100 ms while the upload runs; the upload stays one transaction.
 *
 *   npm run build && npx tsx bench/flaky-stall.ts
 *   STORED=0 BIG=200000 npx tsx bench/flaky-stall.ts     # on an empty database
 *   BIN=/path/to/other/checkout/bin/run.js npx tsx bench/flaky-stall.ts   # another build
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { spawnServe, type ServeProcess } from '../test/support/serve.js';

const STORED = Number(process.env.STORED ?? 400_000);
const BIG = Number(process.env.BIG ?? 200_000);
const SEED_BATCH = 50_000;
const TOKEN = 'bench-token';
const ORG = 'local';
const REPO = { host: 'github.com', owner: 'acme', name: 'monorepo' };

/** A report of `count` passing tests numbered from `from` (every 97th fails), in suites of 200. */
function report(from: number, count: number): string {
  const parts: string[] = ['<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="bench">'];
  for (let k = from; k < from + count; k++) {
    const mod = Math.floor(k / 200);
    if (k === from || k % 200 === 0) {
      if (k !== from) parts.push('</testsuite>');
      parts.push(`<testsuite name="module ${mod}">`);
    }
    const attrs = `classname="m${mod}.Spec" name="case ${k}"`;
    parts.push(
      k % 97 === 0
        ? `<testcase ${attrs}><failure message="expected ${k}"/></testcase>`
        : `<testcase ${attrs}/>`,
    );
  }
  parts.push('</testsuite>', '</testsuites>\n');
  return parts.join('\n');
}

function body(from: number, count: number, sha: string): string {
  return JSON.stringify({
    repo: REPO,
    org_url_slug: ORG,
    branch: 'main',
    sha,
    reports: [{ name: `junit-${from}.xml`, content: report(from, count) }],
  });
}

async function upload(api: string, json: string): Promise<void> {
  const res = await fetch(`${api}/flaky-tests/upload-test-results`, {
    method: 'POST',
    headers: { 'x-api-token': TOKEN, 'content-type': 'application/json' },
    body: json,
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`upload answered ${res.status}: ${text}`);
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

const dataDir = await mkdtemp(join(tmpdir(), 'railyard-stall-bench-'));
let server: ServeProcess | null = null;
try {
  // An upload still being stored holds a graceful close: stop() kills the server after 10 s.
  server = await spawnServe(['--sandbox', '--data-dir', dataDir, '--token', TOKEN], process.env, { bin: process.env.BIN });
  const api = server.url;
  console.log(
    `Flaky upload stall: ${BIG.toLocaleString('en')} new tests in one upload over ${STORED.toLocaleString('en')} stored; ${cpus().length} CPUs, Node ${process.version}`,
  );
  const seedStart = performance.now();
  for (let from = 0; from < STORED; from += SEED_BATCH)
    await upload(api, body(from, Math.min(SEED_BATCH, STORED - from), (0xa000000 + from).toString(16)));
  if (STORED)
    console.log(
      `stored ${STORED.toLocaleString('en')} tests in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`,
    );

  const json = body(STORED, BIG, 'b16b16b16b');
  console.log(`big upload: ${(json.length / 1024 / 1024).toFixed(1)} MiB of JSON`);
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  let done = false;
  const started = performance.now();
  let uploadMs = 0;
  const big = upload(api, json).finally(() => {
    uploadMs = performance.now() - started;
    done = true;
  });
  const latencies: number[] = [];
  let errors = 0;
  while (!done) {
    const t = performance.now();
    try {
      const res = await fetch(`${api}/status`);
      await res.text();
    } catch {
      errors++; // e.g. a keep-alive socket the server closed after a stall longer than its timeout
    }
    // Sent while the upload was in progress: counted, even when answered only after it.
    latencies.push(performance.now() - t);
    await sleep(10);
  }
  await big;
  loop.disable();
  latencies.sort((a, b) => a - b);
  console.log(`upload answered in ${(uploadMs / 1000).toFixed(2)} s`);
  console.log(
    `GET /v1/status during it: ${latencies.length} requests, p50 ${percentile(latencies, 50).toFixed(1)} ms, ` +
      `p99 ${percentile(latencies, 99).toFixed(1)} ms, max ${(latencies[latencies.length - 1] ?? NaN).toFixed(1)} ms, ` +
      `${errors} failed`,
  );
  console.log(
    `this client's own event-loop delay meanwhile: p99 ${(loop.percentile(99) / 1e6).toFixed(1)} ms, max ${(loop.max / 1e6).toFixed(1)} ms`,
  );
} finally {
  await server?.stop();
  await rm(dataDir, { recursive: true, force: true });
}
