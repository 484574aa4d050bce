/**
 * The GitLab hook route bounds JSON nesting like every other route (issue 26, item 3): a delivery
 * with the right token whose payload nests deeper than the JSON bound is refused before it is
 * parsed (JSON.parse of a 20 MiB `[[[[…` held the server's only request thread for seconds).
 * Real `railyard serve --gitlab` against the GitLab emulator.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../src/contract/index.js';
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
});
