/**
 * Unverified webhook bodies sent the way an attacker would (no valid signature or token): many
 * connections to a hook route, each declaring a large Content-Length and sending most of it, held
 * open. Measures the server's resident memory (VmRSS from /proc) and `/v1/status` latency while
 * they are held. Used by the webhook tests and by bench/attacks.ts; all traffic goes to 127.0.0.1.
 */
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';

/** Resident memory of a process in KiB (VmRSS), or 0 when it is gone. */
export function rssKb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

export interface FloodOptions {
  /** The hook URL (`http://127.0.0.1:PORT/webhooks/github`). */
  url: string;
  /** Headers beside Host and Content-Length (the bogus signature or token). */
  headers: Record<string, string>;
  connections: number;
  /** The Content-Length each declares. */
  declared: number;
  /** How much of it each sends before holding the connection open. */
  send: number;
  /** The server process, for VmRSS. */
  pid: number;
  /** `/v1/status`, probed while the connections are held. */
  statusUrl: string;
  /** How long the connections are held after the last byte is sent or refused (ms). */
  holdMs?: number;
}

export interface FloodResult {
  rssBeforeKb: number;
  rssPeakKb: number;
  /** Answers the server gave the flooding connections, by status (`none`: still reading). */
  answers: Record<string, number>;
  /** Latencies of /v1/status while the connections were held (ms), and how many failed. */
  statusMs: number[];
  statusFailures: number;
  /** Whether the server process was still alive at the end. */
  alive: boolean;
}

/** The p-th percentile (0..100) of `values`. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function floodUnverified(o: FloodOptions): Promise<FloodResult> {
  const url = new URL(o.url);
  const chunk = Buffer.alloc(1024 * 1024, 'x');
  const rssBeforeKb = rssKb(o.pid);
  let rssPeakKb = rssBeforeKb;
  const sampler = setInterval(() => (rssPeakKb = Math.max(rssPeakKb, rssKb(o.pid))), 20);
  const sockets: Array<{ socket: Socket; answered: boolean }> = [];
  const answers: Record<string, number> = {};
  const statusMs: number[] = [];
  let statusFailures = 0;
  let probing = true;
  const prober = (async () => {
    while (probing) {
      const t0 = performance.now();
      try {
        const res = await fetch(o.statusUrl, { signal: AbortSignal.timeout(5_000) });
        await res.arrayBuffer();
        if (res.status === 200) statusMs.push(performance.now() - t0);
        else statusFailures++;
      } catch {
        statusFailures++;
      }
      await new Promise((r) => setTimeout(r, 25));
    }
  })();
  const one = () =>
    new Promise<void>((resolve) => {
      const socket = connect(Number(url.port), url.hostname);
      const entry = { socket, answered: false };
      sockets.push(entry);
      let head = '';
      const done = () => resolve();
      socket.on('error', done);
      socket.on('close', done);
      socket.on('data', (d: Buffer) => {
        if (entry.answered) return;
        head += d.toString('latin1');
        const m = /^HTTP\/1\.1 (\d{3})/.exec(head);
        if (m) {
          entry.answered = true;
          answers[m[1]!] = (answers[m[1]!] ?? 0) + 1;
        }
      });
      socket.on('connect', () => {
        const lines = [`POST ${url.pathname} HTTP/1.1`, `Host: ${url.host}`, `Content-Length: ${o.declared}`];
        for (const [k, v] of Object.entries(o.headers)) lines.push(`${k}: ${v}`);
        socket.write(lines.join('\r\n') + '\r\n\r\n');
        let sent = 0;
        const pump = () => {
          while (sent < o.send && !socket.destroyed) {
            const n = Math.min(chunk.length, o.send - sent);
            sent += n;
            if (!socket.write(n === chunk.length ? chunk : chunk.subarray(0, n)))
              return void socket.once('drain', pump);
          }
          done();
        };
        pump();
      });
    });
  await Promise.all(Array.from({ length: o.connections }, one));
  // Held open: the server has what it was sent; the memory it keeps for it shows now. Then, on a
  // loaded machine, up to 10 s more for answers still on their way (a fixed wait alone once
  // counted 14 of 40 as unanswered in a whole CI run, 2026-12-03).
  await new Promise((r) => setTimeout(r, o.holdMs ?? 1_500));
  // Done once no answer has come for 500 ms (the bodies the server holds are never answered).
  const waiting = () => sockets.filter((s) => !s.answered && !s.socket.destroyed).length;
  let last = waiting();
  let quietSince = Date.now();
  for (const end = Date.now() + 10_000; last > 0 && Date.now() < end && Date.now() - quietSince < 500; ) {
    await new Promise((r) => setTimeout(r, 50));
    const now = waiting();
    if (now !== last) quietSince = Date.now();
    last = now;
  }
  probing = false;
  await prober;
  clearInterval(sampler);
  rssPeakKb = Math.max(rssPeakKb, rssKb(o.pid));
  const unanswered = sockets.filter((s) => !s.answered).length;
  if (unanswered > 0) answers.none = unanswered;
  for (const s of sockets) s.socket.destroy();
  return { rssBeforeKb, rssPeakKb, answers, statusMs, statusFailures, alive: alive(o.pid) };
}
