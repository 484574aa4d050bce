/**
 * A minimal GitHub Issues stand-in for the ticket benchmarks (bench/flaky.ts, TICKETS=1): answers
 * create, get, update, comment and list like GitHub's REST API (the fields Railyard reads), in
 * memory, and counts what it was asked: tickets opened, and openings per test marker (a marker
 * opened twice is a duplicate ticket).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface BenchTracker {
  url: string;
  opened: number;
  /** Marker → tickets opened with it. */
  byMarker: Map<string, number>;
  /** When each ticket was opened (ms, performance.now()). */
  openedAt: number[];
  close(): Promise<void>;
}

export async function startBenchTracker(): Promise<BenchTracker> {
  const issues = new Map<number, { state: string; closed_at: string | null; body: string }>();
  const t: BenchTracker = { url: '', opened: 0, byMarker: new Map(), openedAt: [], close: async () => {} };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = chunks.length
        ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>)
        : {};
      const url = new URL(req.url ?? '/', 'http://x');
      const m = /^\/repos\/[^/]+\/[^/]+\/issues(?:\/(\d+))?(\/comments)?$/.exec(url.pathname);
      const send = (status: number, json: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(json));
      };
      if (!m) return send(404, { message: 'Not Found' });
      const n = m[1] ? Number(m[1]) : undefined;
      const answer = (num: number) => {
        const i = issues.get(num)!;
        return {
          number: num,
          html_url: `https://github.example/acme/tracker/issues/${num}`,
          state: i.state,
          closed_at: i.closed_at,
          body: i.body,
          created_at: new Date().toISOString(),
        };
      };
      if (req.method === 'POST' && n === undefined) {
        const num = issues.size + 1;
        const text = String(body.body ?? '');
        issues.set(num, { state: 'open', closed_at: null, body: text });
        const marker = /<!-- (railyard-test-[0-9a-f]+) -->/.exec(text)?.[1] ?? '?';
        t.byMarker.set(marker, (t.byMarker.get(marker) ?? 0) + 1);
        t.opened++;
        t.openedAt.push(performance.now());
        return send(201, answer(num));
      }
      if (req.method === 'GET' && n === undefined) return send(200, [...issues.keys()].map(answer));
      if (n === undefined || !issues.has(n)) return send(404, { message: 'Not Found' });
      if (m[2]) return send(201, { id: 1, body: body.body });
      if (req.method === 'PATCH') {
        const i = issues.get(n)!;
        i.state = String(body.state ?? i.state);
        i.closed_at = i.state === 'closed' ? new Date().toISOString() : null;
      }
      return send(200, answer(n));
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  t.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.close = () => new Promise((done) => server.close(() => done()));
  return t;
}
