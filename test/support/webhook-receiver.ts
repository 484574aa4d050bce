/**
 * A webhook receiver over real HTTP on 127.0.0.1 for the outgoing-webhook tests: records every
 * request (headers, raw body), verifies it with the `svix` and `standardwebhooks` packages (what
 * receivers of Trunk's deliveries use), and answers as told: 200, an error status, or not at all
 * (a stall, until released).
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  /** Parsed body. */
  json: Record<string, unknown>;
  /** Both packages accepted the signature. */
  verified: boolean;
  at: number;
}

/** How the receiver answers: 200 `ok`, an error status (with `body`, default `receiver says no`), or not at all. */
export type Mode = { kind: 'ok' } | { kind: 'status'; status: number; body?: string } | { kind: 'stall' };

export interface Receiver {
  url: string;
  /** Requests answered 2xx, in arrival order. */
  delivered: Received[];
  /** Every request, whatever it was answered. */
  all: Received[];
  mode: Mode;
  /** Answers 2xx this long after the request arrived (a slow receiver). */
  delayMs: number;
  /** The secrets the verification accepts (any of them). */
  secrets: string[];
  /** Answers the stalled requests (with 200) and stops stalling. */
  release(): void;
  close(): Promise<void>;
}

function verify(secret: string, headers: IncomingHttpHeaders, body: string): boolean {
  const h = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, String(v)]));
  try {
    new SvixWebhook(secret).verify(body, h);
    new StandardWebhook(secret).verify(body, h);
    return true;
  } catch {
    return false;
  }
}

export async function startReceiver(secrets: string[] = []): Promise<Receiver> {
  const stalled: ServerResponse[] = [];
  const receiver: Receiver = {
    url: '',
    delivered: [],
    all: [],
    mode: { kind: 'ok' },
    delayMs: 0,
    secrets,
    release() {
      receiver.mode = { kind: 'ok' };
      for (const res of stalled.splice(0)) if (!res.destroyed) res.end('ok');
    },
    close: async () => {
      receiver.release();
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: Record<string, unknown> = {};
      try {
        json = JSON.parse(body) as Record<string, unknown>;
      } catch {
        // recorded as {}: a test asserting on it fails
      }
      const got: Received = { headers: req.headers, body, json, verified: receiver.secrets.some((s) => verify(s, req.headers, body)), at: Date.now() };
      receiver.all.push(got);
      const mode = receiver.mode;
      if (mode.kind === 'stall') {
        stalled.push(res);
        res.on('close', () => undefined);
        return;
      }
      if (mode.kind === 'status') {
        res.statusCode = mode.status;
        res.end(mode.body ?? 'receiver says no');
        return;
      }
      const answer = () => {
        if (res.destroyed) return;
        receiver.delivered.push(got);
        res.end('ok');
      };
      if (receiver.delayMs > 0) setTimeout(answer, receiver.delayMs);
      else answer();
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', () => done()));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return receiver;
}
