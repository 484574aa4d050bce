/**
 * The web dashboard in the real browser (Debian's chromium, headless, via playwright-core)
 * against a real server (buildServer over embedded SQLite, sandbox forge) on 127.0.0.1:
 *   1. compressed assets: bytes over the wire for the page (index.html + JS + CSS), as the browser
 *      reports them (encodedBodySize); goal <= 300 KB;
 *   2. first render of a queue of PRS pull requests (default 1,000): from navigation start to every
 *      PR row on the page, ROUNDS fresh tabs (the first one with a cold cache); goal <= 1 s;
 *   3. live updates: a PR cancelled through the API, then the time until the open page no longer
 *      shows it (no reload), UPDATES times; goal <= 2 s.
 *
 *   npm run build && npx tsx bench/dashboard.ts
 *   DEBUG_SHOT=/tmp/queue.png PRS=60 ROUNDS=1 npx tsx bench/dashboard.ts   # look at the page instead
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { sandboxHeadSha } from '../src/forge/sandbox/index.js';
import { buildServer } from '../src/server/index.js';
import { createBackend } from '../src/server/runtime.js';
import { openStore } from '../src/store/index.js';
import { browserMissing, launchChromium } from '../test/support/browser.js';

const PRS = Number(process.env.PRS ?? 1000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const UPDATES = Number(process.env.UPDATES ?? 10);
const TOKEN = 'bench-token';
const REPO = { host: 'github.com', owner: 'acme', name: 'monorepo' };
const Q = { repo: REPO, targetBranch: 'main' };

const missing = browserMissing();
if (missing) {
  console.error(`bench/dashboard: ${missing}`);
  process.exit(2);
}

const dir = await mkdtemp(join(tmpdir(), 'railyard-bench-dashboard-'));
const store = await openStore({ dataDir: dir });
await store.accounts.addToken('local', TOKEN);
// Tests take an hour: the line stays as it is while the page is measured.
const { driver, workers } = await createBackend({ dataDir: dir, forge: { kind: 'sandbox', settings: { testSeconds: 3600 } }, tickMs: 200 });
const app = await buildServer({
  store,
  driver,
  workers,
  webRoot: resolve(import.meta.dirname, '../build/web'),
});
const origin = (await app.listen({ host: '127.0.0.1', port: 0 })) + '/';
const api = async (op: string, body: unknown) => {
  const res = await fetch(`${origin}v1/${op}`, {
    method: 'POST',
    headers: { 'x-api-token': TOKEN, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${op}: ${res.status} ${await res.text()}`);
  return res.json();
};

const browser = await launchChromium();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (xs: number[]) =>
  `median ${median(xs).toFixed(0)} ms, min ${Math.min(...xs).toFixed(0)} ms, max ${Math.max(...xs).toFixed(0)} ms`;
try {
  await api('createQueue', { ...Q, mode: 'parallel', concurrency: 4 });
  await api('updateQueue', { ...Q, batch: true, batchingMinSize: 4, batchingMaxWaitTimeMinutes: 1 });
  const t0 = performance.now();
  for (let n = 1; n <= PRS; n++) {
    // Parallel mode: three services, so the line splits into lanes.
    await api('setImpactedTargets', {
      ...Q,
      pr: { number: n, sha: sandboxHeadSha(REPO, n) },
      impactedTargets: [`//svc${n % 3}`],
    });
    await api('submitPullRequest', { ...Q, pr: { number: n }, priority: n % 50 === 0 ? 'high' : undefined });
  }
  console.log(`submitted ${PRS} PRs in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  await new Promise((r) => setTimeout(r, 1000));

  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  // The token as the login form leaves it: in the tab's session storage.
  await context.addInitScript(`sessionStorage.setItem('railyard.token', ${JSON.stringify(TOKEN)})`);
  const url = `${origin}#/queue/github.com/acme/monorepo/main`;
  const renders: number[] = [];
  const phases: Record<string, number>[] = [];
  let bytes = { html: 0, assets: 0, decoded: 0 };
  for (let i = 0; i < ROUNDS; i++) {
    const page = await context.newPage();
    await page.goto(url);
    if (process.env.DEBUG_SHOT) {
      // A picture of the page instead of a measurement (the wait spoils the figure).
      await page.waitForTimeout(3000);
      await page.screenshot({ path: process.env.DEBUG_SHOT });
      console.log('rows', await page.locator('[data-pr]').count());
    }
    // A function, not a string: the page's CSP forbids eval.
    await page.waitForFunction(
      (n) =>
        (
          globalThis as unknown as { document: { querySelectorAll(s: string): { length: number } } }
        ).document.querySelectorAll('[data-pr]').length === n,
      PRS,
      {
        timeout: 30_000,
        polling: 'raf',
      },
    );
    renders.push((await page.evaluate('performance.now()')) as number);
    // Where the time went: the scripts loaded, getQueue asked and answered (ms since navigation start).
    const marks = (await page.evaluate(`(() => {
      const r = performance.getEntriesByType('resource');
      const end = (p) => Math.round(r.find((e) => new URL(e.name).pathname.startsWith(p))?.responseEnd ?? -1);
      const start = (p) => Math.round(r.find((e) => new URL(e.name).pathname.startsWith(p))?.startTime ?? -1);
      return { scripts: end('/assets/'), getQueueAsked: start('/v1/getQueue'), getQueueAnswered: end('/v1/getQueue') };
    })()`)) as Record<string, number>;
    phases.push({ ...marks, drawn: Math.round(renders[renders.length - 1]) });
    if (i === 0) {
      bytes = (await page.evaluate(`(() => {
        const nav = performance.getEntriesByType('navigation')[0];
        const res = performance.getEntriesByType('resource').filter((r) => new URL(r.name).pathname.startsWith('/assets/'));
        return { html: nav.encodedBodySize, assets: res.reduce((a, r) => a + r.encodedBodySize, 0), decoded: nav.decodedBodySize + res.reduce((a, r) => a + r.decodedBodySize, 0) };
      })()`)) as typeof bytes;
    }
    if (i < ROUNDS - 1) await page.close();
  }
  const total = bytes.html + bytes.assets;
  console.log(
    `assets: ${(total / 1024).toFixed(1)} KiB compressed over the wire (index.html ${bytes.html} B, JS+CSS ${bytes.assets} B), ${(bytes.decoded / 1024).toFixed(1)} KiB decoded`,
  );
  for (const p of phases) {
    console.log(
      `  tab: scripts loaded ${p.scripts} ms, getQueue asked ${p.getQueueAsked} ms and answered ${p.getQueueAnswered} ms, every row drawn ${p.drawn} ms`,
    );
  }
  console.log(
    `first render of ${PRS} PRs (navigation start to every row drawn), ${ROUNDS} tabs: ${fmt(renders)}; cold-cache tab ${renders[0].toFixed(0)} ms`,
  );

  const page = context.pages().at(-1)!;
  const updates: number[] = [];
  for (let i = 0; i < UPDATES; i++) {
    const n = PRS - i * 7;
    await page.waitForTimeout(300 + ((i * 137) % 700)); // land at different points of the poll cycle
    const started = performance.now();
    await api('cancelPullRequest', { ...Q, pr: { number: n } });
    await page.waitForSelector(`[data-pr="${n}"]`, { state: 'detached', timeout: 10_000 });
    updates.push(performance.now() - started);
  }
  console.log(
    `live update (cancel through the API to the row gone, no reload), ${UPDATES} times: ${fmt(updates)}`,
  );
} finally {
  await browser.close();
  await app.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
}
