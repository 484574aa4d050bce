/**
 * The dashboard's webhooks page in real Chromium against a real server delivering to a receiver on
 * 127.0.0.1: endpoints with their state and why, the delivery log (attempt, status code, latency,
 * the receiver's answer), a replay by clicking the button, and stored XSS: a hostile endpoint
 * description and a hostile receiver answer are shown as text, never run or parsed as markup.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../server/helpers.js';
import { browserMissing, launchChromium } from '../support/browser.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { startReceiver, type Receiver } from '../support/webhook-receiver.js';

const SHOTS = join(import.meta.dirname, '.screenshots');
const missing = browserMissing();
/** Markup that would run or draw something if the page ever parsed it as HTML. */
const HOSTILE_DESCRIPTION = `deploys <img src=x onerror="window.__pwned='description'"><script>window.__pwned='script'</script>`;
const HOSTILE_ANSWER = `<b>boom</b><img src=x onerror="window.__pwned='answer'"><svg onload="window.__pwned='svg'"></svg>`;

if (missing && process.env.CI) {
  describe('webhooks page in Chromium', () => {
    it('has a browser to run in (CI must not skip these tests)', () => {
      throw new Error(`CI is set but ${missing}`);
    });
  });
} else if (missing) {
  describe.skip(`webhooks page in Chromium — skipped: ${missing}`, () => {
    it('needs Chromium', () => {});
  });
} else {
  describe('webhooks page in Chromium', () => {
    let server: TestServer;
    let receiver: Receiver;
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
      receiver = await startReceiver();
      // No retries: a failed attempt fails the delivery at once, so only a replay sends it again.
      server = await startTestServer({ webhooks: { allowPrivate: true, allowHttp: true, retrySchedule: [], timeoutMs: 2000, pollMs: 50 } });
      browser = await launchChromium();
    });
    afterAll(async () => {
      await browser?.close();
      await server?.close();
      await receiver?.close();
    });

    it('shows endpoints with their state, the delivery log with the hostile answer as text, and replays a delivery by its button', async () => {
      receiver.mode = { kind: 'status', status: 500, body: HOSTILE_ANSWER };
      const created = await ok('createWebhook', { url: receiver.url, description: HOSTILE_DESCRIPTION });
      receiver.secrets.push(created.secret);
      const id = created.endpoint.id as string;
      const off = await ok('createWebhook', { url: 'https://hooks.example.com/off', description: 'paused for maintenance' });
      await ok('disableWebhook', { id: off.endpoint.id });
      const { webhookId } = await ok('testWebhook', { id });
      const deliveries = async () => (await ok('listWebhookDeliveries', { id })).deliveries as { id: number; state: string }[];
      await expect.poll(async () => (await deliveries())[0]?.state, { timeout: 10_000 }).toBe('failed');
      const failed = (await deliveries())[0].id;

      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      page = await context.newPage();
      page.setDefaultTimeout(10_000);
      const dialogs: string[] = [];
      page.on('dialog', (d) => {
        dialogs.push(d.message());
        void d.dismiss();
      });
      await page.goto(origin());
      await page.getByLabel('API token').fill(server.token);
      await page.getByRole('button', { name: 'Open the dashboard' }).click();
      await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Webhooks' }).click();
      await page.getByRole('heading', { name: 'Webhooks' }).waitFor();

      // The endpoints: state glyph and word, and why the second one is off.
      const row = page.getByRole('row', { name: /hooks\.example\.com\/off/ });
      expect(await row.getByRole('cell').last().textContent()).toBe('⊘ disabledDisabled: disabled by request.');
      const mine = page.getByRole('row', { name: new RegExp(receiver.url.replaceAll('.', '\\.')) });
      expect(await mine.locator('.description').textContent()).toBe(HOSTILE_DESCRIPTION);
      expect(await mine.getByRole('cell').last().textContent()).toContain('enabled');
      await shot('webhooks-list');

      // The delivery log: the attempt's status, latency and the receiver's answer, as text.
      await mine.getByRole('link', { name: receiver.url }).click();
      await page.getByRole('heading', { name: 'Webhook endpoint' }).waitFor();
      expect(await page.getByTestId('endpoint-state').textContent()).toMatch(/enabled Every attempt has failed since \d{4}-\d{2}-\d{2} [\d:]{8} UTC; retries continue\./);
      const first = page.getByRole('article', { name: `Delivery ${failed}` });
      await first.waitFor();
      expect(await first.textContent()).toContain(webhookId);
      const attempt = first.getByRole('row', { name: /^1 / });
      const cells = await attempt.getByRole('cell').allTextContents();
      expect(cells[1]).toBe('500');
      expect(cells[2]).toMatch(/^\d+ ms$/);
      expect(await attempt.locator('pre.excerpt').textContent()).toBe(HOSTILE_ANSWER);
      expect(await attempt.locator('.error-text').textContent()).toBe('HTTP 500');
      await shot('webhooks-log-failed');

      // The receiver is back: the button replays the delivery, the new attempt appears, same webhook-id.
      receiver.mode = { kind: 'ok' };
      await first.getByRole('button', { name: `Replay delivery ${failed}` }).click();
      const status = page.getByRole('status');
      await expect.poll(() => status.textContent()).toMatch(new RegExp(`^Delivery #${failed} replayed as delivery #\\d+ \\(same webhook-id ${webhookId}\\)\\.$`));
      const replayed = Number(/as delivery #(\d+)/.exec((await status.textContent()) ?? '')![1]);
      expect(replayed).toBeGreaterThan(failed);
      const again = page.getByRole('article', { name: `Delivery ${replayed}` });
      await expect.poll(async () => (await again.getByRole('row', { name: /^1 / }).getByRole('cell').allTextContents())[1], { timeout: 10_000 }).toBe('200');
      expect(await again.locator('pre.excerpt').textContent()).toBe('ok');
      expect(await again.textContent()).toContain('succeeded');
      expect(receiver.delivered.map((d) => d.headers['webhook-id'])).toEqual([webhookId]);
      expect(receiver.delivered[0].verified).toBe(true);
      await shot('webhooks-log-replayed');

      // Nothing hostile ran or became an element.
      expect(await page.evaluate('window.__pwned')).toBeUndefined();
      expect(dialogs).toEqual([]);
      expect(await page.locator('#main img, #main script, #main b, #main svg[onload]').count()).toBe(0);
      await page.goto(`${origin()}#/webhooks`);
      await page.getByRole('heading', { name: 'Webhooks' }).waitFor();
      await page.getByText(HOSTILE_DESCRIPTION).waitFor();
      expect(await page.locator('#main img, #main script').count()).toBe(0);
      expect(await page.evaluate('window.__pwned')).toBeUndefined();
      await context.close();
    }, 60_000);
  });
}
