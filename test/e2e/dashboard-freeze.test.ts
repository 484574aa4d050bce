import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, REPO } from '../server/helpers.js';
import { browserMissing, launchChromium } from '../support/browser.js';
import { startTestServer, type TestServer } from '../support/server.js';

// The dashboard's freeze banner in real Chromium against a real server: shown while a freeze
// holds the queue (until when, why), gone without a reload once it is lifted; direct PRs marked; the
// settings form's testing timeout set to "auto" and back to minutes.
const SHOTS = join(import.meta.dirname, '.screenshots');
const missing = browserMissing();
const Q = { repo: REPO, targetBranch: 'main' };

if (missing && process.env.CI) {
  describe('dashboard freeze banner and direct PRs in Chromium', () => {
    it('has a browser to run in (CI must not skip these tests)', () => {
      throw new Error(`CI is set but ${missing}`);
    });
  });
} else if (missing) {
  describe.skip(`dashboard freeze banner — skipped: ${missing}`, () => {
    it('needs Chromium', () => {});
  });
} else {
  describe('dashboard freeze banner and direct PRs in Chromium', () => {
    let server: TestServer;
    let browser: Browser;
    let page: Page;

    beforeAll(async () => {
      mkdirSync(SHOTS, { recursive: true });
      server = await startTestServer({ sandbox: { testSeconds: 1 } });
      browser = await launchChromium();
    });
    afterAll(async () => {
      await browser?.close();
      await server?.close();
    });

    const ok = async (op: Parameters<typeof call>[1], body: unknown) => {
      const res = await call(server, op, body);
      expect(res.status, `${op}: ${res.text}`).toBe(200);
      return res.json;
    };

    it('shows until when and why the queue is frozen, and drops the banner once unfrozen', async () => {
      await ok('createQueue', Q);
      const end = new Date(Date.now() + 3 * 3_600_000);
      end.setUTCSeconds(0, 0);
      await ok('updateQueue', {
        ...Q,
        freezes: [
          {
            start: new Date(Date.now() - 60_000).toISOString(),
            end: end.toISOString(),
            reason: 'release 4.2',
          },
        ],
      });
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      page = await context.newPage();
      page.setDefaultTimeout(10_000);
      try {
        await page.goto(server.url.replace(/v1$/, ''));
        await page.getByLabel('API token').fill(server.token);
        await page.getByRole('button', { name: 'Open the dashboard' }).click();
        await page.getByRole('navigation', { name: 'Pages' }).waitFor();
        await page.goto(`${server.url.replace(/v1$/, '')}#/queue/github.com/acme/web/main`);
        const banner = page.getByTestId('frozen');
        const until = end.toISOString().slice(0, 16).replace('T', ' ');
        await expect
          .poll(() => banner.textContent())
          .toBe(
            `Frozen until ${until} UTC — release 4.2. Pull requests are tested; only those of priority 0 or lower land until then.`,
          );
        expect(await banner.getAttribute('role')).toBe('status');
        await page.screenshot({ path: join(SHOTS, 'queue-frozen.png'), fullPage: true });

        await ok('updateQueue', { ...Q, freezes: [] });
        await expect.poll(() => banner.count(), { timeout: 10_000 }).toBe(0);
      } finally {
        await context.close();
      }
    });

    it('marks a direct PR "direct" in the queue and on its page', async () => {
      const R = { repo: REPO, targetBranch: 'release' };
      await ok('createQueue', R);
      await ok('updateQueue', { ...R, state: 'paused' });
      await ok('submitPullRequest', { ...R, pr: { number: 11 }, direct: true });
      await ok('submitPullRequest', { ...R, pr: { number: 12 } });
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      page = await context.newPage();
      page.setDefaultTimeout(10_000);
      try {
        const origin = server.url.replace(/v1$/, '');
        await page.goto(origin);
        await page.getByLabel('API token').fill(server.token);
        await page.getByRole('button', { name: 'Open the dashboard' }).click();
        await page.getByRole('navigation', { name: 'Pages' }).waitFor();
        await page.goto(`${origin}#/queue/github.com/acme/web/release`);
        await page.locator('[data-pr="12"]').waitFor();
        expect(await page.locator('[data-pr="11"] .tag.direct').textContent()).toBe('direct');
        expect(await page.locator('[data-pr="12"] .tag.direct').count()).toBe(0);
        await page.screenshot({ path: join(SHOTS, 'queue-direct.png'), fullPage: true });
        await page.goto(`${origin}#/pr/github.com/acme/web/release/11`);
        await expect.poll(() => page.getByTestId('direct').textContent()).toContain('direct');
      } finally {
        await context.close();
      }
    });

    it('sets the testing timeout to "auto" in the settings form, shows it after a reload, and back to minutes', async () => {
      const T = { repo: REPO, targetBranch: 'timeouts' };
      await ok('createQueue', T);
      await ok('updateQueue', { ...T, testingTimeoutMinutes: 30 });
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      page = await context.newPage();
      page.setDefaultTimeout(10_000);
      try {
        const origin = server.url.replace(/v1$/, '');
        await page.goto(origin);
        await page.getByLabel('API token').fill(server.token);
        await page.getByRole('button', { name: 'Open the dashboard' }).click();
        await page.getByRole('navigation', { name: 'Pages' }).waitFor();
        await page.goto(`${origin}#/queue/github.com/acme/web/timeouts`);
        const form = page.getByRole('form', { name: 'Queue settings' });
        const minutes = form.getByLabel('Testing timeout (minutes)');
        const auto = form.getByRole('checkbox', { name: 'auto' });
        await expect.poll(() => minutes.inputValue()).toBe('30');
        expect(await auto.isChecked()).toBe(false);

        await auto.check();
        expect(await minutes.isDisabled()).toBe(true);
        await form.getByRole('button', { name: 'Save settings' }).click();
        await expect.poll(() => form.getByRole('status').textContent()).toBe('Saved: testingTimeoutMinutes.');
        expect(await ok('getQueue', T)).toMatchObject({
          testingTimeoutMinutes: 'auto',
          testingTimeoutMinutesNow: 60,
        });

        // A fresh page shows "auto" ticked and the timeout in force, not a blank number.
        await page.reload();
        await expect.poll(() => auto.isChecked()).toBe(true);
        await expect.poll(() => minutes.inputValue()).toBe('60');
        expect(await minutes.isDisabled()).toBe(true);
        await page.screenshot({ path: join(SHOTS, 'settings-timeout-auto.png'), fullPage: true });

        await auto.uncheck();
        await minutes.fill('45');
        await form.getByRole('button', { name: 'Save settings' }).click();
        await expect.poll(() => form.getByRole('status').textContent()).toBe('Saved: testingTimeoutMinutes.');
        expect((await ok('getQueue', T)).testingTimeoutMinutes).toBe(45);
        await expect.poll(() => minutes.inputValue()).toBe('45');
        expect(await auto.isChecked()).toBe(false);
      } finally {
        await context.close();
      }
    });
  });
}
