/**
 * The `slack` endpoint kind against a Slack incoming webhook on 127.0.0.1
 * (test/support/slack-receiver.ts): one message per PR outcome with the reason as a sentence and
 * links to the PR on its forge and to the dashboard, sent by Slack's `@slack/webhook` package,
 * without the signing headers of the generic endpoints; Slack's refusals land in the delivery log.
 */
import { describe, expect, it } from 'vitest';
import { cleanupsAfterEach, serversPerTest } from '../support/hooks.js';
import { slackMessage } from '../../src/server/webhooks/slack.js';
import { startSlackReceiver, type SlackReceiver } from '../support/slack-receiver.js';
import { ok, Q } from './helpers.js';

const cleanup = cleanupsAfterEach();
const server = serversPerTest();
const LOCAL = { allowPrivate: true, allowHttp: true, retrySchedule: [200, 300], timeoutMs: 2000, pollMs: 50 };

async function slack(): Promise<SlackReceiver> {
  const r = await startSlackReceiver();
  cleanup(() => r.close());
  return r;
}

async function until<T>(
  what: string,
  get: () => T | Promise<T>,
  timeoutMs = 20_000,
): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await get();
    if (value) return value as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('slack endpoints', () => {
  it('post one message per PR outcome, the reason as a sentence, linking the PR and the dashboard, through @slack/webhook', async () => {
    const r = await slack();
    const s = await server({ sandbox: { testSeconds: 1, failPrs: new Set([7]) }, webhooks: LOCAL });
    const created = await ok(s, 'createWebhook', { url: r.url, kind: 'slack' });
    expect(created.endpoint.events).toEqual([
      'pull_request.merged',
      'pull_request.failed',
      'pull_request.canceled',
      'test_case.status_changed',
      'webhook.test',
    ]);
    await ok(s, 'createQueue', { ...Q, concurrency: 1 });
    await ok(s, 'submitPullRequest', { ...Q, pr: { number: 3 } });
    await ok(s, 'cancelPullRequest', { ...Q, pr: { number: 3 } });
    await ok(s, 'submitPullRequest', { ...Q, pr: { number: 1 } });
    await ok(s, 'submitPullRequest', { ...Q, pr: { number: 7 } });
    await until('three messages', () => r.messages.length >= 3);
    // Nothing else comes: submitted, queued, testing and pending_failure are not outcomes.
    await new Promise((resolve) => setTimeout(resolve, 1500));

    const dashboard = `${s.url.replace(/\/v1$/, '')}/#/pr/github.com/acme/web/main`;
    const byPr = (n: number) => r.messages.filter((m) => m.includes(`|acme/web#${n}>`));
    expect(r.messages).toHaveLength(3);
    expect(byPr(3)).toEqual([
      `:no_entry_sign: PR <https://github.com/acme/web/pull/3|acme/web#3> “Sandbox PR #3” by sandbox was taken out of the merge queue of \`main\` because someone asked for it.\n<${dashboard}/3|Open it in the Railyard dashboard>`,
    ]);
    expect(byPr(1)).toEqual([
      `:white_check_mark: PR <https://github.com/acme/web/pull/1|acme/web#1> “Sandbox PR #1” by sandbox was merged into \`main\` because its tests passed and the queue merged it.\n<${dashboard}/1|Open it in the Railyard dashboard>`,
    ]);
    expect(byPr(7)).toEqual([
      `:x: PR <https://github.com/acme/web/pull/7|acme/web#7> “Sandbox PR #7” by sandbox failed in the merge queue of \`main\` because its check failed.\n> test failed (sandbox: the run contains #7 of --sandbox-fail)\n<${dashboard}/7|Open it in the Railyard dashboard>`,
    ]);
    for (const req of r.requests) {
      expect(req.status, req.answer).toBe(200);
      // Sent by Slack's own package, as Slack expects: JSON, its user agent, no Standard Webhooks / Svix headers.
      expect(req.headers['user-agent']).toMatch(/^@slack:webhook\/\d+\.\d+\.\d+ node\//);
      expect(req.headers['content-type']).toBe('application/json');
      expect(Object.keys(req.headers).filter((h) => /^(webhook|svix)-/.test(h))).toEqual([]);
      expect(Object.keys(JSON.parse(req.body) as object)).toEqual(['text']);
    }
  });

  it('posts one sentence when a test turns flaky (test_case.status_changed), linking the test, and nothing for the other flaky-test events', async () => {
    const r = await slack();
    const s = await server({ webhooks: LOCAL });
    // The default Slack filter; v2.test_case.status_changed and monitor events would be a second and third message of the same change.
    await ok(s, 'createWebhook', { url: r.url, kind: 'slack' });
    const report = `<testsuite name="auth"><testcase classname="auth" name="logs in" file="test/login.test.ts"><failure message="Timeout 5000ms"/></testcase><testcase classname="auth" name="logs in" file="test/login.test.ts"/></testsuite>`;
    await ok(s, 'uploadTestResults', {
      repo: Q.repo,
      org_url_slug: s.org,
      branch: 'main',
      sha: 'a'.repeat(40),
      reports: [{ name: 'junit.xml', content: report }],
    });
    await until('the message', () => r.messages.length >= 1);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(r.messages).toHaveLength(1);
    expect(r.messages[0]).toBe(
      ':warning: Test <https://github.com/acme/web/blob/HEAD/test/login.test.ts|logs in> in acme/web is now flaky (was healthy). Inconsistent results on the same commit aaaaaaa on main',
    );
    expect(r.requests[0].status).toBe(200);
  });

  it('names the repository of a flaky test by name, not by its address (a self-managed GitLab under /gitlab)', () => {
    const project = 'http://127.0.0.1:8929/gitlab/acme/platform/app';
    const message = slackMessage('test_case.status_changed', {
      test_case: {
        name: 'logs in',
        repository: { html_url: project },
        html_url: `${project}/-/blob/HEAD/test/login.test.ts`,
      },
      status_change: {
        previous_status: 'healthy',
        current_status: { value: 'flaky', reason: 'Passed on retry' },
      },
      railyard: { repository: { host: '127.0.0.1:8929', owner: 'acme/platform', name: 'app' } },
    });
    expect(message?.text).toBe(
      `:warning: Test <${project}/-/blob/HEAD/test/login.test.ts|logs in> in acme/platform/app is now flaky (was healthy). Passed on retry`,
    );
  });

  it("records Slack's refusal (404 no_service for a removed hook) in the delivery log, and the test event works", async () => {
    const r = await slack();
    const s = await server({ webhooks: { ...LOCAL, retrySchedule: [] } });
    const gone = (await ok(s, 'createWebhook', { url: r.removedUrl, kind: 'slack' })).endpoint.id as string;
    await ok(s, 'testWebhook', { id: gone });
    const failed = await until('the failed delivery', async () => {
      const { deliveries } = await ok(s, 'listWebhookDeliveries', { id: gone });
      return deliveries[0]?.state === 'failed' ? deliveries[0] : null;
    });
    expect(failed.log).toHaveLength(1);
    expect(failed.log[0]).toMatchObject({
      attempt: 1,
      status: 404,
      error: 'HTTP 404',
      response: 'no_service',
    });

    const live = (await ok(s, 'createWebhook', { url: r.url, kind: 'slack' })).endpoint.id as string;
    await ok(s, 'testWebhook', { id: live });
    await until('the test message', () => r.messages.length === 1);
    expect(r.messages).toEqual(['Railyard test event: this Slack webhook works.']);
  });
});
