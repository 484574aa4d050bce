/**
 * A server that answers without end: the CLI (the built binary, its node:http transport) and the
 * client the Action uses (global fetch) stop reading at the cap, RAILYARD_MAX_RESPONSE_MIB moves
 * it, and the connection is closed instead of the whole answer being read. The server here is a
 * plain node:http peer streaming a JSON document that never ends, as the attack did.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mqRoutes } from '../../src/contract/routes-mq.js';
import { createClientFor, ResponseTooLargeError } from '../../src/client/core.js';
import { isolatedEnv, railyard } from '../support/cli.js';

const MIB = 1024 * 1024;
let server: Server;
let base = '';
/** Bytes the server got to write to each answer before its reader hung up, by path. */
const sent = new Map<string, number>();

/** Writes `{"prNumber":1,"prTitle":"aaaa…` as fast as the reader takes it, until it hangs up (or `limit` bytes, then ends). */
function stream(
  res: ServerResponse,
  key: string,
  limit = Infinity,
  headers: Record<string, string | number> = {},
) {
  const chunk = Buffer.alloc(256 * 1024, 'a');
  let written = 0;
  res.writeHead(200, { 'content-type': 'application/json', ...headers });
  res.write('{"prNumber":1,"prTitle":"');
  const pump = () => {
    while (written < limit) {
      written += chunk.length;
      sent.set(key, written);
      if (!res.write(chunk)) return;
    }
    res.end('"}');
  };
  res.on('drain', pump);
  res.on('close', () => sent.set(key, written));
  pump();
}

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path.endsWith('/getMergeQueueMetrics')) {
      // 2 MiB of metrics text: over a 1 MiB cap, under a 4 MiB one.
      const line = `mq_depth_current{repo="acme/web"} 1\n`;
      res
        .writeHead(200, { 'content-type': 'text/plain' })
        .end(line.repeat(Math.ceil((2 * MIB) / line.length)));
      return;
    }
    if (req.headers['x-api-token'] === 'trickle') {
      // Headers at once, then a byte now and then: never done.
      res.writeHead(200, { 'content-type': 'application/json' }).write('{');
      const timer = setInterval(() => res.write(' '), 100);
      res.on('close', () => clearInterval(timer));
      return;
    }
    if (req.headers['x-api-token'] === 'declared') {
      // A Content-Length of 300 MB: refused before reading the body.
      stream(res, 'declared', 300e6, { 'content-length': 300e6 + 27 });
      return;
    }
    stream(res, String(req.headers['x-api-token']));
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((done) => server.close(done));
});

const env = (token: string, extra: Record<string, string> = {}) =>
  isolatedEnv({ RAILYARD_API_URL: base, RAILYARD_TOKEN: token, ...extra });

describe('an answer without end', () => {
  it('mq status stops at 64 MiB with an error that says so, within seconds, having read little more', async () => {
    const started = Date.now();
    const result = await railyard(['mq', 'status', '1', '--repo', 'github.com/acme/web'], env('endless'));
    const seconds = (Date.now() - started) / 1000;
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toBe(
      "Error: the server's answer to getSubmittedPullRequest passed 64 MiB; stopped reading (RAILYARD_MAX_RESPONSE_MIB raises the cap)",
    );
    expect(seconds).toBeLessThan(15);
    // It hung up: the server wrote the cap and what the sockets held, not the endless rest.
    await expect.poll(() => sent.get('endless')).toBeGreaterThan(64 * MIB);
    expect(sent.get('endless')!).toBeLessThan(80 * MIB);
  }, 30_000);

  it('a Content-Length past the cap is refused before reading; RAILYARD_MAX_RESPONSE_MIB moves the cap, and a bad value is refused', async () => {
    const declared = await railyard(['mq', 'status', '1', '--repo', 'github.com/acme/web'], env('declared'));
    expect(declared.code).toBe(1);
    expect(declared.stderr).toContain(
      "the server's answer to getSubmittedPullRequest passed 64 MiB; stopped reading",
    );
    expect(sent.get('declared')!).toBeLessThan(40 * MIB);

    const small = await railyard(['mq', 'metrics'], env('metrics', { RAILYARD_MAX_RESPONSE_MIB: '1' }));
    expect(small.code).toBe(1);
    expect(small.stdout).toBe('');
    expect(small.stderr.trim()).toBe(
      "Error: the server's answer to getMergeQueueMetrics passed 1 MiB; stopped reading (RAILYARD_MAX_RESPONSE_MIB raises the cap)",
    );
    const raised = await railyard(['mq', 'metrics'], env('metrics', { RAILYARD_MAX_RESPONSE_MIB: '4' }));
    expect(raised.code).toBe(0);
    expect(raised.stdout.length).toBeGreaterThan(2 * MIB);

    const bad = await railyard(['mq', 'metrics'], env('metrics', { RAILYARD_MAX_RESPONSE_MIB: '64MB' }));
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim()).toBe(
      'Error: RAILYARD_MAX_RESPONSE_MIB: expected a positive number of MiB (e.g. 64 or 0.5), got "64MB"',
    );
  }, 30_000);

  it("the Action's client (global fetch) stops at the cap too", async () => {
    const client = createClientFor(mqRoutes, {
      baseUrl: base,
      token: 'action',
      maxResponseBytes: 8 * MIB,
      retries: 0,
    });
    const call = client.call('getSubmittedPullRequest', {
      repo: { host: 'github.com', owner: 'acme', name: 'web' },
      targetBranch: 'main',
      pr: { number: 1 },
    });
    await expect(call).rejects.toThrow(ResponseTooLargeError);
    await expect(call).rejects.toThrow(
      "the server's answer to getSubmittedPullRequest passed 8 MiB; stopped reading (RAILYARD_MAX_RESPONSE_MIB raises the cap)",
    );
    await expect.poll(() => sent.get('action')).toBeGreaterThan(8 * MIB);
    expect(sent.get('action')!).toBeLessThan(24 * MIB);
  }, 30_000);

  it('an answer that trickles in falls under the time limit of the request', async () => {
    const client = createClientFor(mqRoutes, {
      baseUrl: base,
      token: 'trickle',
      timeoutMs: 1000,
      retries: 0,
    });
    const started = Date.now();
    await expect(
      client.call('getSubmittedPullRequest', {
        repo: { host: 'github.com', owner: 'acme', name: 'web' },
        targetBranch: 'main',
        pr: { number: 1 },
      }),
    ).rejects.toThrow('getSubmittedPullRequest: no answer within 1 s');
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
