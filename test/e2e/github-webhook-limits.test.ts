/**
 * The webhook route answers like every other route (issue 26, items 3 and 14): a body over
 * 20 MiB gets the one-line text/plain 413 (it was Fastify's JSON), and a signed payload nested
 * deeper than the JSON bound is refused before it is parsed. Real `railyard serve --github`
 * against the GitHub emulator.
 */
import { createHmac } from 'node:crypto';
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
    const res = await fetch(hook, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-github-event': 'ping', 'x-hub-signature-256': sign(body) },
      body,
    });
    expect(res.status).toBe(413);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await res.text()).toBe(`request body is larger than 20 MiB (${BODY_LIMIT_BYTES} bytes)`);
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
