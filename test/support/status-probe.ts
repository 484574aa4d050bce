/**
 * Asks `GET /v1/status` on a fixed schedule (every `intervalMs`, default 20 ms) from ANOTHER
 * process, the way a load balancer or a monitor does, and reports the latencies when stopped.
 *
 * Why another process and a fixed schedule: a probe in the process that also sends a big upload
 * shares that process's event loop (serialising 11 MiB of JSON delays it), and a probe that waits
 * for each answer before sleeping again sends ONE request during a 500 ms stall where a monitor
 * sends 25 — it under-counts stalls (coordinated omission). Here each request's latency runs from
 * the time it was due, and requests never wait for each other (keep-alive sockets, no limit).
 */
import { spawn } from 'node:child_process';

export interface ProbeSummary {
  count: number;
  failed: number;
  p50: number;
  p99: number;
  max: number;
}

/** One answer: when its request was due (ms since the epoch, `performance.timeOrigin + performance.now()`) and its latency (ms). */
export interface ProbeSample {
  at: number;
  ms: number;
}

export interface StatusProbe {
  /** Stops sending, waits for the answers still out, and summarises (ms), with every sample. */
  stop(): Promise<ProbeSummary & { samples: ProbeSample[] }>;
}

const CHILD = String.raw`
const http = require('node:http');
const [url, interval] = [process.argv[1], Number(process.argv[2])];
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
const samples = [];
let failed = 0, out = 0, stopping = false;
const start = performance.now();
let n = 0;
function finish() {
  if (!stopping || out > 0) return;
  process.stdout.write(JSON.stringify({ samples, failed }) + '\n', () => process.exit(0));
}
function one(due) {
  out++;
  const req = http.get(url, { agent }, (res) => {
    res.resume();
    res.on('end', () => { samples.push([performance.timeOrigin + due, performance.now() - due]); out--; finish(); });
  });
  req.on('error', () => { failed++; out--; finish(); });
  req.setTimeout(30000, () => req.destroy());
}
function tick() {
  if (stopping) return;
  const due = start + n * interval;
  n++;
  one(due);
  setTimeout(tick, Math.max(0, start + n * interval - performance.now()));
}
process.stdin.on('data', () => { stopping = true; finish(); });
process.stdout.write('ready\n');
tick();
`;

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;

/** p50, p99 and max of latencies (ms), e.g. of the samples of one kind of window. */
export function summarise(latencies: number[], failed = 0): ProbeSummary {
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    count: sorted.length,
    failed,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1] ?? NaN,
  };
}

/** Starts probing `statusUrl` (e.g. `http://127.0.0.1:PORT/v1/status`); resolves once the first request is out. */
export async function startStatusProbe(statusUrl: string, intervalMs = 20): Promise<StatusProbe> {
  const child = spawn(process.execPath, ['-e', CHILD, statusUrl, String(intervalMs)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const check = () => (out.includes('ready\n') ? resolve() : undefined);
    child.stdout.on('data', check);
    void exited.then(() => reject(new Error(`status probe exited early: ${out}`)));
  });
  return {
    async stop() {
      child.stdin.end('stop\n');
      await exited;
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (!line) throw new Error(`status probe gave no figures: ${out}`);
      const parsed = JSON.parse(line) as { samples: Array<[number, number]>; failed: number };
      const samples = parsed.samples.map(([at, ms]) => ({ at, ms }));
      return {
        ...summarise(
          samples.map((s) => s.ms),
          parsed.failed,
        ),
        samples,
      };
    },
  };
}
