// The web dashboard in real Chromium against a real server with the sandbox forge: signing in, the
// queue page in queue order and live, a failed PR's page, the flaky page and its quarantine toggle,
// a read-only token's settings, the throughput charts and the dark scheme. The tests share one
// server and build on each other (the throughput page shows the queues made before). Against
// servers on real git repositories: dashboard-git.test.ts. Screenshots: see dashboard-helpers.ts.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { call, REPO } from '../server/helpers.js';
import { launchChromium } from '../support/browser.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { describeInChromium, SHOTS } from './dashboard-helpers.js';

const Q = { repo: REPO, targetBranch: 'main' };
const RELEASE = { repo: REPO, targetBranch: 'release' };
const ORG = 'local';

describeInChromium('web dashboard in Chromium', () => {
  let server: TestServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  /** The dashboard: `/` of the server. */
  const origin = () => server.url.replace(/v1$/, '');
  const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  const ok = async (op: Parameters<typeof call>[1], body: unknown) => {
    const res = await call(server, op, body);
    expect(res.status, `${op}: ${res.text}`).toBe(200);
    return res.json;
  };
  const signIn = async (token = server.token) => {
    await page.goto(origin());
    await page.getByLabel('API token').fill(token);
    await page.getByRole('button', { name: 'Open the dashboard' }).click();
    if (token === server.token) await page.getByRole('navigation', { name: 'Pages' }).waitFor();
  };

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    server = await startTestServer({
      sandbox: { testSeconds: 4, failPrs: new Set([7]) },
      tokens: { 'test-token': 'local', 'viewer-token': 'local' },
      permissions: { 'viewer-token': [] },
    });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  afterEach(async (ctx) => {
    // A failed test leaves a picture of what the page showed.
    if (ctx.task.result?.state === 'fail' && page)
      await shot(`FAILED-${ctx.task.name.slice(0, 40).replace(/\W+/g, '-')}`).catch(() => undefined);
  });

  const fresh = async () => {
    await context?.close();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.setDefaultTimeout(10_000);
  };

  it('a wrong token shows the server message, and a good one is kept in session storage only', async () => {
    await fresh();
    await signIn('not-a-token');
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('x-api-token: unknown token');
    await shot('wrong-token');
    await signIn();
    await page.getByRole('heading', { name: 'Merge queues' }).waitFor();
    expect(page.url()).not.toContain(server.token);
    expect(await page.evaluate('sessionStorage.getItem("railyard.token")')).toBe(server.token);
    expect(await page.evaluate('localStorage.length')).toBe(0);
    expect(await page.evaluate('document.cookie')).toBe('');
  });

  it('shows submitted PRs on the queue page in queue order, and a state change without reload', async () => {
    await fresh();
    await ok('createQueue', Q);
    await ok('updateQueue', { ...Q, state: 'paused' });
    await ok('submitPullRequest', { ...Q, pr: { number: 1 } });
    await ok('submitPullRequest', { ...Q, pr: { number: 2 } });
    await ok('submitPullRequest', { ...Q, pr: { number: 3 }, priority: 'low' });
    await ok('submitPullRequest', { ...Q, pr: { number: 4 }, priority: 'high' });
    const order = (await ok('getQueue', Q)).enqueuedPullRequests.map((p: { prNumber: number }) => p.prNumber);
    expect(order).toEqual([4, 1, 2, 3]);

    await signIn();
    // The overview lists the queue and makes the paused state stand out.
    const row = page.getByRole('row', { name: /acme\/web.*main/ });
    await expect.poll(() => row.textContent()).toContain('paused');
    expect(await row.getAttribute('class')).toContain('attention');
    await shot('queues-overview');

    await row.getByRole('link').click();
    await page.locator('[data-pr]').first().waitFor();
    const shown = await page
      .locator('[data-pr]')
      .evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-pr'))));
    expect(shown).toEqual(order);
    expect(await page.locator('[data-pr="4"]').textContent()).toContain('high');
    await shot('queue-paused');

    // A waiting PR's page says what holds it.
    await page.goto(`${origin()}#/pr/github.com/acme/web/main/1`);
    await expect
      .poll(() => page.getByTestId('waiting-for').textContent())
      .toBe('Waiting for the queue, which is paused.');
    await page.goBack();
    await page.locator('[data-pr="4"]').waitFor();

    // Resume: #4 starts testing; the page shows it within 2 s, without a reload.
    let reloaded = false;
    page.on('framenavigated', () => (reloaded = true));
    const before = Date.now();
    await ok('updateQueue', { ...Q, state: 'running' });
    await page.locator('[data-pr="4"] .s-testing').waitFor({ timeout: 3000 });
    const seen = Date.now() - before;
    expect(reloaded).toBe(false);
    expect(seen).toBeLessThan(2500); // 2 s goal (1 s poll + the server's 200 ms tick) with test-machine slack
    await page.locator('.run').first().waitFor();
    await shot('queue-testing');
  });

  it("a failing PR's page shows the reason as a sentence and its run's checks", async () => {
    await fresh();
    await ok('createQueue', RELEASE);
    await ok('submitPullRequest', { ...RELEASE, pr: { number: 7 } });
    await expect
      .poll(async () => (await ok('getSubmittedPullRequest', { ...RELEASE, pr: { number: 7 } })).state, {
        timeout: 20_000,
        interval: 250,
      })
      .toBe('failed');
    await signIn();
    await page.goto(`${origin()}#/pr/github.com/acme/web/release/7`);
    const reason = page.getByTestId('reason');
    await expect.poll(() => reason.textContent()).toContain('PR #7 failed because its check failed.');
    await page
      .getByRole('row', { name: /failure/ })
      .first()
      .waitFor();
    expect(await page.getByTestId('tested-with').textContent()).toContain('alone');
    // The failed check's output is opened; the sandbox keeps none and says so.
    await expect
      .poll(() => page.getByTestId('log-missing').first().textContent())
      .toBe('No output: this server keeps no check output (sandbox runs are simulated).');
    await shot('pr-failed');
  });

  it('the flaky page lists uploaded tests, and its quarantine toggle changes what the API reports', async () => {
    await fresh();
    const junit = `<testsuite name="checkout"><testcase classname="cart" name="adds items"/><testcase classname="cart" name="totals with tax"><failure message="expected 10.8, got 10.79">AssertionError: expected 10.8, got 10.79\n  at cart.test.js:12</failure></testcase></testsuite>`;
    await ok('uploadTestResults', {
      repo: REPO,
      org_url_slug: ORG,
      branch: 'main',
      sha: 'abc1234',
      reports: [{ name: 'junit.xml', content: junit }],
    });
    await ok('updateRepositorySettings', {
      repo: REPO,
      org_url_slug: ORG,
      settings: { quarantining_enabled: true },
    });
    // Earlier days for the failure-rate chart: it failed 3 days ago and passed 2 days ago (UTC days).
    const DAY = 24 * 60 * 60 * 1000;
    const daysAgo = (n: number) => new Date(Date.now() - n * DAY);
    for (const [n, content] of [
      [3, junit],
      [2, junit.replace(/<failure[^]*<\/failure>/, '')],
    ] as const) {
      await ok('uploadTestResults', {
        repo: REPO,
        org_url_slug: ORG,
        branch: 'main',
        sha: `abc123${n}`,
        started_at: daysAgo(n).toISOString(),
        reports: [{ name: 'junit.xml', content }],
      });
    }

    await signIn();
    await page.goto(`${origin()}#/flaky/github.com/acme/web`);
    await page.getByRole('tab', { name: 'Failing, last 24 h' }).click();
    const link = page.getByRole('link', { name: 'totals with tax' });
    await link.waitFor();
    // Failing with fewer runs than the failure-rate monitor needs: it says so, never "healthy".
    const status = page.locator('tr[data-test="totals with tax"] td').first();
    expect(await status.textContent()).toMatch(/^◌ not enough runs yet \([23] of 10\)$/);
    // The filter narrows the list.
    await page.getByLabel('Filter').fill('nothing-like-this');
    await page.getByText('No test here matches the filters').waitFor();
    await page.getByLabel('Filter').fill('tax');
    await shot('flaky-list');
    await link.click();
    await page.getByRole('heading', { name: 'totals with tax' }).waitFor();
    expect(await page.locator('p.summary').textContent()).toMatch(
      /^◌ not enough runs yet \([23] of 10\) — [12] of [23] runs failed on stable branches in the last 72 h: the failure-rate monitor decides from 10 runs/,
    );
    const testId = decodeURIComponent(page.url().split('/test/')[1]);
    const details = async () =>
      (await ok('getTestDetails', { repo: REPO, org_url_slug: ORG, test_id: testId })).test;
    expect((await details()).quarantined).toBe(false);
    expect(await page.getByRole('region', { name: 'Most common failures' }).textContent()).toContain(
      'expected <n>, got <n>',
    );
    // The failure rate per day: a bar a day with runs, a circle on a day without, and the numbers in a table.
    const chart = page.getByTestId('rate-history');
    const day = (n: number) => daysAgo(n).toISOString().slice(0, 10);
    await chart.getByRole('img', { name: /Failure rate per day, last 30 days/ }).waitFor();
    expect(await chart.locator('svg desc').textContent()).toBe(
      `${day(29)} to ${day(0)}: 3 of 30 days with runs; highest 100 % on ${day(3)}.`,
    );
    expect(await chart.locator('svg rect.bar').count()).toBe(3);
    expect(await chart.locator('svg circle.none').count()).toBe(27);
    expect(await chart.getByRole('row').count()).toBe(31);
    const cells = (n: number) =>
      chart
        .getByRole('row', { name: day(n) })
        .getByRole('cell')
        .allTextContents();
    expect(await cells(3)).toEqual(['1', '1', '100 %']);
    expect(await cells(2)).toEqual(['1', '0', '0 %']);
    expect(await cells(1)).toEqual(['0', '0', 'no runs']);
    expect(await cells(0)).toEqual(['1', '1', '100 %']);
    await shot('flaky-test-history');

    await page.getByRole('button', { name: 'Always quarantine' }).click();
    await expect.poll(() => page.getByTestId('quarantine-state').textContent()).toContain('Quarantined');
    expect((await details()).quarantined).toBe(true);
    await page.getByLabel('Link a ticket').fill('KAN-42');
    await page.getByRole('button', { name: 'Link' }).click();
    await page.getByRole('status').getByText('Linked KAN-42.').waitFor();
    await expect.poll(async () => (await details()).ticket?.html_url ?? '').toContain('KAN-42');
    await shot('flaky-test-quarantined');

    await page.getByRole('button', { name: 'Never quarantine' }).click();
    await expect.poll(() => page.getByTestId('quarantine-state').textContent()).toContain('Not quarantined');
    expect((await details()).quarantined).toBe(false);
  });

  it("a read-only token sees a queue's settings but cannot change them (no Save button, fields disabled)", async () => {
    await fresh();
    const V = { repo: Q.repo, targetBranch: 'viewonly' };
    await ok('createQueue', V);
    await signIn('viewer-token');
    await page.getByRole('navigation', { name: 'Pages' }).waitFor();
    await page.goto(`${origin()}#/queue/github.com/acme/web/viewonly`);
    const form = page.getByRole('form', { name: 'Queue settings' });
    await expect.poll(() => form.getByLabel('Concurrency').inputValue()).toBe('1');
    expect(await form.getByLabel('Concurrency').isDisabled()).toBe(true);
    expect(await form.getByLabel('Batching').isDisabled()).toBe(true);
    expect(await form.getByRole('button', { name: 'Save settings' }).count()).toBe(0);
    expect(await form.getByTestId('settings-read-only').textContent()).toContain(
      'lacks the settings permission',
    );
    await shot('settings-read-only');
    // The full token on the same page can edit.
    await fresh();
    await signIn();
    await page.goto(`${origin()}#/queue/github.com/acme/web/viewonly`);
    const editable = page.getByRole('form', { name: 'Queue settings' });
    await expect.poll(() => editable.getByLabel('Concurrency').inputValue()).toBe('1');
    expect(await editable.getByLabel('Concurrency').isDisabled()).toBe(false);
    expect(await editable.getByRole('button', { name: 'Save settings' }).count()).toBe(1);
  });

  it('throughput charts read the metrics endpoint, and pages work in the dark scheme too', async () => {
    await fresh();
    await page.emulateMedia({ colorScheme: 'dark' });
    await signIn();
    await page.goto(`${origin()}#/throughput`);
    await page.getByRole('heading', { name: 'acme/web → main' }).waitFor();
    await page.getByRole('img', { name: /Concluded in the last hour/ }).waitFor();
    await shot('throughput-dark');
    await page.goto(`${origin()}#/`);
    await page.getByRole('row', { name: /release/ }).waitFor();
    // Keyboard: Tab reaches the navigation and the queue links.
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement?.textContent')).toBe('Queues');
    await shot('queues-dark');
  });
});
