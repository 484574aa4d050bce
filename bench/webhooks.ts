/**
 * Outgoing webhooks under load (issue 25's figures), against the real `railyard serve` (built,
 * SQLite, sandbox) in a child process, with two receivers on 127.0.0.1 in this process:
 *
 *   A. 60 s of queue traffic making 100 events/s (submit + cancel of new PRs), no endpoint:
 *      the queue's request latency without webhooks. Measured in two halves, before and after B
 *      (A B A, endpoints deleted for the second half), so that A and B see the same database size
 *      on average: B run after the whole of A costs more by that alone (ORDER=AB: the old order).
 *   B. The same with two endpoints: request latency again (goal p99 within 10 % of A), delivery
 *      latency from the state change (payload timestamp) to arrival (goal p95 <= 1 s), lost events
 *      (goal 0: every submitted and canceled event reaches both receivers).
 *   C. Both receivers answer 503 for OUTAGE_SECONDS while the traffic goes on, then recover:
 *      the queue's request latency and failed requests DURING the outage (goal: it keeps answering),
 *      then the time until the backlog is drained (goal: within 2 minutes for a 10-minute outage).
 *
 *   npm run build && npx tsx bench/webhooks.ts                  # OUTAGE_SECONDS=600 by default
 *   OUTAGE_SECONDS=60 SECONDS=60 npx tsx bench/webhooks.ts      # a shorter outage (say so when recording)
 *   BIN=/other/checkout/bin/run.js npx tsx bench/webhooks.ts     # another build (same-minute A/B)
 *   NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof' npx tsx bench/webhooks.ts   # profile the server (every thread)
 *   B_ENDPOINTS=0 SECONDS=60 OUTAGE_SECONDS=0 npx tsx bench/webhooks.ts   # control: B without endpoints (B's place after A)
 *   ORDER=AB SECONDS=60 OUTAGE_SECONDS=0 npx tsx bench/webhooks.ts         # A whole before B (as before 2026-11-27)
 *
 * `uptime` is printed before and after each phase: on a shared machine the load says what the
 * figures are worth. So is the CPU time of the server's threads in A and B (Linux, from /proc):
 * the request thread's CPU-s moves far less with the load than p99 does, so A/B pairs on a busy
 * machine still say which build makes the request thread work more.
 */
import { execFileSync, fork } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnServe } from '../test/support/serve.js';
import type { Mode } from '../test/support/webhook-receiver.js';
import type { FromReceivers, ToReceivers } from './webhook-receivers.js';

/** A receiver in the receivers' process (bench/webhook-receivers.ts), as the bench reads it. */
interface Receiver {
  url: string;
  delivered: { json: { type: string; pr_number: number; timestamp: string }; at: number }[];
}

/** Starts the two receivers in a process of their own: setMode switches both, close stops them. */
async function startReceivers(): Promise<{ receivers: Receiver[]; setMode(mode: Mode): void; close(): Promise<void> }> {
  const child = fork(new URL('./webhook-receivers.ts', import.meta.url), { execArgv: ['--import', 'tsx'] });
  const receivers: Receiver[] = [];
  let closed: () => void = () => undefined;
  const ready = new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the receivers exited (${code}) before they listened`)));
    child.on('message', (m: FromReceivers) => {
      if (m === 'closed') closed();
      else if ('urls' in m) {
        for (const url of m.urls) receivers.push({ url, delivered: [] });
        resolve();
      } else for (const d of m.delivered) receivers[d.receiver].delivered.push({ json: { type: d.type, pr_number: d.pr, timestamp: d.timestamp }, at: d.at });
    });
  });
  await ready;
  return {
    receivers,
    setMode: (mode) => child.send({ mode } satisfies ToReceivers),
    close: async () => {
      const done = new Promise<void>((resolve) => (closed = resolve));
      child.send('close' satisfies ToReceivers);
      await done;
      child.disconnect();
    },
  };
}

const SECONDS = Number(process.env.SECONDS ?? 60);
const OUTAGE_SECONDS = Number(process.env.OUTAGE_SECONDS ?? 600);
/** Endpoints in phase B (and C): 2; 0 makes B a control, the same traffic again without webhooks. */
const B_ENDPOINTS = Number(process.env.B_ENDPOINTS ?? 2);
/**
 * ABA (default): half of A before B, half after it with the endpoints deleted, pooled. The database
 * grows through the run, and B after the whole of A ran on a bigger one: B without endpoints
 * (B_ENDPOINTS=0) cost ~2 CPU-s of the request thread and +4.4 % p99 more than A by that alone
 * (bench/README.md, 2026-11-27). AB: A whole, then B.
 */
const ORDER = process.env.ORDER ?? 'ABA';
if (ORDER !== 'ABA' && ORDER !== 'AB') throw new Error(`ORDER must be ABA or AB, not ${ORDER}`);
const EVENTS_PER_SECOND = 100;
const TOKEN = 'bench-token';
const REPO = { host: 'github.com', owner: 'acme', name: 'web' };

/** The machine's load, as `uptime` prints it (load averages from os.loadavg() where uptime is missing). */
function uptime(label: string): void {
  let line: string;
  try {
    line = execFileSync('uptime', { encoding: 'utf8' }).trim();
  } catch {
    line = `load average: ${loadavg().map((l) => l.toFixed(2)).join(', ')}`;
  }
  console.log(`  [${new Date().toISOString()}] ${label}: ${line}`);
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
};

/** Clock ticks per second of /proc's CPU times. */
const TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' })) || 100;
  } catch {
    return 100;
  }
})();

/** CPU seconds (user + system) of each thread of process `pid` so far, by thread id; empty where /proc is missing. */
function threadCpu(pid: number | undefined): Map<number, number> {
  const out = new Map<number, number>();
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(Number(tid), (Number(fields[11]) + Number(fields[12])) / TICKS);
    }
  } catch {
    // not Linux, or the server is gone
  }
  return out;
}

/** CPU seconds each thread used between two threadCpu samples; spans of one phase (A's halves) added up. */
function cpuUsed(...spans: [Map<number, number>, Map<number, number>][]): Map<number, number> {
  const used = new Map<number, number>();
  for (const [before, after] of spans) for (const [tid, s] of after) used.set(tid, (used.get(tid) ?? 0) + s - (before.get(tid) ?? 0));
  return used;
}

/** The server's CPU of a phase (cpuUsed): its request (main) thread, the busiest other thread, all the others. */
function cpuLine(pid: number | undefined, usedByThread: Map<number, number>): string {
  if (!usedByThread.size) return 'server CPU: not measured (no /proc)';
  const used = [...usedByThread];
  const main = used.find(([tid]) => tid === pid)?.[1] ?? 0;
  const others = used.filter(([tid]) => tid !== pid).sort((x, y) => y[1] - x[1]);
  const rest = others.reduce((n, [, s]) => n + s, 0);
  return `server CPU: request thread ${main.toFixed(2)} s, other threads ${rest.toFixed(2)} s (busiest ${(others[0]?.[1] ?? 0).toFixed(2)} s)`;
}

/** p99 of each 10 s window of a phase, to tell a stall or a climb from a steady cost. */
const perWindow = (windows: number[][]) => windows.map((w) => pct(w, 99).toFixed(0)).join(' ');

async function main(): Promise<void> {
  // First, and in a process of their own (serving the deliveries on this loop counted their time
  // as the server's); it exits when this process does, so a server that fails to start leaves nothing.
  const hooks = await startReceivers();
  const receivers = hooks.receivers;
  const dir = await mkdtemp(join(tmpdir(), 'railyard-bench-'));
  const server = await spawnServe(
    ['--data-dir', dir, '--sandbox', '--sandbox-test-seconds', '3600', '--webhook-allow-private', '--webhook-allow-http', '--log-level', 'error', '--max-prs-per-queue', '100000'],
    { ...process.env, RAILYARD_SERVER_TOKEN: TOKEN },
    { bin: process.env.BIN, nodeArgs: process.env.NODE_ARGS?.split(' ').filter(Boolean) },
  );
  const api = async (op: string, body: unknown): Promise<{ ms: number; json: any }> => { // eslint-disable-line @typescript-eslint/no-explicit-any
    const t0 = performance.now();
    const res = await fetch(`${server.url}/${op}`, { method: 'POST', headers: { 'x-api-token': TOKEN, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const text = await res.text();
    const ms = performance.now() - t0;
    if (res.status !== 200) throw new Error(`${op}: ${res.status} ${text}`);
    return { ms, json: text ? JSON.parse(text) : {} };
  };
  try {
    await api('createQueue', { repo: REPO, targetBranch: 'main', concurrency: 1 });
    let nextPr = 1;
    /** Submit + cancel of a new PR each tick: submitted, canceled (and queued when admitted) = ~3 events. */
    const traffic = async (seconds: number) => {
      const latencies: number[] = [];
      /** Per 10 s of the phase (by when the pair was sent): request latencies, to tell a stall from a steady cost. */
      const windows: number[][] = [];
      const t0 = performance.now();
      const prs: number[] = [];
      let errors = 0;
      const reasons = new Set<string>();
      const pairsPerSecond = EVENTS_PER_SECOND / 3;
      const end = performance.now() + seconds * 1000;
      const inFlight = new Set<Promise<void>>();
      let due = performance.now();
      while (performance.now() < end) {
        const pr = nextPr++;
        prs.push(pr);
        const p = (async () => {
          const key = { repo: REPO, targetBranch: 'main', pr: { number: pr } };
          const window = (windows[Math.floor((performance.now() - t0) / 10_000)] ??= []);
          for (const op of ['submitPullRequest', 'cancelPullRequest']) {
            const { ms } = await api(op, key);
            latencies.push(ms);
            window.push(ms);
          }
        })()
          .catch((error: unknown) => {
            errors += 1;
            const message = error instanceof Error ? `${error.message}${error.cause instanceof Error ? ` (${error.cause.message})` : ''}` : String(error);
            if (reasons.size < 3) reasons.add(message.slice(0, 200));
            prs.splice(prs.indexOf(pr), 1);
          })
          .finally(() => inFlight.delete(p));
        inFlight.add(p);
        due += 1000 / pairsPerSecond;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      }
      await Promise.all(inFlight);
      if (errors) console.log(`  ${errors} submit/cancel pairs failed (not counted as events); first reasons: ${[...reasons].join(' | ')}`);
      return { latencies, prs, errors, windows };
    };
    const received = (r: Receiver, type: string) => new Set(r.delivered.filter((d) => d.json.type === type).map((d) => Number(d.json.pr_number)));
    const lost = (prs: number[]) =>
      receivers.slice(0, B_ENDPOINTS).map((r) => {
        const submitted = received(r, 'pull_request.submitted');
        const canceled = received(r, 'pull_request.canceled');
        return prs.filter((pr) => !submitted.has(pr)).length + prs.filter((pr) => !canceled.has(pr)).length;
      });
    const waitFor = async (ok: () => boolean, timeoutMs: number) => {
      const t0 = performance.now();
      while (!ok()) {
        if (performance.now() - t0 > timeoutMs) return null;
        await new Promise((r) => setTimeout(r, 100));
      }
      return performance.now() - t0;
    };

    console.log(`webhooks bench: ${SECONDS} s at ${EVENTS_PER_SECOND} events/s, outage ${OUTAGE_SECONDS} s`);
    const pid = server.child.pid;
    const aSeconds = ORDER === 'ABA' ? SECONDS / 2 : SECONDS;
    const cpuStart = threadCpu(pid);
    uptime('start');
    const a1 = await traffic(aSeconds);
    const cpuA = threadCpu(pid);
    uptime(ORDER === 'ABA' ? 'after the first half of A' : 'after A');

    // B_ENDPOINTS=0: a control run, B without endpoints (what B's place after A costs by itself: a bigger database).
    const createEndpoints = async () => {
      const ids: string[] = [];
      for (const r of receivers.slice(0, B_ENDPOINTS)) ids.push((await api('createWebhook', { url: r.url })).json.endpoint.id);
      return ids;
    };
    let endpoints = await createEndpoints();
    const cpuB0 = threadCpu(pid);
    const b = await traffic(SECONDS);
    const cpuB = threadCpu(pid);
    uptime('after B');
    await waitFor(() => lost(b.prs).every((n) => n === 0), 60_000);
    let a = a1;
    let cpuOfA = cpuUsed([cpuStart, cpuA]);
    if (ORDER === 'ABA') {
      // The second half of A: no endpoint again (deleted, so no event is written), once B's deliveries arrived.
      for (const id of endpoints) await api('deleteWebhook', { id });
      endpoints = [];
      const cpuA20 = threadCpu(pid);
      const a2 = await traffic(aSeconds);
      cpuOfA = cpuUsed([cpuStart, cpuA], [cpuA20, threadCpu(pid)]);
      uptime('after the second half of A');
      a = { latencies: [...a1.latencies, ...a2.latencies], prs: [...a1.prs, ...a2.prs], errors: a1.errors + a2.errors, windows: [...a1.windows, ...a2.windows] };
    }
    console.log(`A no endpoint${ORDER === 'ABA' ? ' (halves before and after B)' : ''}  requests ${a.latencies.length}  failed pairs ${a.errors}  p50 ${pct(a.latencies, 50).toFixed(1)} ms  p99 ${pct(a.latencies, 99).toFixed(1)} ms`);
    console.log(`  p99 per 10 s (ms): ${perWindow(a.windows)}`);
    console.log(`  ${cpuLine(pid, cpuOfA)}`);
    const delays = receivers.flatMap((r) => r.delivered.map((d) => d.at - Date.parse(String(d.json.timestamp))));
    const events = receivers.reduce((n, r) => n + r.delivered.length, 0);
    console.log(`B ${B_ENDPOINTS} endpoints${B_ENDPOINTS === 2 ? '' : ' (control)'}  requests ${b.latencies.length}  failed pairs ${b.errors}  p50 ${pct(b.latencies, 50).toFixed(1)} ms  p99 ${pct(b.latencies, 99).toFixed(1)} ms  (p99 ${(((pct(b.latencies, 99) / pct(a.latencies, 99)) - 1) * 100).toFixed(1)} % vs A)`);
    console.log(`  p99 per 10 s (ms): ${perWindow(b.windows)}`);
    console.log(`  ${cpuLine(pid, cpuUsed([cpuB0, cpuB]))}`);
    console.log(`  deliveries ${events} in ${SECONDS} s (${(events / SECONDS).toFixed(0)}/s)  delay p50 ${pct(delays, 50)} ms  p95 ${pct(delays, 95)} ms  p99 ${pct(delays, 99)} ms  max ${pct(delays, 100)} ms  lost ${lost(b.prs).join(' + ')}`);

    if (OUTAGE_SECONDS > 0 && endpoints.length === 0 && B_ENDPOINTS > 0) endpoints = await createEndpoints();
    hooks.setMode({ kind: 'status', status: 503 });
    const c = await traffic(OUTAGE_SECONDS);
    uptime('outage over');
    console.log(
      `C during the outage  requests ${c.latencies.length}  failed submit/cancel pairs ${c.errors}  p50 ${pct(c.latencies, 50).toFixed(1)} ms  p99 ${pct(c.latencies, 99).toFixed(1)} ms  (p99 ${((pct(c.latencies, 99) / pct(a.latencies, 99) - 1) * 100).toFixed(1)} % vs A)`,
    );
    console.log(`  p99 per 10 s of the outage (ms): ${perWindow(c.windows)}`);
    const before = receivers.reduce((n, r) => n + r.delivered.length, 0);
    hooks.setMode({ kind: 'ok' });
    const drained = await waitFor(() => lost(c.prs).every((n) => n === 0), 600_000);
    const sent = receivers.reduce((n, r) => n + r.delivered.length, 0) - before;
    uptime('drained');
    console.log(
      `C outage ${OUTAGE_SECONDS} s (${c.prs.length} PRs, ~${c.prs.length * 3 * 2} deliveries): backlog drained ${drained === null ? 'NOT within 10 min' : `${(drained / 1000).toFixed(1)} s`} after recovery (${sent} deliveries${drained ? `, ${(sent / (drained / 1000)).toFixed(0)}/s` : ''}); lost ${lost(c.prs).join(' + ')}`,
    );
  } finally {
    // What the server logged as errors (run with --log-level error): the cause of any failed pair.
    const { stdout, stderr } = server.output();
    const errors = `${stdout}\n${stderr}`.split('\n').filter((l) => /"level":(50|60)/.test(l));
    if (errors.length) console.log(`  server errors: ${errors.length}; first: ${errors.slice(0, 3).map((l) => l.slice(0, 1500)).join('\n    ')}`);
    await server.stop();
    await hooks.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
