// The web dashboard in real Chromium against servers on real git repositories (the git forge): a
// PR's stack, a failing PR's timeline and check output with the queue page's ETAs, and a PR's
// failing tests from JUnit reports with the queue's settings edited in place. Each test starts its
// own server. The sandbox server's pages: dashboard.test.ts. Screenshots: see dashboard-helpers.ts.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { createRepo } from '../forge/fixture.js';
import { call } from '../server/helpers.js';
import { launchChromium } from '../support/browser.js';
import { startTestServer } from '../support/server.js';
import { describeInChromium, SHOTS } from './dashboard-helpers.js';

describeInChromium('web dashboard in Chromium', () => {
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
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

  it('a PR of a stack shows its stack on its page (git forge, a base of refs/pull/M/head)', async () => {
    const location = { host: 'github.com', owner: 'acme', name: 'app' };
    const G = { repo: location, targetBranch: 'main' };
    const repo = await createRepo({ location, checks: { test: 'true' }, files: { 'app.txt': 'app\n' } });
    const git = await startTestServer({ gitRoot: repo.root });
    try {
      repo.openPr(4, { 'a.txt': 'a\n' }, { title: 'Add a' });
      repo.openPr(5, { 'b.txt': 'b\n' }, { title: 'Add b', from: 'refs/pull/4/head' });
      repo.setPrBase(5, 'refs/pull/4/head');
      expect((await call(git, 'createQueue', G)).status).toBe(200);
      expect((await call(git, 'submitPullRequest', { ...G, pr: { number: 5 } })).status).toBe(200);
      await fresh();
      await page.goto(git.url.replace(/v1$/, ''));
      await page.getByLabel('API token').fill(git.token);
      await page.getByRole('button', { name: 'Open the dashboard' }).click();
      await page.getByRole('navigation', { name: 'Pages' }).waitFor();
      await page.goto(`${git.url.replace(/v1$/, '')}#/pr/github.com/acme/app/main/4`);
      await expect
        .poll(() => page.getByTestId('stack').textContent(), { timeout: 30_000 })
        .toContain('Part of a stack of 2: #4 ← #5');
    } finally {
      await git.close();
      await repo.cleanup();
    }
  });

  it("with real git: a failing PR's timeline carries the failure's detail, its failed check's output shows, and the queue page gives ETAs", async () => {
    const location = { host: 'github.com', owner: 'acme', name: 'app' };
    const G = { repo: location, targetBranch: 'main' };
    const repo = await createRepo({
      location,
      checks: {
        build: 'echo building',
        // Waits as long as delay.txt says (1 s by default), then fails unless status.txt is fine.
        test: 'sleep "$(cat delay.txt 2>/dev/null || echo 1)"; grep -q fine status.txt || { echo "status.txt says $(cat status.txt)" >&2; exit 3; }',
      },
      files: { 'status.txt': 'fine\n', 'app.txt': 'app\n' },
    });
    const git = await startTestServer({ gitRoot: repo.root });
    try {
      const gok = async (op: Parameters<typeof call>[1], body: unknown) => {
        const res = await call(git, op, body);
        expect(res.status, `${op}: ${res.text}`).toBe(200);
        return res.json;
      };
      const stateOf = async (n: number) =>
        (await gok('getSubmittedPullRequest', { ...G, pr: { number: n } })).state;
      repo.openPr(1, { 'status.txt': 'bad\n' }, { title: 'Breaks the tests' });
      repo.openPr(2, { 'delay.txt': '6\n', 'two.txt': '2\n' }, { title: 'A slow one' });
      repo.openPr(3, { 'three.txt': '3\n' }, { title: 'Waits behind two' });
      await gok('createQueue', G);
      await gok('submitPullRequest', { ...G, pr: { number: 1 } });
      await expect.poll(() => stateOf(1), { timeout: 30_000, interval: 200 }).toBe('failed');

      await fresh();
      const gitOrigin = git.url.replace(/v1$/, '');
      await page.goto(gitOrigin);
      await page.getByLabel('API token').fill(git.token);
      await page.getByRole('button', { name: 'Open the dashboard' }).click();
      await page.getByRole('navigation', { name: 'Pages' }).waitFor();
      await page.goto(`${gitOrigin}#/pr/github.com/acme/app/main/1`);
      const timeline = page.getByTestId('timeline');
      await expect.poll(() => timeline.textContent()).toContain('PR #1 failed because its check failed.');
      // The failure's detail (which check failed, its exit code), as the server wrote it.
      const history = await gok('getPullRequestHistory', { ...G, pr: { number: 1 } });
      const detail = history.transitions.at(-1).detail;
      expect(detail).toContain('test');
      expect(await timeline.locator('pre.detail').last().textContent()).toBe(detail);
      expect(await timeline.locator('li').count()).toBe(history.transitions.length);
      // The failed check's output is open, fetched with the token in a header (the page's URL and
      // the log request carry no token).
      const logRequests: string[] = [];
      page.on('request', (r) => {
        if (r.url().includes('getCheckRunLog')) logRequests.push(r.url());
      });
      const output = page.getByRole('region', { name: 'Test run' }).getByLabel('Output of test');
      await expect.poll(() => output.textContent()).toContain('status.txt says bad');
      expect(await output.textContent()).toContain('[railyard] test: failure (exit code 3)');
      // A passed check's output opens on demand.
      await page.getByRole('button', { name: 'Show the output of build' }).click();
      await expect
        .poll(() =>
          page.getByRole('region', { name: 'Test run' }).getByLabel('Output of build').textContent(),
        )
        .toContain('building');
      expect(logRequests.length).toBeGreaterThan(0);
      for (const url of [page.url(), ...logRequests]) expect(url).not.toContain(git.token);
      await shot('git-pr-failed');

      // A run has finished: the queue page gives each PR an ETA from the recent run durations.
      await gok('submitPullRequest', { ...G, pr: { number: 2 } });
      await gok('submitPullRequest', { ...G, pr: { number: 3 } });
      await expect.poll(() => stateOf(2), { timeout: 10_000, interval: 100 }).toBe('testing');
      await page.goto(`${gitOrigin}#/queue/github.com/acme/app/main`);
      await expect
        .poll(() => page.getByTestId('recent-runs').textContent())
        .toMatch(/^Recent test runs took ~\d/);
      const eta3 = page.locator('[data-pr="3"] [data-testid="eta"]');
      await expect.poll(() => eta3.textContent()).toMatch(/^ETA ~\d+s(–\d+s)?$/);
      await page.locator('[data-pr="2"] [data-testid="eta"]').waitFor();
      await shot('git-queue-eta');
    } finally {
      await context?.close();
      await git.close();
      await repo.cleanup();
    }
  }, 60_000);

  it("with JUnit reports: a failed PR's page lists its failing tests, and the queue's settings (flake-aware ones too) are edited in place", async () => {
    const location = { host: 'github.com', owner: 'acme', name: 'tests' };
    const G = { repo: location, targetBranch: 'main' };
    // The check writes junit.xml: `db works` always passes, `net works` fails when fail.txt says so.
    const runTests =
      `{ echo '<testsuite name="suite"><testcase classname="tests/db.test.ts" file="tests/db.test.ts" name="db works"/>'; ` +
      `if [ -f fail.txt ]; then echo '<testcase classname="tests/net.test.ts" file="tests/net.test.ts" name="net works"><failure/></testcase>'; ` +
      `else echo '<testcase classname="tests/net.test.ts" file="tests/net.test.ts" name="net works"/>'; fi; echo '</testsuite>'; } > junit.xml; [ ! -f fail.txt ]`;
    const repo = await createRepo({
      location,
      checks: null,
      files: {
        'railyard.json': JSON.stringify({ checks: { test: { run: runTests, reports: ['junit.xml'] } } }),
      },
    });
    const git = await startTestServer({ gitRoot: repo.root });
    try {
      const gok = async (op: Parameters<typeof call>[1], body: unknown) => {
        const res = await call(git, op, body);
        expect(res.status, `${op}: ${res.text}`).toBe(200);
        return res.json;
      };
      repo.openPr(1, { 'fail.txt': 'yes\n' }, { title: 'Breaks net' });
      await gok('createQueue', G);
      await gok('submitPullRequest', { ...G, pr: { number: 1 } });
      await expect
        .poll(async () => (await gok('getSubmittedPullRequest', { ...G, pr: { number: 1 } })).state, {
          timeout: 30_000,
          interval: 200,
        })
        .toBe('failed');

      await fresh();
      const gitOrigin = git.url.replace(/v1$/, '');
      await page.goto(gitOrigin);
      await page.getByLabel('API token').fill(git.token);
      await page.getByRole('button', { name: 'Open the dashboard' }).click();
      await page.getByRole('navigation', { name: 'Pages' }).waitFor();
      await page.goto(`${gitOrigin}#/pr/github.com/acme/tests/main/1`);
      const failing = page.getByTestId('failing-tests');
      await expect.poll(() => failing.locator('caption').textContent()).toBe('Failing tests (1)');
      expect(
        await failing
          .getByRole('row', { name: /net works/ })
          .getByRole('cell')
          .allTextContents(),
      ).toEqual(['a real failure as far as the flaky-test data knows']);
      // The timeline's failure detail names the test too.
      expect(await page.getByTestId('timeline').textContent()).toContain('failing tests: suite › net works');
      await shot('git-pr-failing-tests');

      // Settings: the form shows what getQueue says and saves only what changed.
      await page.goto(`${gitOrigin}#/queue/github.com/acme/tests/main`);
      const form = page.getByRole('form', { name: 'Queue settings' });
      await expect.poll(() => form.getByLabel('Flaky policy').inputValue()).toBe('off');
      expect(await form.getByLabel('Test report grace (seconds)').inputValue()).toBe('120');
      expect(await form.getByLabel('Probation threshold').inputValue()).toBe('');
      expect(await form.getByLabel('Concurrency').inputValue()).toBe('1');
      // A value out of range is refused on the page, naming the field, and nothing is sent.
      await form.getByLabel('Flaky retries').fill('5');
      await form.getByRole('button', { name: 'Save settings' }).click();
      await expect
        .poll(() => form.getByRole('alert').textContent())
        .toBe('flakyRetries: a whole number from 0 to 3');
      expect((await gok('getQueue', G)).flakyRetries).toBe(0);
      await form.getByLabel('Flaky retries').fill('2');
      await form.getByLabel('Flaky policy').selectOption('ignore_quarantined');
      await form.getByLabel('Probation threshold').fill('0.4');
      await form.getByLabel('Concurrency').fill('3');
      await form.getByRole('button', { name: 'Save settings' }).click();
      await expect
        .poll(() => form.getByRole('status').textContent())
        .toBe('Saved: concurrency, flakyPolicy, flakyRetries, probationThreshold.');
      expect(await gok('getQueue', G)).toMatchObject({
        concurrency: 3,
        flakyPolicy: 'ignore_quarantined',
        flakyRetries: 2,
        flakyReportGraceSeconds: 120,
        probationThreshold: 0.4,
      });
      // Emptying the threshold turns probation off again (null), once the page shows the saved value.
      await expect.poll(() => form.getByLabel('Probation threshold').inputValue()).toBe('0.4');
      await form.getByLabel('Probation threshold').fill('');
      await form.getByRole('button', { name: 'Save settings' }).click();
      await expect.poll(() => form.getByRole('status').textContent()).toBe('Saved: probationThreshold.');
      expect((await gok('getQueue', G)).probationThreshold).toBeNull();
      await shot('git-queue-settings');
    } finally {
      await context?.close();
      await git.close();
      await repo.cleanup();
    }
  }, 60_000);
});
