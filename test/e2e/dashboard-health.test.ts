/**
 * The dashboard's queue page in real Chromium against a real server on the git forge: what the
 * doctor says needs fixing (a required check that never reports), and the last hour's merged,
 * failed and cancelled PRs with their reasons, so an emptied queue does not read only "The queue
 * is empty". Screenshots go to test/e2e/.screenshots/ (gitignored).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRepo, type FixtureRepo } from '../forge/fixture.js';
import { ok } from '../server/helpers.js';
import { browserMissing, launchChromium } from '../support/browser.js';
import { startTestServer, type TestServer } from '../support/server.js';

const SHOTS = join(import.meta.dirname, '.screenshots');
const LOCATION = { host: 'github.com', owner: 'acme', name: 'app' };
const Q = { repo: LOCATION, targetBranch: 'main' };
const missing = browserMissing();

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function settle(server: TestServer, prNumber: number): Promise<any> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const pr = await ok(server, 'getSubmittedPullRequest', { ...Q, pr: { number: prNumber } });
    if (['merged', 'failed', 'cancelled'].includes(pr.state)) return pr;
    if (Date.now() > deadline) throw new Error(`#${prNumber} is still ${pr.state}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

if (missing && process.env.CI) {
  describe('queue page health in Chromium', () => {
    it('has a browser to run in (CI must not skip these tests)', () => {
      throw new Error(`CI is set but ${missing}`);
    });
  });
} else if (missing) {
  describe.skip(`queue page health in Chromium — skipped: ${missing}`, () => {
    it('needs Chromium', () => {});
  });
} else {
  describe('queue page health in Chromium', () => {
    let repo: FixtureRepo;
    let server: TestServer;
    let browser: Browser;
    let page: Page;

    beforeAll(async () => {
      mkdirSync(SHOTS, { recursive: true });
      repo = await createRepo({
        location: LOCATION,
        checks: { test: 'true' },
        files: { 'app.txt': 'app\n' },
      });
      server = await startTestServer({ gitRoot: repo.root });
      browser = await launchChromium();
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      page = await context.newPage();
      page.setDefaultTimeout(15_000);
    });
    afterAll(async () => {
      await browser?.close();
      await server?.close();
      await repo?.cleanup();
    });

    const open = async () => {
      await page.goto(server.url.replace(/v1$/, ''));
      await page.getByLabel('API token').fill(server.token);
      await page.getByRole('button', { name: 'Open the dashboard' }).click();
      await page.getByRole('navigation', { name: 'Pages' }).waitFor();
      const doctorRead = page.waitForResponse((r) => r.url().endsWith('/v1/getMergeQueueDoctor'));
      await page.goto(`${server.url.replace(/v1$/, '')}#/queue/github.com/acme/app/main`);
      return doctorRead;
    };

    it("an emptied queue lists the last hour's merged, failed and cancelled PRs with their reasons, and the doctor names the check that never reports", async () => {
      repo.openPr(1, { 'one.txt': '1\n' }, { title: 'Lands' });
      repo.openPr(2, { 'two.txt': '2\n' }, { title: 'Taken out' });
      repo.openPr(3, { 'three.txt': '3\n' }, { title: 'Waits for lint' });
      await ok(server, 'createQueue', Q);
      await ok(server, 'updateQueue', { ...Q, requiredStatuses: ['test'] });
      await ok(server, 'submitPullRequest', { ...Q, pr: { number: 1 } });
      expect(await settle(server, 1)).toMatchObject({ state: 'merged' });

      // Healthy: the page says so by saying nothing, once the doctor answered.
      const answered = await open();
      expect((await answered.json()).notices).toEqual([]);
      await page.locator('[data-outcome-pr="1"]').waitFor();
      expect(await page.getByTestId('doctor').count()).toBe(0);

      await ok(server, 'updateQueue', { ...Q, state: 'paused' });
      await ok(server, 'submitPullRequest', { ...Q, pr: { number: 2 } });
      await ok(server, 'cancelPullRequest', { ...Q, pr: { number: 2 } });
      await ok(server, 'updateQueue', { ...Q, state: 'running', requiredStatuses: ['test', 'lint'] });
      await ok(server, 'submitPullRequest', { ...Q, pr: { number: 3 } });
      expect(await settle(server, 3)).toMatchObject({ state: 'failed' });

      // The page as it stands: the same one, read again.
      await page.reload();
      await page.getByText('The queue is empty.').waitFor();
      const outcomes = page.getByTestId('recent-outcomes');
      await outcomes.locator('[data-outcome-pr="3"]').waitFor();
      const rows = await outcomes
        .locator('[data-outcome-pr]')
        .evaluateAll((els) =>
          els.map((e) => [Number(e.getAttribute('data-outcome-pr')), e.getAttribute('data-state')]),
        );
      expect(rows).toEqual([
        [3, 'failed'],
        [2, 'cancelled'],
        [1, 'merged'],
      ]);
      expect(await outcomes.getByTestId('outcome-counts').textContent()).toBe(
        '1 merged · 1 failed · 1 cancelled',
      );
      expect(await outcomes.locator('[data-outcome-pr="1"]').textContent()).toMatch(
        /^✔? ?#1 Lands \(.+\) — merged /,
      );
      expect(await outcomes.locator('[data-outcome-pr="3"]').textContent()).toContain('#3 Waits for lint');
      expect(await outcomes.locator('[data-outcome-pr="3"]').textContent()).toContain(
        '— failed: a required check has no check in the configuration',
      );
      expect(await outcomes.locator('[data-outcome-pr="2"]').textContent()).toContain(
        '— cancelled: someone asked for it',
      );

      const doctor = page.getByTestId('doctor');
      await doctor.waitFor();
      expect(await doctor.getByRole('heading').textContent()).toBe('Needs attention (1)');
      expect(await doctor.locator('li').textContent()).toMatch(
        /Required check "lint" never reported on the queue's test commits/,
      );
      await page.screenshot({ path: join(SHOTS, 'queue-health.png'), fullPage: true });
    }, 120_000);
  });
}
