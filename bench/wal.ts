/**
 * Does the SQLite write-ahead log stay bounded under sustained mixed load? (issue 26, item 12: it
 * grew 246 → 786 MB in 45 s while the database went 21 → 42 MB, and stayed that size until a
 * clean shutdown.) Against the real `railyard serve` (built binary, embedded SQLite, sandbox
 * forge) over HTTP on 127.0.0.1, for DURATION seconds (default 600):
 *   - 3 uploaders: flaky-test uploads of 2,000 results each (a quarter of them new tests), back to back;
 *   - 2 queue clients: submit / cancel / restart PRs on 20 queues, back to back;
 *   - 2 readers: getQueue, listQueues, list-failing-tests, back to back;
 * and samples the size of `railyard.sqlite-wal` and of the database every second.
 * Goal: the WAL stays under 64 MB for the whole run.
 *
 *   npm run build && npx tsx bench/wal.ts
 *   DURATION=60 npx tsx bench/wal.ts
 *   BIN=/path/to/other/checkout/bin/run.js DURATION=60 npx tsx bench/wal.ts   # another build
 */
import { statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnServe, type ServeProcess } from '../test/support/serve.js';

const DURATION_S = Number(process.env.DURATION ?? 600);
const GOAL_BYTES = 64 * 1024 * 1024;
const TOKEN = 'bench-token';
const REPO = { host: 'github.com', owner: 'acme', name: 'web' };
const MB = 1024 * 1024;

function report(seed: number, count: number, newFrom: number): string {
  const parts = ['<testsuites>'];
  for (let k = 0; k < count; k++) {
    const id = k < count * 0.75 ? k : newFrom + k;
    if (k % 200 === 0) parts.push(`${k ? '</testsuite>' : ''}<testsuite name="module ${Math.floor(id / 200)}">`);
    const attrs = `classname="m${Math.floor(id / 200)}.Spec" name="case ${id}"`;
    parts.push((k + seed) % 23 === 0 ? `<testcase ${attrs}><failure message="boom ${seed}"/></testcase>` : `<testcase ${attrs}/>`);
  }
  parts.push('</testsuite></testsuites>');
  return parts.join('\n');
}

let server: ServeProcess | null = null;
const dataDir = await mkdtemp(join(tmpdir(), 'railyard-wal-bench-'));
try {
  server = await spawnServe(['--sandbox', '--data-dir', dataDir, '--token', TOKEN], process.env, { bin: process.env.BIN });
  const api = server.url;
  const errorsSeen = new Set<string>();
  const post = async (op: string, body: unknown) => {
    const res = await fetch(`${api}/${op}`, {
      method: 'POST',
      headers: { 'x-api-token': TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status !== 200 && errorsSeen.size < 5) errorsSeen.add(`${op} ${res.status} ${text.slice(0, 160)}`);
    return res.status;
  };
  const queues = Array.from({ length: 20 }, (_, i) => ({ repo: REPO, targetBranch: `release-${i}` }));
  for (const q of queues) await post('createQueue', { ...q, concurrency: 4 });

  const walFile = join(dataDir, 'railyard.sqlite-wal');
  const dbFile = join(dataDir, 'railyard.sqlite');
  const size = (f: string) => {
    try {
      return statSync(f).size;
    } catch {
      return 0;
    }
  };
  console.log(`WAL under mixed load for ${DURATION_S} s; ${cpus().length} CPUs, load ${loadavg()[0].toFixed(1)}, Node ${process.version}`);
  const end = Date.now() + DURATION_S * 1000;
  const counts = { uploads: 0, queueOps: 0, reads: 0, errors: 0 };
  let maxWal = 0;
  const samples: string[] = [];
  const sampler = setInterval(() => {
    const wal = size(walFile);
    maxWal = Math.max(maxWal, wal);
    samples.push(`${(wal / MB).toFixed(1)}`);
  }, 1000);
  let seq = 0;
  const uploader = async (n: number) => {
    while (Date.now() < end) {
      const s = seq++;
      const status = await post('flaky-tests/upload-test-results', {
        repo: REPO,
        org_url_slug: 'local',
        branch: s % 3 ? 'main' : `feature-${s % 50}`,
        sha: (0x100000 + s).toString(16),
        reports: [{ name: `junit-${n}.xml`, content: report(s, 2000, 1_000_000 + s * 500) }],
      });
      if (status === 200) counts.uploads++;
      else counts.errors++;
    }
  };
  const queueClient = async (n: number) => {
    let pr = n * 1_000_000;
    while (Date.now() < end) {
      const q = queues[pr % queues.length];
      const number = ++pr;
      for (const [op, body] of [
        ['submitPullRequest', { ...q, pr: { number } }],
        ['restartTestsOnPullRequest', { ...q, pr: { number } }],
        ['cancelPullRequest', { ...q, pr: { number } }],
      ] as const) {
        const status = await post(op, body);
        if (status === 200) counts.queueOps++;
        else counts.errors++;
      }
    }
  };
  const reader = async () => {
    while (Date.now() < end) {
      const now = Date.now();
      for (const [op, body] of [
        ['getQueue', queues[counts.reads % queues.length]],
        ['listQueues', {}],
        [
          'flaky-tests/list-failing-tests',
          {
            repo: REPO,
            org_url_slug: 'local',
            start_time: new Date(now - 86_400_000).toISOString(),
            end_time: new Date(now + 60_000).toISOString(),
            page_query: { page_size: 100 },
          },
        ],
      ] as const) {
        const status = await post(op, body);
        if (status === 200) counts.reads++;
        else counts.errors++;
      }
    }
  };
  await Promise.all([uploader(0), uploader(1), uploader(2), queueClient(0), queueClient(1), reader(), reader()]);
  clearInterval(sampler);
  console.log(
    `${counts.uploads} uploads (${(counts.uploads * 2000).toLocaleString('en')} results), ${counts.queueOps} queue operations, ${counts.reads} reads, ${counts.errors} errors`,
  );
  console.log(`database ${(size(dbFile) / MB).toFixed(1)} MB at the end; WAL at the end ${(size(walFile) / MB).toFixed(1)} MB, max ${(maxWal / MB).toFixed(1)} MB (goal < 64 MB: ${maxWal < GOAL_BYTES ? 'met' : 'NOT met'})`);
  for (const e of errorsSeen) console.log(`error: ${e}`);
  if (errorsSeen.size && process.env.WAL_DEBUG)
    console.log((server.output().stderr + server.output().stdout).split('\n').filter((l) => l.includes('"level":50')).slice(0, 2).join('\n').slice(0, 3000));
  console.log(`WAL MB, one sample a second: ${samples.join(' ')}`);
} finally {
  await server?.stop();
  await rm(dataDir, { recursive: true, force: true });
}
