/**
 * Does one big flaky-test upload stall the server? Against the real `railyard serve` (built binary,
 * embedded SQLite) over HTTP on 127.0.0.1:
 *   1. stores STORED tests first (default 0: the issue's case, an empty repository; uploads of
 *      50,000 new tests);
 *   2. uploads BIG new tests in one report (default 200,000: ~11.4 MiB of JSON) and, while it is
 *      ingested, ANOTHER process (test/support/status-probe.ts) asks GET /v1/status on a fixed
 *      schedule, every PROBE_MS (default 20 ms), never waiting for one answer to send the next —
 *      the way a monitor or load balancer does; a sampler in this process measures its own
 *      event-loop delay (to tell the server's stalls from the client's);
 *   3. prints the upload's time and the status requests' p50 / p99 / max latency during it, each
 *      counted from the time it was due.
 * Goal: p99 ≤ 100 ms and max ≤ 300 ms while the upload runs.
 *
 * (Until 2026-11-26 this bench probed from its own process, one request at a time every 10 ms after
 * the previous answer: it shared the event loop that serialises the 11 MiB body and sent one request
 * per stall where a monitor sends many, so it reported p99 59–81 ms where an external probe saw
 * 172–216 ms.)
 *
 *   npm run build && npx tsx bench/flaky-stall.ts
 *   STORED=400000 BIG=200000 npx tsx bench/flaky-stall.ts     # over 400,000 stored tests
 *   BIN=/path/to/other/checkout/bin/run.js npx tsx bench/flaky-stall.ts   # another build
 *   NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof' npx tsx bench/flaky-stall.ts   # profile the server
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { spawnServe, type ServeProcess } from '../test/support/serve.js';
import { startStatusProbe } from '../test/support/status-probe.js';

const STORED = Number(process.env.STORED ?? 0);
const PROBE_MS = Number(process.env.PROBE_MS ?? 20);
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


const dataDir = await mkdtemp(join(tmpdir(), 'railyard-stall-bench-'));
let server: ServeProcess | null = null;
try {
  // An upload still being stored holds a graceful close: stop() kills the server after 10 s.
  server = await spawnServe(['--sandbox', '--data-dir', dataDir, '--token', TOKEN], process.env, {
    bin: process.env.BIN,
    nodeArgs: process.env.NODE_ARGS?.split(' ').filter(Boolean),
  });
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
  const probe = await startStatusProbe(`${api}/status`, PROBE_MS);
  const started = performance.now();
  await upload(api, json);
  const uploadMs = performance.now() - started;
  // Requests still out when the upload answered were sent during it: stop() waits for them.
  const s = await probe.stop();
  loop.disable();
  console.log(`upload answered in ${(uploadMs / 1000).toFixed(2)} s`);
  console.log(
    `GET /v1/status every ${PROBE_MS} ms from another process during it: ${s.count} requests, p50 ${s.p50.toFixed(1)} ms, ` +
      `p99 ${s.p99.toFixed(1)} ms, max ${s.max.toFixed(1)} ms, ${s.failed} failed`,
  );
  console.log(
    `this client's own event-loop delay meanwhile: p99 ${(loop.percentile(99) / 1e6).toFixed(1)} ms, max ${(loop.max / 1e6).toFixed(1)} ms`,
  );
} finally {
  await server?.stop();
  await rm(dataDir, { recursive: true, force: true });
}
