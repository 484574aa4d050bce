// The server's answers at the HTTP level, over real HTTP on SQLite: gzip for long answers, and the
// edges (wrong method, unknown path, error codes, invalid JSON, metrics parameters, bodies at and past
// the 20 MiB limit). Behaviour with stored state, on each database: behaviour.test.ts.
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { BODY_LIMIT_BYTES } from '../../src/contract/index.js';
import { sandboxHeadSha } from '../../src/forge/sandbox/index.js';
import type { TestServer } from '../support/server.js';
import { behaviourServers } from './behaviour-helpers.js';
import { call, ok, Q, REPO } from './helpers.js';

const { server, withQueue, withPausedQueue } = behaviourServers();

describe('compression', () => {
  /** getQueue over node:http, which (unlike fetch) shows the encoding and leaves the body as sent. */
  function rawGetQueue(
    s: TestServer,
    acceptEncoding: string,
  ): Promise<{ headers: Record<string, unknown>; body: Buffer }> {
    const url = new URL(`${s.url}/getQueue`);
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        url,
        {
          method: 'POST',
          headers: {
            'x-api-token': s.token,
            'content-type': 'application/json',
            'accept-encoding': acceptEncoding,
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify(Q));
    });
  }

  it('a long queue goes out gzipped to clients that accept gzip, as the same JSON, and changes with the queue', async () => {
    const s = await withPausedQueue();
    for (let n = 1; n <= 60; n++) await ok(s, 'submitPullRequest', { ...Q, pr: { number: n } });
    const plain = await rawGetQueue(s, 'identity');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers.vary).toBe('accept-encoding');
    expect(plain.body.length).toBeGreaterThan(16 * 1024);
    const gz = await rawGetQueue(s, 'gzip, deflate');
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gz.body.length).toBeLessThan(plain.body.length / 4);
    expect(gunzipSync(gz.body)).toEqual(plain.body);
    expect((await rawGetQueue(s, 'gzip;q=0, deflate')).headers['content-encoding']).toBeUndefined();

    await ok(s, 'submitPullRequest', { ...Q, pr: { number: 61 } });
    const after = JSON.parse(gunzipSync((await rawGetQueue(s, 'gzip')).body).toString('utf8'));
    expect(after.enqueuedPullRequests).toHaveLength(61);
    // fetch (what the CLI and the Action use) asks for gzip and decodes it.
    expect((await ok(s, 'getQueue', Q)).enqueuedPullRequests).toHaveLength(61);
  });

  it('a short answer is sent as it is', async () => {
    const s = await withQueue();
    const small = await rawGetQueue(s, 'gzip');
    expect(small.headers['content-encoding']).toBeUndefined();
    expect(JSON.parse(small.body.toString('utf8')).enqueuedPullRequests).toEqual([]);
  });
});

describe('HTTP edges', () => {
  it('405 with Allow for a known path with the wrong method; 404 for an unknown path', async () => {
    const s = await server();
    let res = await fetch(`${s.url}/getQueue`, { headers: { 'x-api-token': s.token } });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    res = await fetch(`${s.url}/getMergeQueueMetrics`, {
      method: 'POST',
      headers: { 'x-api-token': s.token },
    });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    expect(res.headers.get('x-railyard-error-code')).toBe('method_not_allowed');
    res = await fetch(`${s.url}/noSuchOperation`, { method: 'POST' });
    expect(res.status).toBe(404);
    expect(res.headers.get('x-railyard-error-code')).toBe('unknown_endpoint');
    expect(await res.text()).toBe('no such endpoint: POST /v1/noSuchOperation');
  });

  it('every error answer names its stable code in x-railyard-error-code, beside the status and the one-line text', async () => {
    const s = await withQueue();
    const answers = {
      invalid_request: await call(s, 'getQueue', { repo: REPO }),
      unauthorized: await call(s, 'getQueue', Q, { token: 'wrong' }),
      not_found: await call(s, 'getQueue', { ...Q, targetBranch: 'nope' }),
      conflict: await call(s, 'createQueue', Q),
    };
    const seen = Object.entries(answers).map(([, a]) => [
      a.status,
      a.headers.get('x-railyard-error-code'),
      a.headers.get('content-type'),
    ]);
    expect(seen).toEqual([
      [400, 'invalid_request', 'text/plain; charset=utf-8'],
      [401, 'unauthorized', 'text/plain; charset=utf-8'],
      [404, 'not_found', 'text/plain; charset=utf-8'],
      [409, 'conflict', 'text/plain; charset=utf-8'],
    ]);
    expect(answers.invalid_request.text).toBe('targetBranch: required');
  });

  it('400 for invalid JSON; JSON without a JSON Content-Type is still read; unknown fields are ignored', async () => {
    const s = await withQueue();
    const bad = await call(s, 'getQueue', '{"repo": ');
    expect(bad.status).toBe(400);
    expect(bad.text).toMatch(/^body: invalid JSON/);
    const res = await fetch(`${s.url}/getQueue`, {
      method: 'POST',
      headers: { 'x-api-token': s.token, 'content-type': 'application/x-www-form-urlencoded' },
      body: JSON.stringify({ ...Q, someday: 'maybe' }),
    });
    expect(res.status).toBe(200);
    const none = await fetch(`${s.url}/getQueue`, {
      method: 'POST',
      headers: { 'x-api-token': s.token },
      body: new Blob([JSON.stringify(Q)]), // a Blob without a type: no Content-Type header
    });
    expect(none.status).toBe(200);
  });

  it('metrics: 400 for repo without repoHost, 404 for a repository without queues, Prometheus text otherwise', async () => {
    const s = await withQueue();
    await ok(s, 'submitPullRequest', { ...Q, pr: { number: 1 } });
    const noHost = await call(s, 'getMergeQueueMetrics', { repo: 'acme/web' });
    expect(noHost.status).toBe(400);
    expect(noHost.text).toBe('repoHost: required when repo is given');
    expect(
      (await call(s, 'getMergeQueueMetrics', { repo: 'acme/other', repoHost: 'github.com' })).status,
    ).toBe(404);
    const text = (await call(s, 'getMergeQueueMetrics', { repo: 'acme/web', repoHost: 'github.com' })).text;
    expect(text).toContain('mq_depth_current{repo="acme/web",branch="main",queue_type="main"} 1');
  });

  it('413 for a body of 20 MiB + 1 byte; 20 MiB − 1 KiB of impacted targets passes', async () => {
    const s = await withQueue();
    const sha = sandboxHeadSha(REPO, 1);
    const bodyOfSize = (size: number) => {
      const head = JSON.stringify({ ...Q, pr: { number: 1, sha }, impactedTargets: [] }).slice(0, -3);
      const target = `"//services/${'x'.repeat(88)}"`; // 100 bytes
      const parts: string[] = [];
      const count = Math.floor((size - head.length - 1024) / (target.length + 1));
      for (let i = 0; i < count; i++) parts.push(target);
      const withoutPad = `${head}[${parts.join(',')},""]}`.length;
      const body = `${head}[${parts.join(',')},"${'y'.repeat(size - withoutPad)}"]}`;
      expect(Buffer.byteLength(body)).toBe(size);
      return body;
    };
    const big = await call(s, 'setImpactedTargets', bodyOfSize(BODY_LIMIT_BYTES + 1));
    expect(big.status).toBe(413);
    expect(big.text).toBe('request body is larger than 20 MiB (20971520 bytes)');
    expect(big.headers.get('x-railyard-error-code')).toBe('payload_too_large');
    const fits = await call(s, 'setImpactedTargets', bodyOfSize(BODY_LIMIT_BYTES - 1024));
    expect(fits.status, fits.text).toBe(200);
  });

  it('413 from Content-Length before the body is read', async () => {
    const s = await withQueue();
    const { hostname, port } = new URL(s.url);
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), hostname, () => {
        socket.write(
          `POST /v1/setImpactedTargets HTTP/1.1\r\nHost: x\r\nx-api-token: ${s.token}\r\n` +
            `Content-Type: application/json\r\nContent-Length: ${BODY_LIMIT_BYTES + 1}\r\n\r\n{"repo":`,
        );
      });
      let data = '';
      socket.on('data', (chunk) => {
        data += chunk.toString();
        if (data.includes('\r\n\r\n')) {
          socket.destroy();
          resolve(data);
        }
      });
      socket.on('error', reject);
    });
    expect(reply).toMatch(/^HTTP\/1\.1 413 /);
  });

  it('413 while streaming a chunked body past 20 MiB', async () => {
    const s = await withQueue();
    const { hostname, port } = new URL(s.url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        {
          host: hostname,
          port,
          method: 'POST',
          path: '/v1/setImpactedTargets',
          headers: { 'x-api-token': s.token, 'content-type': 'application/json' },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', (error) => (req.writableEnded ? undefined : reject(error)));
      const chunk = Buffer.alloc(1024 * 1024, 0x20);
      let sent = 0;
      const pump = () => {
        while (sent < 22) {
          sent++;
          if (!req.write(chunk)) return req.once('drain', pump);
        }
        req.end();
      };
      pump();
    });
    expect(status).toBe(413);
  });
});
