/**
 * Outgoing webhooks end to end: a real server over HTTP delivers to receivers on 127.0.0.1 that
 * verify the signatures with the `svix` and `standardwebhooks` packages; payloads are checked
 * against Trunk's event schemas (test/support/trunk-webhook-schemas.ts); failing, stalling and
 * recovering receivers; the delivery log, replays, rotation, and the address rules.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { describe, expect, it, type TestContext } from 'vitest';
import { onCleanup, ownCleanups } from '../support/forge-e2e.js';
import { postgresForFile } from '../support/hooks.js';
import { skipWithoutPostgres } from '../support/postgres.js';
import {
  RAILYARD_EVENT_SCHEMAS,
  TRUNK_EVENT_SCHEMAS,
  TRUNK_FLAKY_EVENT_SCHEMAS,
} from '../support/trunk-webhook-schemas.js';
import { startReceiver, type Receiver } from '../support/webhook-receiver.js';
import { startTestServer, type TestServer, type TestServerOptions } from '../support/server.js';
import { call, ok, Q } from './helpers.js';

/*
 * The tests run side by side (`it.concurrent`): most of their time is waiting on deliveries, retry
 * schedules and sandbox runs. What a test starts (`server`, `receiver`, `cleanup`) is its own and
 * undone when it finishes (`mine`), and on PostgreSQL each test has a database of its own.
 */
const mine = <C extends TestContext>(fn: (ctx: C) => Promise<void>) =>
  ownCleanups<C>('the webhook tests', fn);
const cleanup = onCleanup;
async function server(opts?: TestServerOptions): Promise<TestServer> {
  const s = await startTestServer(opts);
  cleanup(() => s.close());
  return s;
}
const noPostgres = skipWithoutPostgres();
const postgres = postgresForFile(noPostgres);
/** Tests deliver to 127.0.0.1 over plain HTTP; retries come quickly. */
const LOCAL = {
  allowPrivate: true,
  allowHttp: true,
  retrySchedule: [200, 300, 400, 500, 600],
  timeoutMs: 1000,
  pollMs: 50,
};

const ajv = new Ajv({ allErrors: true, strict: false });
(addFormats as unknown as (a: Ajv) => void)(ajv);
const validators = new Map(
  Object.entries({ ...TRUNK_EVENT_SCHEMAS, ...TRUNK_FLAKY_EVENT_SCHEMAS, ...RAILYARD_EVENT_SCHEMAS }).map(
    ([type, s]) => [type, ajv.compile(s)],
  ),
);

function schemaErrors(payload: Record<string, unknown>): string[] {
  const type = String(payload.type);
  const validate = validators.get(type);
  if (!validate) return [`no schema for event type ${type}`];
  if (validate(payload)) return [];
  return (ajv.errorsText(validate.errors) || 'invalid').split(', ').map((e) => `${type}: ${e}`);
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

async function receiver(): Promise<Receiver> {
  const r = await startReceiver();
  cleanup(() => r.close());
  return r;
}

async function endpoint(s: TestServer, r: Receiver, extra: Record<string, unknown> = {}): Promise<string> {
  const created = await ok(s, 'createWebhook', { url: r.url, ...extra });
  expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
  r.secrets.push(created.secret);
  return created.endpoint.id as string;
}

const typesOf = (r: Receiver, pr: number) =>
  r.delivered.filter((d) => d.json.pr_number === pr).map((d) => String(d.json.type));

function databaseSuite(database: () => Promise<Pick<TestServerOptions, 'databaseUrl'>>): void {
  it.concurrent(
    "delivers every event of a PR's way through the queue, signed, valid against Trunk's schemas, in order",
    mine(async () => {
      const r = await receiver();
      const s = await server({ sandbox: { testSeconds: 1 }, webhooks: LOCAL, ...(await database()) });
      await endpoint(s, r);
      await ok(s, 'createQueue', Q);
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 1 } });
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 2 } });
      await until(
        'both merged events',
        () => typesOf(r, 1).includes('pull_request.merged') && typesOf(r, 2).includes('pull_request.merged'),
      );

      for (const pr of [1, 2]) {
        const seen = typesOf(r, pr);
        const order = [
          'pull_request.submitted',
          'pull_request.queued',
          'pull_request.testing',
          'pull_request.merged',
        ].map((t) => seen.indexOf(t));
        expect(
          order.every((i) => i >= 0),
          seen.join(' '),
        ).toBe(true);
        expect([...order].sort((a, b) => a - b)).toEqual(order);
      }
      for (const d of r.delivered) {
        expect(d.verified, d.body).toBe(true);
        expect(d.headers['svix-id']).toBe(d.headers['webhook-id']);
        expect(d.headers['svix-signature']).toBe(d.headers['webhook-signature']);
        expect(schemaErrors(d.json)).toEqual([]);
      }
      const merged = r.delivered.find(
        (d) => d.json.type === 'pull_request.merged' && d.json.pr_number === 1,
      )!.json;
      expect(merged).toMatchObject({
        action: 'merged',
        status: 'merged',
        repository: Q.repo,
        target_branch: 'main',
        merged_reason: 'MERGE_GRAPH_MERGE',
      });
      expect(String(merged.http_details_url)).toMatch(
        /^http:\/\/127\.0\.0\.1:\d+\/#\/pr\/github\.com\/acme\/web\/main\/1$/,
      );
      const ids = r.delivered.map((d) => d.headers['webhook-id']);
      expect(new Set(ids).size).toBe(ids.length);
    }),
  );

  it.concurrent(
    'delivers flaky-test events: a test turning flaky (pass-on-retry) and a quarantine override, valid against the schemas',
    mine(async () => {
      const r = await receiver();
      const s = await server({ webhooks: LOCAL, ...(await database()) });
      await endpoint(s, r);
      const report = `<testsuite name="auth"><testcase classname="auth" name="logs in" file="test/login.test.ts"><failure message="Timeout 5000ms"/></testcase><testcase classname="auth" name="logs in" file="test/login.test.ts"/></testsuite>`;
      await ok(s, 'uploadTestResults', {
        repo: Q.repo,
        org_url_slug: s.org,
        branch: 'main',
        sha: 'a'.repeat(40),
        reports: [{ name: 'junit.xml', content: report }],
      });
      const changed = await until('the status change', () =>
        r.delivered.find((d) => d.json.type === 'test_case.status_changed'),
      );
      expect(changed.json).toMatchObject({
        test_case: { name: 'logs in', classname: 'auth', file_path: 'test/login.test.ts' },
        status_change: { previous_status: 'healthy', current_status: { value: 'flaky' } },
      });
      // A GitHub-named repository: GitHub's pages of the repository and the test's file; the repository by name in `railyard`.
      expect(changed.json.test_case).toMatchObject({
        repository: { html_url: 'https://github.com/acme/web' },
        html_url: 'https://github.com/acme/web/blob/HEAD/test/login.test.ts',
      });
      expect(changed.json.railyard).toEqual({ repository: Q.repo });
      await until('the v2 and monitor events', () =>
        ['v2.test_case.status_changed', 'test_case.monitor_status_changed'].every((t) =>
          r.delivered.some((d) => d.json.type === t),
        ),
      );
      const testId = (changed.json.test_case as { id: string }).id;
      await ok(s, 'setTestQuarantine', {
        repo: Q.repo,
        org_url_slug: s.org,
        test_id: testId,
        setting: 'ALWAYS_QUARANTINE',
      });
      const quarantine = await until('the quarantine event', () =>
        r.delivered.find((d) => d.json.type === 'test_case.quarantining_setting_changed'),
      );
      expect(quarantine.json.quarantine_setting_changed).toMatchObject({
        previous_quarantining_setting: 'UNSPECIFIED',
        updated_quarantining_setting: 'ALWAYS_QUARANTINE',
      });
      for (const d of r.delivered) {
        expect(d.verified).toBe(true);
        expect(schemaErrors(d.json)).toEqual([]);
      }
    }),
  );

  it.concurrent(
    "delivers the queue's own changes (paused, resumed, drained, mode changed), written with the change, marked as extensions",
    mine(async () => {
      const r = await receiver();
      // #1 tests for 4 s: long enough to set the queue draining while it is still admitted.
      const s = await server({ sandbox: { testSeconds: 4 }, webhooks: LOCAL, ...(await database()) });
      const id = await endpoint(s, r);
      await ok(s, 'createQueue', { ...Q, concurrency: 1 });
      const queueEvents = () => r.delivered.filter((d) => String(d.json.type).startsWith('merge_queue.'));
      await ok(s, 'updateQueue', { ...Q, state: 'paused' });
      // In the outbox as soon as the change is answered: written in its transaction, not after it.
      const logged = (await ok(s, 'listWebhookDeliveries', { id })).deliveries as { type: string }[];
      expect(logged.map((d) => d.type)).toContain('merge_queue.paused');
      await ok(s, 'updateQueue', { ...Q, state: 'running' });
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 1 } });
      await until('#1 testing', () => typesOf(r, 1).includes('pull_request.testing'));
      // Draining with #1 admitted: not drained until #1 concludes.
      await ok(s, 'updateQueue', { ...Q, state: 'draining' });
      await until(
        '#1 merged and the queue drained',
        () =>
          typesOf(r, 1).includes('pull_request.merged') &&
          queueEvents().some((d) => d.json.type === 'merge_queue.drained'),
      );
      await ok(s, 'updateQueue', { ...Q, mode: 'parallel' });
      await ok(s, 'updateQueue', { ...Q, state: 'running' });
      await until('five queue events', () => queueEvents().length >= 5);
      await new Promise((resolve) => setTimeout(resolve, 300));

      const events = queueEvents().map((d) => d.json);
      expect(events.map((e) => `${e.type} ${e.previous_state}→${e.state}`)).toEqual([
        'merge_queue.paused running→paused',
        'merge_queue.resumed paused→running',
        'merge_queue.drained draining→draining',
        'merge_queue.mode_changed draining→draining',
        'merge_queue.resumed draining→running',
      ]);
      const merged = r.delivered.find((d) => d.json.type === 'pull_request.merged')!.json;
      const drained = events[2];
      expect(Date.parse(String(drained.timestamp))).toBeGreaterThanOrEqual(
        Date.parse(String(merged.timestamp)),
      );
      expect(events[3]).toMatchObject({ mode: 'parallel', previous_mode: 'single' });
      expect(events[0]).toMatchObject({ repository: Q.repo, target_branch: 'main', mode: 'single' });
      expect(String(events[0].http_details_url)).toMatch(
        /^http:\/\/127\.0\.0\.1:\d+\/#\/queue\/github\.com\/acme\/web\/main$/,
      );
      for (const d of queueEvents()) {
        expect(d.verified).toBe(true);
        expect(schemaErrors(d.json)).toEqual([]);
      }

      // The OpenAPI document lists every event under webhooks; Railyard's own are marked as extensions.
      const doc = (await (await fetch(`${s.url}/openapi.json`)).json()) as {
        webhooks: Record<string, { post: Record<string, unknown> }>;
      };
      const { eventTypes } = await ok(s, 'listWebhooks', {});
      expect(Object.keys(doc.webhooks).sort()).toEqual([...(eventTypes as string[])].sort());
      const marked = Object.entries(doc.webhooks)
        .filter(([, w]) => w.post['x-railyard-extension'] === true)
        .map(([type]) => type);
      expect(marked.sort()).toEqual([
        'merge_queue.drained',
        'merge_queue.mode_changed',
        'merge_queue.paused',
        'merge_queue.resumed',
        'pull_request.tests_passed',
        'webhook.test',
      ]);
    }),
  );
}
describe.concurrent('on SQLite', () => databaseSuite(async () => ({})));
describe.skipIf(noPostgres).concurrent('on PostgreSQL', () =>
  databaseSuite(async () => ({
    databaseUrl: await postgres().createDatabase(undefined, { migrated: true }),
  })),
);

describe.concurrent('delivery', () => {
  it.concurrent(
    'retries a failing and a stalling receiver with the same webhook-id, logs every attempt, and replays',
    mine(async () => {
      const r = await receiver();
      const s = await server({ webhooks: LOCAL });
      const id = await endpoint(s, r);
      r.mode = { kind: 'status', status: 503 };
      const { webhookId } = await ok(s, 'testWebhook', { id });
      await until('two refused attempts', () => r.all.length >= 2);
      r.mode = { kind: 'stall' };
      const stalledAt = r.all.length;
      await until('a stalled attempt', () => r.all.length > stalledAt);
      r.mode = { kind: 'ok' };
      await until('the delivery', () => r.delivered.length === 1);
      expect(r.delivered[0].headers['webhook-id']).toBe(webhookId);
      expect(new Set(r.all.map((d) => d.headers['webhook-id']))).toEqual(new Set([webhookId]));
      expect(r.delivered[0].verified).toBe(true);

      const log = await until('the log to show the success', async () => {
        const { deliveries } = await ok(s, 'listWebhookDeliveries', { id });
        return deliveries[0]?.state === 'succeeded' ? deliveries : null;
      });
      expect(log).toHaveLength(1);
      const attempts = log[0].log as {
        status: number | null;
        error: string | null;
        response: string | null;
        latencyMs: number;
      }[];
      expect(attempts[0]).toMatchObject({ status: 503, error: 'HTTP 503', response: 'receiver says no' });
      expect(
        attempts.some((a) => a.status === null && /ETIMEDOUT|no answer within/.test(a.error ?? '')),
      ).toBe(true);
      expect(attempts[attempts.length - 1]).toMatchObject({ status: 200, error: null, response: 'ok' });
      expect(log[0].webhookId).toBe(webhookId);

      const replay = await ok(s, 'replayWebhookDelivery', { deliveryId: log[0].id });
      expect(replay.webhookId).toBe(webhookId);
      await until('the replay', () => r.delivered.length === 2);
      expect(r.delivered[1].headers['webhook-id']).toBe(webhookId);
    }),
  );

  it.concurrent(
    'delivers from the server thread when the deliverer thread cannot start, and says so once',
    mine(async () => {
      const dir = await mkdtemp(join(tmpdir(), 'railyard-broken-worker-'));
      cleanup(() => rm(dir, { recursive: true, force: true }));
      const broken = join(dir, 'deliverer-worker.mjs');
      await writeFile(broken, "throw new Error('broken on purpose');\n");
      const logged: string[] = [];
      const r = await receiver();
      const s = await server({
        webhooks: LOCAL,
        delivererWorker: broken,
        log: (message, error) => logged.push(`${message}${error ? `: ${error}` : ''}`),
      });
      await endpoint(s, r);
      await ok(s, 'createQueue', { ...Q, concurrency: 1 });
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 4 } });
      await ok(s, 'cancelPullRequest', { ...Q, pr: { number: 4 } });
      await until('the canceled event', () => typesOf(r, 4).includes('pull_request.canceled'));
      const types = typesOf(r, 4);
      expect([types[0], types[types.length - 1]]).toEqual([
        'pull_request.submitted',
        'pull_request.canceled',
      ]);
      expect(logged.filter((l) => l.startsWith('webhook deliverer thread failed'))).toEqual([
        'webhook deliverer thread failed; delivering on the server thread: broken on purpose',
      ]);
    }),
  );

  it.concurrent(
    'disables an endpoint that keeps failing, with the reason in its visible state',
    mine(async () => {
      const r = await receiver();
      const s = await server({
        webhooks: { ...LOCAL, retrySchedule: [100, 100, 100, 100, 100, 100], disableAfterMs: 400 },
      });
      const id = await endpoint(s, r);
      r.mode = { kind: 'status', status: 500 };
      await ok(s, 'testWebhook', { id });
      const listed = await until('the endpoint disabled', async () => {
        const { endpoints } = await ok(s, 'listWebhooks', {});
        return endpoints[0].state === 'disabled' ? endpoints[0] : null;
      });
      expect(listed.disabledReason).toMatch(/^every delivery failed since .* \(last: HTTP 500\)$/);
      const attemptsThen = r.all.length;
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(r.all.length).toBe(attemptsThen);
      r.mode = { kind: 'ok' };
      await ok(s, 'enableWebhook', { id });
      await until('the delivery after enabling', () => r.delivered.length === 1);
    }),
  );

  it.concurrent(
    'signs with both secrets during a rotation overlap; the old one is no longer accepted after it',
    mine(async () => {
      const r = await receiver();
      const s = await server({ webhooks: LOCAL });
      const id = await endpoint(s, r);
      const old = r.secrets[0];
      const rotated = await ok(s, 'rotateWebhookSecret', { id, overlapHours: 1 });
      await ok(s, 'testWebhook', { id });
      await until('the delivery', () => r.delivered.length === 1);
      expect(String(r.delivered[0].headers['webhook-signature']).split(' ')).toHaveLength(2);
      for (const secret of [old, rotated.secret]) {
        r.secrets = [secret];
        r.all.length = 0;
        r.delivered.length = 0;
        await ok(s, 'testWebhook', { id });
        await until('the delivery', () => r.delivered.length === 1);
        expect(r.delivered[0].verified).toBe(true);
      }
      await ok(s, 'rotateWebhookSecret', { id, overlapHours: 0 });
      r.secrets = [rotated.secret];
      r.delivered.length = 0;
      await ok(s, 'testWebhook', { id });
      await until('the delivery', () => r.delivered.length === 1);
      expect(r.delivered[0].verified).toBe(false);
    }),
  );

  it.concurrent(
    'sends an endpoint only the events and repositories it asked for; other organisations see none of it',
    mine(async () => {
      const r = await receiver();
      const s = await server({
        sandbox: { testSeconds: 0 },
        webhooks: LOCAL,
        tokens: { 'test-token': 'local', 'other-token': 'other' },
      });
      const id = await endpoint(s, r, { events: ['pull_request.merged'], repos: [Q.repo] });
      await ok(s, 'createQueue', Q);
      await ok(s, 'createQueue', { repo: { ...Q.repo, name: 'api' }, targetBranch: 'main' });
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 1 } });
      await ok(s, 'submitPullRequest', {
        repo: { ...Q.repo, name: 'api' },
        targetBranch: 'main',
        pr: { number: 7 },
      });
      await until('the merged event', () => r.delivered.length >= 1);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(r.delivered.map((d) => [d.json.type, d.json.pr_number])).toEqual([['pull_request.merged', 1]]);
      for (const op of ['testWebhook', 'listWebhookDeliveries', 'disableWebhook', 'deleteWebhook'] as const) {
        const a = await call(s, op, { id }, { token: 'other-token' });
        expect(a.status, op).toBe(404);
      }
      expect((await ok(s, 'listWebhooks', {}, 'other-token')).endpoints).toEqual([]);
    }),
  );
});

describe.concurrent('addresses (an API token must not make the server probe its own network)', () => {
  it.concurrent(
    'refuses http:// and private, loopback and link-local addresses without the server flags',
    mine(async () => {
      const s = await server();
      for (const [url, message] of [
        [
          'http://hooks.example.com/in',
          /^url: must be https:\/\/ \(plain http:\/\/ needs the server flag --webhook-allow-http\)$/,
        ],
        ['https://127.0.0.1/in', /^url: 127\.0\.0\.1 is a loopback, private or link-local address/],
        ['https://[::1]:8443/in', /^url: ::1 is a loopback/],
        ['https://169.254.169.254/latest/meta-data', /^url: 169\.254\.169\.254 is/],
        ['https://10.1.2.3/in', /^url: 10\.1\.2\.3 is/],
        ['https://[::ffff:192.168.0.1]/in', /is a loopback, private or link-local address/],
        ['ftp://hooks.example.com/in', /^url: must be https:\/\//],
      ] as const) {
        const a = await call(s, 'createWebhook', { url });
        expect(a.status, url).toBe(400);
        expect(a.text, url).toMatch(message);
      }
    }),
  );

  it.concurrent(
    'checks names after DNS resolution at delivery time: localhost is refused and the receiver gets nothing',
    mine(async () => {
      const r = await receiver();
      const s = await server({ webhooks: { ...LOCAL, allowPrivate: false } });
      const port = new URL(r.url).port;
      const { endpoint: ep } = await ok(s, 'createWebhook', { url: `http://localhost:${port}/hook` });
      await ok(s, 'testWebhook', { id: ep.id });
      const { deliveries } = await until('a refused attempt', async () => {
        const answer = await ok(s, 'listWebhookDeliveries', { id: ep.id });
        return answer.deliveries[0]?.log.length ? answer : null;
      });
      expect(deliveries[0].log[0].error).toMatch(/^refused: localhost is a loopback name$/);
      expect(r.all).toEqual([]);
    }),
  );

  it.concurrent(
    'does not follow a redirect',
    mine(async () => {
      const r = await receiver();
      const redirector = createServer((_req, res) => {
        res.writeHead(307, { location: r.url }).end();
      });
      await new Promise<void>((done) => redirector.listen(0, '127.0.0.1', () => done()));
      cleanup(() => new Promise<void>((done) => redirector.close(() => done())));
      const s = await server({ webhooks: LOCAL });
      const { endpoint: ep } = await ok(s, 'createWebhook', {
        url: `http://127.0.0.1:${(redirector.address() as AddressInfo).port}/in`,
      });
      await ok(s, 'testWebhook', { id: ep.id });
      const { deliveries } = await until('an attempt', async () => {
        const answer = await ok(s, 'listWebhookDeliveries', { id: ep.id });
        return answer.deliveries[0]?.log.length ? answer : null;
      });
      expect(deliveries[0].log[0]).toMatchObject({
        status: 307,
        error: 'HTTP 307 (redirects are not followed)',
      });
      expect(r.all).toEqual([]);
    }),
  );
});

describe.skipIf(noPostgres).concurrent('two replicas on one PostgreSQL database', () => {
  it.concurrent(
    'deliver each event once, each PR in order, whichever replica committed it',
    { timeout: 120_000 },
    mine(async () => {
      const r = await receiver();
      const databaseUrl = await postgres().createDatabase();
      const a = await server({ sandbox: { testSeconds: 1 }, webhooks: LOCAL, databaseUrl });
      const b = await server({ sandbox: { testSeconds: 1 }, webhooks: LOCAL, databaseUrl });
      await endpoint(a, r);
      await ok(a, 'createQueue', { ...Q, concurrency: 4 });
      const PRS = 12;
      for (let pr = 1; pr <= PRS; pr++)
        await ok(pr % 2 ? a : b, 'submitPullRequest', { ...Q, pr: { number: pr } });
      await until(
        'every merged event',
        () => r.delivered.filter((d) => d.json.type === 'pull_request.merged').length >= PRS,
        90_000,
      );
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const ids = r.all.map((d) => String(d.headers['webhook-id']));
      expect(ids.length - new Set(ids).size, 'events delivered twice').toBe(0);
      for (let pr = 1; pr <= PRS; pr++) {
        const seen = typesOf(r, pr);
        const order = [
          'pull_request.submitted',
          'pull_request.queued',
          'pull_request.testing',
          'pull_request.merged',
        ].map((t) => seen.indexOf(t));
        expect(
          order.every((i) => i >= 0),
          `#${pr}: ${seen.join(' ')}`,
        ).toBe(true);
        expect(
          [...order].sort((x, y) => x - y),
          `#${pr}`,
        ).toEqual(order);
      }
      expect(r.delivered.every((d) => d.verified)).toBe(true);
    }),
  );
});
