/**
 * Quarantine overrides with an owner, a reason and an end, over real HTTP with the server's clock
 * under test control: the owner is the label of the request's token, the override lapses by itself
 * at its end (lists, details, the quarantine check and the repository's auto-quarantine follow at
 * once), bad ends are refused, and an override set while quarantining is off answers a warning.
 */
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { routes } from '../../src/contract/index.js';
import { readReports } from '../../src/flaky/ingest.js';
import { eachDatabase, serversPerTest, type TestDatabase } from '../support/hooks.js';
import type { TestServer } from '../support/server.js';
import { call, ok, REPO, shapeMismatches } from './helpers.js';

const HOUR = 3_600_000;
const T0 = Date.parse('2026-11-01T00:00:00.000Z');
const ORG = 'acme';
const key = { repo: REPO, org_url_slug: ORG };
const page = { page_size: 100, page_token: '' };
const sha = (i: number) => `${i.toString(16).padStart(2, '0')}${'b'.repeat(38)}`;

/** `net` fails then passes on a retry in the first upload (flaky: pass-on-retry); `db` always passes. */
const report = (retry: boolean) =>
  `<testsuite name="suite">` +
  (retry ? `<testcase classname="net" name="net works"><failure message="ECONNRESET"/></testcase>` : '') +
  `<testcase classname="net" name="net works"/><testcase classname="db" name="db works"/></testsuite>`;

/** A test's id as the server derives it from the report. */
function idOf(name: string): string {
  const read = readReports({
    org: ORG,
    repo: REPO,
    variant: '',
    reports: [{ name: 'junit.xml', content: report(false) }],
  });
  if (!read.ok) throw new Error(read.error);
  return read.results.find((r) => r.name === name)!.id;
}

function expectShape(op: keyof typeof routes, value: unknown) {
  expect(shapeMismatches(routes[op].response as z.ZodType, value), op).toEqual([]);
}

function quarantineSuite(database: TestDatabase): void {
  const startServer = serversPerTest();

  describe('quarantine overrides: owner, reason, end', () => {
    async function server(clock: { now: number }) {
      const s = await startServer({
        tokens: { 'token-alice': ORG, 'token-nolabel': ORG },
        labels: { 'token-alice': 'alice (release duty)' },
        now: () => clock.now,
        ...(await database()),
      });
      for (const [i, retry] of [true, false].entries())
        await ok(
          s,
          'uploadTestResults',
          {
            ...key,
            branch: 'main',
            sha: sha(i),
            started_at: new Date(T0 + i * HOUR).toISOString(),
            reports: [{ name: 'junit.xml', content: report(retry) }],
          },
          'token-alice',
        );
      const flaky = await ok(
        s,
        'listUnhealthyTests',
        { ...key, status: 'FLAKY', page_query: page },
        'token-alice',
      );
      const net = flaky.tests.find((t: { name: string }) => t.name === 'net works')!.id as string;
      const failing = await ok(
        s,
        'listFailingTests',
        {
          ...key,
          start_time: new Date(T0).toISOString(),
          end_time: new Date(T0 + 2 * HOUR).toISOString(),
          page_query: page,
        },
        'token-alice',
      );
      expect(failing.tests.map((t: { name: string }) => t.name)).toEqual(['net works']);
      return { s, net, db: idOf('db works') };
    }

    const listed = async (s: TestServer) => {
      const answer = await ok(s, 'listQuarantinedTests', { ...key, page_query: page }, 'token-alice');
      expectShape('listQuarantinedTests', answer);
      return answer.quarantined_tests as Record<string, unknown>[];
    };

    it('an ALWAYS_QUARANTINE set while quarantining is off answers a warning that says how to turn it on', async () => {
      const clock = { now: T0 + 2 * HOUR };
      const { s, db } = await server(clock);
      const answer = await ok(
        s,
        'setTestQuarantine',
        { ...key, test_id: db, setting: 'ALWAYS_QUARANTINE' },
        'token-alice',
      );
      expectShape('setTestQuarantine', answer);
      expect(answer).toMatchObject({
        quarantined: false,
        quarantine_override: { setting: 'ALWAYS_QUARANTINE', owner: 'alice (release duty)' },
      });
      expect(answer.warning).toBe(
        'quarantining is off for github.com/acme/web: the test is not quarantined (the queue and `railyard flaky run` ignore the override) until it is turned on: ' +
          'railyard flaky settings --repo github.com/acme/web --quarantining on (API: updateRepositorySettings with settings.quarantining_enabled true)',
      );
      expect(await listed(s)).toEqual([]);
      // Never and automatic need no warning; with quarantining on, always needs none either.
      expect(
        (
          await ok(
            s,
            'setTestQuarantine',
            { ...key, test_id: db, setting: 'NEVER_QUARANTINE' },
            'token-alice',
          )
        ).warning,
      ).toBeUndefined();
      await ok(
        s,
        'updateRepositorySettings',
        { ...key, settings: { quarantining_enabled: true } },
        'token-alice',
      );
      const on = await ok(
        s,
        'setTestQuarantine',
        { ...key, test_id: db, setting: 'ALWAYS_QUARANTINE' },
        'token-alice',
      );
      expect(on.warning).toBeUndefined();
      expect(on.quarantined).toBe(true);
    });

    it('keeps owner, reason and end; lapses by itself at the end, where the repository settings decide again', async () => {
      const clock = { now: T0 + 2 * HOUR };
      const { s, net, db } = await server(clock);
      await ok(
        s,
        'updateRepositorySettings',
        { ...key, settings: { quarantining_enabled: true, auto_quarantine_flaky: false } },
        'token-alice',
      );
      const until = new Date(clock.now + 90 * 60_000).toISOString();
      const set = await ok(
        s,
        'setTestQuarantine',
        {
          ...key,
          test_id: db,
          setting: 'ALWAYS_QUARANTINE',
          until,
          reason: ' KAN-7: db pool exhausted on ARM ',
        },
        'token-alice',
      );
      expect(set).toEqual({
        quarantined: true,
        quarantine_override: {
          setting: 'ALWAYS_QUARANTINE',
          owner: 'alice (release duty)',
          reason: 'KAN-7: db pool exhausted on ARM',
          set_at: new Date(clock.now).toISOString(),
          until,
          seconds_left: 5400,
          expired: false,
        },
      });
      // A token without a label owns what it sets by the id `railyard token list` shows.
      const other = await ok(
        s,
        'setTestQuarantine',
        {
          ...key,
          test_id: net,
          setting: 'NEVER_QUARANTINE',
          until: new Date(clock.now + HOUR).toISOString(),
        },
        'token-nolabel',
      );
      expect(other.quarantine_override.owner).toMatch(/^token [0-9a-f]{12}$/);

      clock.now += 30 * 60_000;
      expect(await listed(s)).toEqual([
        expect.objectContaining({
          name: 'db works',
          quarantine_setting: 'ALWAYS_QUARANTINE',
          quarantined_at: new Date(T0 + 2 * HOUR).toISOString(),
          quarantine_owner: 'alice (release duty)',
          quarantine_reason: 'KAN-7: db pool exhausted on ARM',
          quarantined_until: until,
          seconds_left: 3600,
        }),
      ]);
      const details = await ok(s, 'getTestDetails', { ...key, test_id: db }, 'token-alice');
      expectShape('getTestDetails', details);
      expect(details.test).toMatchObject({
        quarantined: true,
        quarantine_override: { owner: 'alice (release duty)', seconds_left: 3600, expired: false },
      });
      expect(
        (await ok(s, 'checkQuarantine', { ...key, test_ids: [db, net] }, 'token-alice')).quarantined_test_ids,
      ).toEqual([db]);

      // At its end it lapses: nothing quarantined, and the details say it lapsed.
      clock.now = Date.parse(until);
      expect(await listed(s)).toEqual([]);
      expect(
        (await ok(s, 'checkQuarantine', { ...key, test_ids: [db, net] }, 'token-alice')).quarantined_test_ids,
      ).toEqual([]);
      const lapsed = await ok(s, 'getTestDetails', { ...key, test_id: db }, 'token-alice');
      expect(lapsed.test).toMatchObject({
        quarantined: false,
        quarantine_override: { setting: 'ALWAYS_QUARANTINE', seconds_left: 0, expired: true },
      });

      // `net` is flaky and was kept out by NEVER_QUARANTINE until its end: with auto-quarantine on,
      // the repository settings take it in once that lapsed too (the list query and the check agree).
      await ok(
        s,
        'updateRepositorySettings',
        { ...key, settings: { auto_quarantine_flaky: true } },
        'token-alice',
      );
      expect((await listed(s)).map((t) => [t.name, t.quarantine_setting, t.quarantine_owner])).toEqual([
        ['net works', 'AUTO_QUARANTINE', null],
      ]);
      expect(
        (await ok(s, 'checkQuarantine', { ...key, test_ids: [db, net] }, 'token-alice')).quarantined_test_ids,
      ).toEqual([net]);
    });

    it('refuses an end in the past, a time it cannot read, and an end or reason with AUTO', async () => {
      const clock = { now: T0 + 2 * HOUR };
      const { s, db } = await server(clock);
      const refused = async (body: Record<string, unknown>) => {
        const answer = await call(
          s,
          'setTestQuarantine',
          { ...key, test_id: db, ...body },
          { token: 'token-alice' },
        );
        expect(answer.status).toBe(400);
        return answer.text;
      };
      expect(await refused({ setting: 'ALWAYS_QUARANTINE', until: '2026-11-01T01:00:00Z' })).toBe(
        "until: 2026-11-01T01:00:00Z is not in the future (the server's time is 2026-11-01T02:00:00.000Z)",
      );
      expect(await refused({ setting: 'ALWAYS_QUARANTINE', until: 'next tuesday' })).toBe(
        'until: must be an ISO 8601 date-time',
      );
      expect(await refused({ setting: 'ALWAYS_QUARANTINE', until: '2099-01-01T00:00:00Z' })).toBe(
        'until: 2099-01-01T00:00:00Z is more than 10 years ahead',
      );
      expect(await refused({ setting: 'AUTO', until: '2026-11-02T00:00:00Z' })).toBe(
        'until: only with ALWAYS_QUARANTINE or NEVER_QUARANTINE (AUTO removes the override)',
      );
      expect(await refused({ setting: 'ALWAYS_QUARANTINE', reason: 'x'.repeat(1025) })).toMatch(/^reason: /);
      // Nothing was stored.
      expect(
        (await ok(s, 'getTestDetails', { ...key, test_id: db }, 'token-alice')).test.quarantine_override,
      ).toBeUndefined();
    });
  });
}

// SQLite and PostgreSQL side by side: each copy mostly waits on its servers.
eachDatabase(quarantineSuite, { sideBySide: true });
