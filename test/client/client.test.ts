import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { HTTPError } from 'ky';
import { ApiError, ClientError, createClient, isTransientError, NetworkError, ResponseShapeError } from '../../src/client/index.js';
import { startTestServer } from '../support/server.js';

/** A throwaway HTTP server whose answers the test scripts (not our server: no code of ours is mocked). */
async function scripted(answers: Array<(req: IncomingMessage, res: ServerResponse) => void>) {
  const seen: Array<{ path: string; token: string | undefined; body: string }> = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d));
    req.on('end', () => {
      seen.push({ path: req.url ?? '', token: req.headers['x-api-token'] as string | undefined, body });
      const answer = answers[Math.min(seen.length - 1, answers.length - 1)];
      answer(req, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/v1`, seen, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const text = (status: number, body: string, headers: Record<string, string> = {}) => (_req: IncomingMessage, res: ServerResponse) => {
  res.writeHead(status, { 'content-type': 'text/plain', ...headers });
  res.end(body);
};
const queueKey = { repo: { host: 'github.com', owner: 'acme', name: 'web' }, targetBranch: 'main' };

let closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.map((c) => c()));
  closers = [];
});

describe('client retries', () => {
  it('retries a read after 503 and 429, then succeeds', async () => {
    const ok = JSON.stringify({ pullRequests: [] });
    const fake = await scripted([text(503, 'busy'), text(429, 'slow down', { 'retry-after': '0' }), text(200, ok)]);
    closers.push(fake.close);
    const client = createClient({ baseUrl: fake.url, token: 't' });
    const result = await client.call('listPullRequests', queueKey);
    expect(result).toEqual({ pullRequests: [] });
    expect(fake.seen.map((s) => s.path)).toEqual(['/v1/listPullRequests', '/v1/listPullRequests', '/v1/listPullRequests']);
    expect(fake.seen[0].token).toBe('t');
  });

  it('never retries a write that reached the server', async () => {
    const fake = await scripted([text(503, 'busy'), text(200, '{}')]);
    closers.push(fake.close);
    const client = createClient({ baseUrl: fake.url, token: 't' });
    const error = await client.call('submitPullRequest', { ...queueKey, pr: { number: 1 } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(503);
    expect((error as ApiError).serverMessage).toBe('busy');
    expect(isTransientError(error)).toBe(true);
    expect(fake.seen).toHaveLength(1);
  });

  it('gives up on reads after the retry limit with the last status', async () => {
    const fake = await scripted([text(500, 'boom')]);
    closers.push(fake.close);
    const client = createClient({ baseUrl: fake.url, token: 't', retries: 2 });
    const error = (await client.call('getQueue', queueKey).catch((e: unknown) => e)) as ApiError;
    expect(error.status).toBe(500);
    expect(fake.seen).toHaveLength(3);
  });

  it('does not retry 4xx answers, and keeps the server message', async () => {
    const fake = await scripted([text(400, 'targetBranch: required')]);
    closers.push(fake.close);
    const client = createClient({ baseUrl: fake.url, token: 't' });
    const error = (await client.call('getQueue', queueKey).catch((e: unknown) => e)) as ApiError;
    expect(error.status).toBe(400);
    expect(error.message).toMatch(/targetBranch: required/);
    expect(fake.seen).toHaveLength(1);
  });

  it('every failure is a ClientError naming the operation, with the original error as cause and the server code', async () => {
    const fake = await scripted([text(409, 'already exists', { 'x-railyard-error-code': 'conflict' }), text(200, 'not json')]);
    closers.push(fake.close);
    const client = createClient({ baseUrl: fake.url, token: 't' });
    const api = (await client.call('createQueue', queueKey).catch((e: unknown) => e)) as ApiError;
    expect(api).toBeInstanceOf(ClientError);
    expect([api.operation, api.status, api.code, api.serverMessage]).toEqual(['createQueue', 409, 'conflict', 'already exists']);
    expect(api.cause).toBeInstanceOf(HTTPError);
    const shape = (await client.call('listPullRequests', queueKey).catch((e: unknown) => e)) as ResponseShapeError;
    expect(shape).toBeInstanceOf(ClientError);
    expect(shape.operation).toBe('listPullRequests');
    expect(shape.cause).toBeInstanceOf(SyntaxError);
  });

  it('rejects an answer that does not match the contract', async () => {
    const fake = await scripted([text(200, JSON.stringify({ pullRequests: 'nope' }))]);
    closers.push(fake.close);
    const client = createClient({ baseUrl: fake.url, token: 't' });
    await expect(client.call('listPullRequests', queueKey)).rejects.toBeInstanceOf(ResponseShapeError);
  });

  it('a refused connection is a NetworkError (and a write may be resent then)', async () => {
    const fake = await scripted([text(200, '{}')]);
    await fake.close();
    const client = createClient({ baseUrl: fake.url, token: 't', retries: 1 });
    const error = await client.call('submitPullRequest', { ...queueKey, pr: { number: 1 } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NetworkError);
    expect((error as Error).message).toMatch(/ECONNREFUSED/);
    expect((error as NetworkError).cause).toBeInstanceOf(TypeError); // fetch's "fetch failed", whose cause is the socket error
  });
});

describe('client against the real server', () => {
  it('follows flaky pages until the last one', async () => {
    const server = await startTestServer({ tokens: { tok: 'acme' } });
    closers.push(server.close);
    const client = createClient({ baseUrl: server.url, token: 'tok' });
    const pages = [];
    for await (const page of client.pages('listUnhealthyTests', { repo: queueKey.repo, org_url_slug: 'acme', status: 'FLAKY', page_size: 7 })) {
      pages.push(page);
    }
    expect(pages).toHaveLength(1);
    expect(pages[0].page).toMatchObject({ total_rows: 0, next_page_token: '' });
  });
});
