/**
 * The webhook route answers like every other route (issue 26, items 3 and 14): a body over
 * 20 MiB gets the one-line text/plain 413 (it was Fastify's JSON), and a signed payload nested
 * deeper than the JSON bound is refused before it is parsed. Real `railyard serve --github`
 * against the GitHub emulator.
 */
import { createHmac } from 'node:crypto';
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { BODY_LIMIT_BYTES, MAX_JSON_DEPTH } from '../../src/contract/index.js';
import { cleanup, emulator, NAME, OWNER, startRailyard, tempDir, WEBHOOK_SECRET } from './github-harness.js';

afterEach(cleanup);

async function hookUrl(): Promise<string> {
  const gh = await emulator();
  gh.createRepo(OWNER, NAME, { files: { 'README.md': 'app\n' } });
  const server = await startRailyard(gh, { webhooks: true, dataDir: tempDir('railyard-gh-limits-') });
  return server.url.replace(/\/v1$/, '/webhooks/github');
}

const sign = (body: string) => 'sha256=' + createHmac('sha256', WEBHOOK_SECRET).update(body).digest('hex');

describe('POST /webhooks/github limits', () => {
  it('answers a body over 20 MiB with the one-line text/plain 413 of every other route', async () => {
    const hook = await hookUrl();
    const body = `{"a":"${'x'.repeat(BODY_LIMIT_BYTES)}"}`;
    // The headers first, then the answer, before any of the body is sent: the server answers from
    // the declared length and closes the connection, and a client still writing the body then may
    // see the connection reset before it has read the answer (fetch failed so with EPIPE at load 15).
    const res = await new Promise<{ status: number; type: string | undefined; text: string }>((resolve, reject) => {
      const req = request(hook, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          'x-github-event': 'ping',
          'x-hub-signature-256': sign(body),
        },
      });
      req.on('error', reject);
      req.on('response', (answer) => {
        let text = '';
        answer.setEncoding('utf8');
        answer.on('data', (chunk: string) => (text += chunk));
        answer.on('end', () => {
          resolve({ status: answer.statusCode ?? 0, type: answer.headers['content-type'], text });
          req.destroy();
        });
      });
      req.flushHeaders();
    });
    expect(res.status).toBe(413);
    expect(res.type).toBe('text/plain; charset=utf-8');
    expect(res.text).toBe(`request body is larger than 20 MiB (${BODY_LIMIT_BYTES} bytes)`);
  });

  it(`refuses a signed payload nested deeper than ${MAX_JSON_DEPTH} before parsing it`, async () => {
    const hook = await hookUrl();
    const body = `{"repository":${'['.repeat(10 * 1024 * 1024)}}`;
    const t0 = performance.now();
    const res = await fetch(hook, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-hub-signature-256': sign(body) },
      body,
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(new RegExp(`nested deeper than ${MAX_JSON_DEPTH}`));
    expect(performance.now() - t0).toBeLessThan(3_000);
  });
});
