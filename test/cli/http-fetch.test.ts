/**
 * The CLI's transport (src/cli/http-fetch.ts) answers as Node's fetch does, against a real HTTP
 * server on 127.0.0.1: bodies (gzip and deflate decoded), statuses, headers, redirects, refused
 * connections and aborts.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeFetch } from '../../src/cli/http-fetch.js';

let server: Server;
let base = '';
const seen: { method?: string; url?: string; body: string; headers: Record<string, unknown> }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      seen.push({ method: req.method, url: req.url, body, headers: req.headers });
      const json = JSON.stringify({ echo: body, method: req.method, path: req.url });
      switch (req.url) {
        case '/gzip':
          res
            .writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' })
            .end(gzipSync(json));
          return;
        case '/deflate':
          res
            .writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'deflate' })
            .end(deflateSync(json));
          return;
        case '/missing':
          res
            .writeHead(404, { 'content-type': 'text/plain', 'x-railyard-error-code': 'not_found' })
            .end('no such thing\n');
          return;
        case '/empty':
          res.writeHead(204).end();
          return;
        case '/moved':
          res.writeHead(307, { location: '/plain' }).end();
          return;
        case '/slow':
          return; // never answers
        default:
          res.writeHead(200, { 'content-type': 'application/json' }).end(json);
      }
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((done) => server.close(done));
});

const post = (path: string, signal?: AbortSignal) =>
  new Request(`${base}${path}`, {
    method: 'POST',
    body: '{"a":1}',
    headers: { 'content-type': 'application/json', 'x-api-token': 't' },
    signal,
  });

/** What a caller reads of an answer. */
async function read(response: Response) {
  return {
    status: response.status,
    ok: response.ok,
    type: response.headers.get('content-type'),
    text: await response.text(),
  };
}

describe('the CLI transport answers as fetch does', () => {
  it('sends the method, headers and body; reads the answer', async () => {
    const ours = await read(await nodeFetch(post('/plain')));
    const sent = seen.at(-1)!;
    const theirs = await read(await fetch(post('/plain')));
    expect(ours).toEqual(theirs);
    expect(JSON.parse(ours.text)).toEqual({ echo: '{"a":1}', method: 'POST', path: '/plain' });
    expect(sent.headers).toMatchObject({
      'x-api-token': 't',
      'content-type': 'application/json',
      'content-length': '7',
    });
  });

  it('decodes gzip and deflate answers', async () => {
    for (const path of ['/gzip', '/deflate']) {
      expect(await read(await nodeFetch(post(path)))).toEqual(await read(await fetch(post(path))));
    }
  });

  it('keeps error statuses, their headers and bodies; an empty answer is empty', async () => {
    const missing = await nodeFetch(post('/missing'));
    expect(missing.headers.get('x-railyard-error-code')).toBe('not_found');
    expect(await read(missing)).toEqual(await read(await fetch(post('/missing'))));
    expect(await read(await nodeFetch(post('/empty')))).toEqual(await read(await fetch(post('/empty'))));
  });

  it('follows a redirect with the same request', async () => {
    const ours = await read(await nodeFetch(post('/moved')));
    expect(ours).toEqual(await read(await fetch(post('/moved'))));
    expect(JSON.parse(ours.text)).toMatchObject({ echo: '{"a":1}', method: 'POST', path: '/plain' });
  });

  it('a refused connection is TypeError("fetch failed") caused by ECONNREFUSED', async () => {
    const closed = createServer();
    await new Promise<void>((done) => closed.listen(0, '127.0.0.1', done));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/x`;
    await new Promise((done) => closed.close(done));
    const error = await nodeFetch(new Request(url, { method: 'POST', body: '{}' })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as TypeError).message).toBe('fetch failed');
    expect(((error as TypeError).cause as { code?: string }).code).toBe('ECONNREFUSED');
  });

  it("an abort rejects with the signal's reason", async () => {
    const controller = new AbortController();
    const pending = nodeFetch(post('/slow', controller.signal)).catch((e: unknown) => e);
    await expect.poll(() => seen.some((s) => s.url === '/slow'), { timeout: 10_000 }).toBe(true);
    controller.abort();
    const error = await pending;
    expect(error).toBe(controller.signal.reason);
    expect((error as Error).name).toBe('AbortError');
  });
});
