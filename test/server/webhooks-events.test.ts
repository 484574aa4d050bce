/**
 * Outgoing webhooks, the events: a real server over HTTP delivers, on SQLite and on PostgreSQL,
 * to receivers on 127.0.0.1 that verify the signatures with the `svix` and `standardwebhooks`
 * packages; a PR's way through the queue, flaky-test events and the queue's own changes arrive in
 * order and valid against Trunk's event schemas (test/support/trunk-webhook-schemas.ts).
 * How deliveries fail, retry and are refused: webhooks-delivery.test.ts.
 */
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { postgresForFile } from '../support/hooks.js';
import { skipWithoutPostgres } from '../support/postgres.js';
import {
  RAILYARD_EVENT_SCHEMAS,
  TRUNK_EVENT_SCHEMAS,
  TRUNK_FLAKY_EVENT_SCHEMAS,
} from '../support/trunk-webhook-schemas.js';
import type { TestServerOptions } from '../support/server.js';
import { ok, Q } from './helpers.js';
import {
  endpoint,
  expectLifecycleInOrder,
  LOCAL,
  mine,
  receiver,
  server,
  typesOf,
  until,
} from './webhooks-helpers.js';

/* The tests run side by side: see webhooks-helpers.ts. On PostgreSQL each test has a database of its own. */
const noPostgres = skipWithoutPostgres();
const postgres = postgresForFile(noPostgres);

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

      for (const pr of [1, 2]) expectLifecycleInOrder(r, pr);
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
      // Asked of the queue, not of the deliveries: at load their lag can outlast #1's 4 s test.
      await until(
        '#1 testing',
        async () => (await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: 1 } })).state === 'testing',
      );
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
