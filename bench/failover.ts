/**
 * Failover time between replicas on PostgreSQL: two `railyard serve --sandbox` processes share a
 * throwaway database; the one driving the queue (the pid in its lease) is killed with SIGKILL while
 * PRs are testing, and the clock runs until the survivor holds the lease and until it lands the next
 * PR. A new replica replaces the dead one before the next kill. Prints p50 / max over the kills.
 *
 *   npm run build && npx tsx bench/failover.ts [kills=7] [lease-seconds=5]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startPostgres } from '../test/support/postgres.js';

const ROOT = new URL('..', import.meta.url).pathname;
const KILLS = Number(process.argv[2] ?? 7);
const LEASE_SECONDS = Number(process.argv[3] ?? 5);
const TOKEN = 'bench-token';
const Q = { repo: { host: 'github.com', owner: 'acme', name: 'app' }, targetBranch: 'main' };

interface Replica {
  child: ChildProcess;
  url: string;
  dir: string;
}

async function replica(databaseUrl: string): Promise<Replica> {
  const dir = mkdtempSync(join(tmpdir(), 'railyard-bench-replica-'));
  const args = ['serve', '--sandbox', '--sandbox-test-seconds', '2', '--port', '0', '--data-dir', dir, '--token', TOKEN];
  const child = spawn(process.execPath, [join(ROOT, 'bin/run.js'), ...args, '--lease-seconds', String(LEASE_SECONDS)], {
    env: { ...process.env, RAILYARD_DATABASE_URL: databaseUrl },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+\/v1)/.exec(out);
      if (m) resolve(m[1]);
    });
    child.on('exit', (code) => reject(new Error(`serve exited ${code}: ${out}`)));
  });
  return { child, url, dir };
}

async function api(r: Replica, op: string, body: unknown): Promise<{ status: number; json: { state?: string } }> {
  const res = await fetch(`${r.url}/${op}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-token': TOKEN },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : {} };
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

async function main(): Promise<void> {
  const cluster = await startPostgres();
  const databaseUrl = await cluster.createDatabase();
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  const replicas: Replica[] = [await replica(databaseUrl)];
  const takeover: number[] = [];
  const nextMerge: number[] = [];
  try {
    if ((await api(replicas[0], 'createQueue', { ...Q, concurrency: 2 })).status !== 200) throw new Error('createQueue failed');
    replicas.push(await replica(databaseUrl));
    let pr = 0;
    for (let kill = 1; kill <= KILLS; kill++) {
      // Work in flight: two PRs testing.
      const batch = [++pr, ++pr];
      for (const n of batch) await api(replicas[1], 'submitPullRequest', { ...Q, pr: { number: n } });
      await new Promise((r) => setTimeout(r, 500));
      const lease = (await db.query<{ holder: string; fence: string }>('SELECT holder, fence FROM queue_leases')).rows[0];
      const driverPid = Number(lease.holder.split('-')[0]);
      const driver = replicas.find((r) => r.child.pid === driverPid);
      if (!driver) throw new Error(`no replica with pid ${driverPid}`);
      const survivor = replicas.find((r) => r !== driver)!;
      const killedAt = performance.now();
      driver.child.kill('SIGKILL');
      for (;;) {
        const now = (await db.query<{ holder: string; fence: string }>('SELECT holder, fence FROM queue_leases')).rows[0];
        if (now.holder !== lease.holder) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      takeover.push(performance.now() - killedAt);
      for (;;) {
        const answer = await api(survivor, 'getSubmittedPullRequest', { ...Q, pr: { number: batch[0] } });
        if (answer.json.state === 'merged') break;
        if (performance.now() - killedAt > 60_000) throw new Error(`#${batch[0]} is ${answer.json.state} a minute after the kill`);
        await new Promise((r) => setTimeout(r, 50));
      }
      nextMerge.push(performance.now() - killedAt);
      console.log(
        `kill ${kill}: lease taken over after ${takeover.at(-1)!.toFixed(0)} ms, #${batch[0]} merged after ${nextMerge.at(-1)!.toFixed(0)} ms`,
      );
      rmSync(driver.dir, { recursive: true, force: true });
      replicas.splice(replicas.indexOf(driver), 1, await replica(databaseUrl));
    }
    console.log(`\nfailover over ${KILLS} kills (lease ${LEASE_SECONDS} s, sandbox runs of 2 s):`);
    console.log(`  lease taken over: p50 ${pct(takeover, 50).toFixed(0)} ms, max ${Math.max(...takeover).toFixed(0)} ms`);
    console.log(`  next PR merged:   p50 ${pct(nextMerge, 50).toFixed(0)} ms, max ${Math.max(...nextMerge).toFixed(0)} ms`);
  } finally {
    for (const r of replicas) {
      r.child.kill('SIGKILL');
      rmSync(r.dir, { recursive: true, force: true });
    }
    await db.end();
    await cluster.close();
  }
}

await main();
