/**
 * The GitLab hook route bounds JSON nesting like every other route (issue 26, item 3): a delivery
 * with the right token whose payload nests deeper than the JSON bound is refused before it is
 * parsed (JSON.parse of a 20 MiB `[[[[…` held the server's only request thread for seconds).
 * Real `railyard serve --gitlab` against the GitLab emulator.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../src/contract/index.js';
import { floodUnverified } from '../support/unverified-flood.js';
import { cleanup, emulator, HOOK_SECRET, startRailyard, tempDir } from './gitlab-harness.js';

afterEach(cleanup);

describe('POST /webhooks/gitlab limits', () => {
  it(`refuses a delivery nested deeper than ${MAX_JSON_DEPTH} before parsing it, and stays responsive`, async () => {
    const gl = await emulator();
    const server = await startRailyard(gl, { webhooks: true, dataDir: tempDir('railyard-gl-limits-') });
    const hook = server.url.replace(/\/v1$/, '/webhooks/gitlab');
    // Valid JSON, 18 MiB: parsed, it is accepted seconds later.
    const levels = 9 * 1024 * 1024;
    const body = `{"object_kind":"push","project":${'['.repeat(levels)}${']'.repeat(levels)}}`;
    const t0 = performance.now();
    const res = await fetch(hook, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gitlab-event': 'Push Hook', 'x-gitlab-token': HOOK_SECRET },
      body,
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toBe(
      `body: JSON nested deeper than ${MAX_JSON_DEPTH} levels (arrays and objects); no request needs that many`,
    );
    expect(performance.now() - t0).toBeLessThan(3_000);
    const status = await fetch(`${server.url}/status`);
    expect(status.status).toBe(200);
  });

  it(
    'answers a wrong token with 401 before reading the body: 40 × 19 MB held open grow RSS by at most 150 MB',
    { timeout: 120_000 },
    async () => {
      const gl = await emulator();
      const server = await startRailyard(gl, { webhooks: true, dataDir: tempDir('railyard-gl-limits-') });
      const result = await floodUnverified({
        url: server.url.replace(/\/v1$/, '/webhooks/gitlab'),
        headers: {
          'content-type': 'application/json',
          'x-gitlab-event': 'Push Hook',
          'x-gitlab-token': 'not-the-secret',
        },
        connections: 40,
        declared: 20_000_000,
        send: 19_000_000,
        pid: server.pid,
        statusUrl: `${server.url}/status`,
      });
      expect(result.alive).toBe(true);
      expect((result.rssPeakKb - result.rssBeforeKb) / 1024).toBeLessThanOrEqual(150);
      // Every one was refused from its headers (an answer read, or the connection closed under the sender).
      expect(result.answers['503'] ?? 0).toBe(0);
      expect(result.answers.none ?? 0).toBe(40 - (result.answers['401'] ?? 0));
      expect(result.answers['401']).toBeGreaterThan(0);
      expect(result.statusFailures).toBe(0);
    },
  );
});
