import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';
import { call, REPO } from './helpers.js';

// The dashboard's assets as `railyard serve` serves them (built by npm run build), and the
// figures of the listQueues extension once PRs concluded. The page itself: test/e2e/dashboard.test.ts.
const Q = { repo: REPO, targetBranch: 'main' };
let server: TestServer;
let origin: string;

beforeAll(async () => {
  server = await startTestServer({ sandbox: { testSeconds: 1, failPrs: new Set([2]) } });
  origin = server.url.replace(/v1$/, '');
});
afterAll(async () => {
  await server.close();
});

describe('the dashboard at /', () => {
  it('serves index.html without a token, with a CSP that allows nothing but this server', async () => {
    const res = await fetch(origin);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    const html = await res.text();
    const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]);
    expect(assets.length).toBe(2);
    expect(html).not.toMatch(/https?:\/\//); // no CDN
    for (const path of assets) {
      const asset = await fetch(origin + path.slice(1), { headers: { 'accept-encoding': 'gzip' } });
      expect(asset.status, path).toBe(200);
      expect(asset.headers.get('cache-control')).toContain('immutable');
      expect((await asset.text()).length).toBeGreaterThan(1000);
    }
  });

  it('answers an unknown asset with a one-line 404, and leaves /v1 errors as they were', async () => {
    const res = await fetch(`${origin}assets/nope.js`);
    expect(res.status).toBe(404);
    expect(await res.text()).toBe('no such file: /assets/nope.js');
    const api = await fetch(`${server.url}/nope`);
    expect(api.status).toBe(404);
    expect(await api.text()).toBe('no such endpoint: GET /v1/nope');
  });
});

describe('listQueues figures', () => {
  it('counts merged and failed PRs, the failure rate and the median time in queue', async () => {
    expect((await call(server, 'createQueue', Q)).status).toBe(200);
    for (const number of [1, 2, 3])
      expect((await call(server, 'submitPullRequest', { ...Q, pr: { number } })).status).toBe(200);
    await expect
      .poll(
        async () =>
          (await call(server, 'listPullRequests', { ...Q })).json.pullRequests.filter(
            (p: { state: string }) => ['merged', 'failed'].includes(p.state),
          ).length,
        {
          timeout: 30_000,
          interval: 250,
        },
      )
      .toBe(3);
    const { json } = await call(server, 'listQueues', {});
    const q = json.queues[0];
    expect(q).toMatchObject({
      targetBranch: 'main',
      depth: 0,
      testing: 0,
      mergedLastHour: 2,
      mergedLastDay: 2,
      failedLastDay: 1,
    });
    expect(q.failureRateLastDay).toBeCloseTo(1 / 3);
    expect(q.medianSecondsInQueueLastDay).toBeGreaterThan(0.5);
  });
});
