/**
 * Outgoing webhooks, the deliveries: a real server over HTTP and receivers on 127.0.0.1 that fail,
 * stall and recover (retries with one webhook-id, the delivery log, replays), the server thread
 * delivering when the deliverer thread cannot start, endpoints disabled after failing, secret
 * rotation, event and repository filters, the address rules (no private addresses, no redirects),
 * and two replicas on one PostgreSQL database delivering each event once.
 * Which events arrive and their payloads: webhooks-events.test.ts.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { postgresForFile } from '../support/hooks.js';
import { skipWithoutPostgres } from '../support/postgres.js';
import { call, ok, Q } from './helpers.js';
import {
  cleanup,
  endpoint,
  expectLifecycleInOrder,
  LOCAL,
  mine,
  receiver,
  server,
  typesOf,
  until,
} from './webhooks-helpers.js';

/* The tests run side by side: see webhooks-helpers.ts. */
const noPostgres = skipWithoutPostgres();
const postgres = postgresForFile(noPostgres);

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
      for (let pr = 1; pr <= PRS; pr++) expectLifecycleInOrder(r, pr);
      expect(r.delivered.every((d) => d.verified)).toBe(true);
    }),
  );
});
