/**
 * The flaky test page in real Chromium against a real server, and `railyard flaky show` against the
 * same server: uploads kept out of detection (infrastructure failure protection: most of their
 * tests failed) are listed with the test's history, apart from the runs that count; a quarantine
 * set from the page while quarantining is off shows the server's warning; and an override shows
 * its owner (the token's label), reason and time left, in the test page and in the list.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, REPO } from '../server/helpers.js';
import { browserMissing, launchChromium } from '../support/browser.js';
import { isolatedEnv, railyard } from '../support/cli.js';
import { startTestServer, type TestServer } from '../support/server.js';

const SHOTS = join(import.meta.dirname, '.screenshots');
const missing = browserMissing();
const ORG = 'local';
const key = { repo: REPO, org_url_slug: ORG };

/** `n` tests of the `infra` suite, those in `failing` failed. */
const junit = (n: number, failing: (i: number) => boolean) =>
  `<testsuite name="infra">${Array.from({ length: n }, (_, i) =>
    failing(i)
      ? `<testcase classname="infra" name="t${i}"><failure message="ECONNREFUSED 10.0.0.${i}:5432"/></testcase>`
      : `<testcase classname="infra" name="t${i}"/>`,
  ).join('')}</testsuite>`;

if (missing && process.env.CI) {
  describe('flaky lifecycle in Chromium', () => {
    it('has a browser to run in (CI must not skip these tests)', () => {
      throw new Error(`CI is set but ${missing}`);
    });
  });
} else if (missing) {
  describe.skip(`flaky lifecycle in Chromium — skipped: ${missing}`, () => {
    it('needs Chromium', () => {});
  });
} else {
  describe('flaky lifecycle in Chromium', () => {
    let server: TestServer;
    let browser: Browser;
    let page: Page;

    const ok = async (op: Parameters<typeof call>[1], body: unknown) => {
      const res = await call(server, op, body);
      expect(res.status, `${op}: ${res.text}`).toBe(200);
      return res.json;
    };
    const origin = () => server.url.replace(/v1$/, '');
    const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

    beforeAll(async () => {
      mkdirSync(SHOTS, { recursive: true });
      server = await startTestServer({
        tokens: { 'lifecycle-token': ORG },
        labels: { 'lifecycle-token': 'dana (dashboard)' },
      });
      browser = await launchChromium();
    });
    afterAll(async () => {
      await browser?.close();
      await server?.close();
    });

    it('lists the uploads excluded from detection on the test page and in `flaky show`; a quarantine shows its warning, owner, reason and time left', async () => {
      const HOUR = 3_600_000;
      const at = (hoursAgo: number) => new Date(Date.now() - hoursAgo * HOUR).toISOString();
      // A broken runner: 11 of 12 tests failed, so the upload is kept out of detection; then a normal run where t0 fails.
      const outage = await ok('uploadTestResults', {
        ...key,
        branch: 'main',
        sha: 'dead'.repeat(10),
        job: 'ci-arm',
        started_at: at(2),
        reports: [{ name: 'junit.xml', content: junit(12, (i) => i < 11) }],
      });
      expect(outage.excluded_from_detection).toBe(true);
      await ok('uploadTestResults', {
        ...key,
        branch: 'main',
        sha: 'beef'.repeat(10),
        job: 'ci',
        started_at: at(1),
        reports: [{ name: 'junit.xml', content: junit(12, (i) => i === 0) }],
      });
      const failing = await ok('listFailingTests', {
        ...key,
        start_time: at(24),
        end_time: new Date(Date.now() + 60_000).toISOString(),
        page_query: { page_size: 100 },
      });
      const t0 = failing.tests.find((t: { name: string }) => t.name === 't0').id as string;

      // The CLI: the history line and the excluded upload.
      const env = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: server.token });
      const shown = await railyard(['flaky', 'show', t0, '--repo', 'github.com/acme/web', '--org', ORG], env);
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout).toMatch(
        /\nhistory30d\s+1 run, 1 failed; not counted: 1 run in 1 upload excluded from detection \(most of their tests failed: an infrastructure failure\)\n/,
      );
      expect(shown.stdout).toMatch(
        /\nexcludedUploads\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d main deaddea job ci-arm: 11 of 12 tests failed \(this test failed\)\n/,
      );
      const json = JSON.parse(
        (await railyard(['flaky', 'show', t0, '--json', '--repo', 'github.com/acme/web', '--org', ORG], env))
          .stdout,
      );
      expect(json.history.excluded_uploads).toMatchObject([
        { sha: 'dead'.repeat(10), job: 'ci-arm', tests: 12, failed: 11, outcome: 'failed' },
      ]);

      // The dashboard's test page.
      page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
      page.setDefaultTimeout(10_000);
      await page.goto(origin());
      await page.getByLabel('API token').fill(server.token);
      await page.getByRole('button', { name: 'Open the dashboard' }).click();
      await page.getByRole('navigation', { name: 'Pages' }).waitFor();
      await page.goto(`${origin()}#/flaky/github.com/acme/web/test/${t0}`);
      await page.getByRole('heading', { name: 't0' }).waitFor();
      const excluded = page.getByRole('region', { name: 'Uploads excluded from detection' });
      await excluded.waitFor();
      expect(await excluded.locator('p').first().textContent()).toBe(
        "In these uploads at least 80% of at least 10 tests failed (an infrastructure failure, such as a broken runner): their results do not count toward this test's status or failure rates.",
      );
      const row = excluded.getByTestId('excluded-uploads').getByRole('row');
      expect(await row.count()).toBe(2);
      expect((await row.nth(1).getByRole('cell').allTextContents()).slice(1)).toEqual([
        'main',
        'deaddea',
        'ci-arm',
        '11 of 12',
        'failed',
      ]);
      await shot('flaky-excluded-uploads');

      // Quarantining is off: "Always quarantine" for 7 days with a reason shows the server's warning.
      await page.getByLabel('For').selectOption('7');
      await page.getByLabel('Reason').fill('KAN-5: runner pool flakes');
      await page.getByRole('button', { name: 'Always quarantine' }).click();
      const warning = page.getByTestId('quarantine-warning');
      await warning.waitFor();
      expect(await warning.textContent()).toMatch(
        /^⚠ quarantining is off for github\.com\/acme\/web: the test is not quarantined .* --quarantining on/,
      );
      await expect
        .poll(() => page.getByTestId('quarantine-override').textContent())
        .toMatch(
          /^Always quarantined, until .* \((6d 23h|7d) left\), set by dana \(dashboard\): KAN-5: runner pool flakes$/,
        );
      expect(await page.getByTestId('quarantine-state').textContent()).toBe(
        'Not quarantined: its failures count.',
      );
      expect(await page.getByRole('status').count()).toBe(0);
      await shot('flaky-quarantine-warning');

      // Turned on, the list shows it quarantined with its owner and time left.
      await ok('updateRepositorySettings', { ...key, settings: { quarantining_enabled: true } });
      await page.goto(`${origin()}#/flaky/github.com/acme/web`);
      await page.getByRole('tab', { name: 'Failing, last 24 h' }).click();
      const cell = page.locator('tr[data-test="t0"] td').nth(1);
      await expect
        .poll(() => cell.textContent())
        .toMatch(/^⊘ quarantineddana \(dashboard\) · (6d 23h|7d) left$/);
      await shot('flaky-list-quarantine-owner');
    });
  });
}
