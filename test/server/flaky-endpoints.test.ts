/**
 * Flaky tests over real HTTP, the read endpoints: list-failing-tests (window, rates, grouped
 * failures), get-test-details, link-ticket, quarantine settings and overrides, the failure
 * history per day, another organisation seeing none of it, and paging through 1,000 failing
 * tests while uploads arrive. Every answer is read against the contract's schemas.
 */
import { describe, expect, it } from 'vitest';
import { eachDatabase, type TestDatabase } from '../support/hooks.js';
import { call, ISO_MS, ok, REPO } from './helpers.js';
import {
  byName,
  type Case,
  DAY,
  expectShape,
  flakyServers,
  HOUR,
  junit,
  key,
  LOGIN,
  names,
  ORG,
  page,
  PAYS,
  SEARCH,
  seed,
  sha,
  T0,
  upload,
} from './flaky-helpers.js';

/** Every test below, once per database. */
function flakyEndpointsSuite(database: TestDatabase): void {
  const server = flakyServers(database);

  describe('flaky tests: upload, classification and every endpoint', () => {
    it('list-failing-tests: distinct tests failed in [start, end), with rates and grouped failures', async () => {
      const clock = { now: T0 + 12 * HOUR };
      const s = await server(clock);
      await seed(s);
      const failing = async (start: number, end: number, size = 100) => {
        const answer = await ok(s, 'listFailingTests', {
          ...key,
          start_time: new Date(start).toISOString(),
          end_time: new Date(end).toISOString(),
          page_query: page(size),
        });
        expectShape('listFailingTests', answer);
        return answer;
      };

      const day = await failing(T0, T0 + DAY);
      expect(names(day.tests)).toEqual(['finds', 'logs in', 'migrates']);
      expect(day.page).toMatchObject({
        total_rows: 3,
        total_pages: 1,
        page_index: 0,
        next_page_token: '',
        prev_page_token: '',
      });
      const migrates = day.tests.find((t: { name: string }) => t.name === 'migrates');
      // 11 of 12 runs failed (it passed on PR 43), on any branch.
      expect(migrates.failure_rate_last_7d).toBe(0.9167);
      expect(migrates.failure_rate_last_24h).toBe(0.9167);
      // Eleven failures that differ only in address, number and time are one group.
      expect(migrates.most_common_failures).toEqual([
        {
          summary: 'connection refused at <addr> after <n> ms (<time>)',
          occurrence_count: 11,
          last_occurrence: new Date(T0 + 11 * HOUR).toISOString(),
        },
      ]);
      const finds = day.tests.find((t: { name: string }) => t.name === 'finds');
      expect(finds.failure_rate_last_7d).toBe(Math.round((5 / 12) * 10_000) / 10_000);
      expect(finds.most_common_failures).toEqual([
        {
          summary: 'expected <n> results, got <n>',
          occurrence_count: 5,
          last_occurrence: new Date(T0 + 11.5 * HOUR).toISOString(),
        },
      ]);

      // The window is [start, end): `finds` failed at T0+2h, T0+5h and T0+8h on main.
      expect(names((await failing(T0 + 2 * HOUR, T0 + 5 * HOUR)).tests)).toEqual(['finds', 'migrates']);
      expect(names((await failing(T0 + 3 * HOUR, T0 + 5 * HOUR)).tests)).toEqual(['migrates']);
      expect(names((await failing(T0 + 3 * HOUR, T0 + 5 * HOUR + 1)).tests)).toEqual(['finds', 'migrates']);
      expect((await failing(T0 - 7 * DAY, T0)).tests).toEqual([]);
    });

    it('get-test-details, link-ticket, quarantine settings and overrides', async () => {
      const clock = { now: T0 + 12 * HOUR };
      const s = await server(clock);
      await seed(s);
      const id = (await byName(s, 'BROKEN')).get('migrates')!.id as string;

      const details = await ok(s, 'getTestDetails', { ...key, test_id: id });
      expectShape('getTestDetails', details);
      expect(details.test).toMatchObject({
        id,
        name: 'migrates',
        failure_rate_last_7d: 0.9167,
        quarantined: false,
      });
      expect(details.test.status.timestamp).toMatch(ISO_MS);
      const unknown = await call(s, 'getTestDetails', {
        ...key,
        test_id: '00000000-0000-5000-8000-000000000000',
      });
      expect(unknown.status).toBe(404);
      expect(unknown.text).toBe(
        'test_id: no test 00000000-0000-5000-8000-000000000000 in github.com/acme/web',
      );

      expect(
        await ok(s, 'linkTicketToTestCase', { repo: REPO, test_case_id: id, external_ticket_id: 'DB-12' }),
      ).toEqual({});
      expect((await ok(s, 'getTestDetails', { ...key, test_id: id })).test.ticket).toEqual({
        html_url: 'https://github.com/acme/web/issues/DB-12',
      });

      // Quarantining is off by default: nothing is quarantined whatever the status.
      const none = await ok(s, 'listQuarantinedTests', { ...key, page_query: page(10) });
      expectShape('listQuarantinedTests', none);
      expect(none.quarantined_tests).toEqual([]);

      await ok(s, 'updateRepositorySettings', { ...key, settings: { quarantining_enabled: true } });
      const quarantined = async () => {
        const answer = await ok(s, 'listQuarantinedTests', { ...key, page_query: page(10) });
        expectShape('listQuarantinedTests', answer);
        return new Map<string, Record<string, unknown>>(
          answer.quarantined_tests.map((t: { name: string }) => [t.name, t]),
        );
      };
      // Auto-quarantine takes the flaky tests, not the broken one.
      let q = await quarantined();
      expect([...q.keys()].sort()).toEqual(['finds', 'logs in']);
      expect(q.get('logs in')).toMatchObject({
        status: 'FLAKY',
        quarantine_setting: 'AUTO_QUARANTINE',
        quarantined_at: new Date(T0 + HOUR).toISOString(),
        file: 'src/auth/login.test.ts',
        classname: 'auth',
        codeowners: ['@acme/everyone'],
      });

      const findsId = (await byName(s, 'FLAKY')).get('finds')!.id as string;
      await ok(s, 'setTestQuarantine', { ...key, test_id: id, setting: 'always_quarantine' });
      await ok(s, 'setTestQuarantine', { ...key, test_id: findsId, setting: 'NEVER_QUARANTINE' });
      q = await quarantined();
      expect([...q.keys()].sort()).toEqual(['logs in', 'migrates']);
      expect(q.get('migrates')).toMatchObject({
        status: 'BROKEN',
        quarantine_setting: 'ALWAYS_QUARANTINE',
        quarantined_at: new Date(clock.now).toISOString(),
      });
      expect((await byName(s, 'FLAKY')).get('finds')!.quarantined).toBe(false);
      expect((await byName(s, 'BROKEN')).get('migrates')!.quarantined).toBe(true);

      const check = await ok(s, 'checkQuarantine', { ...key, test_ids: [id, findsId] });
      expect(check).toEqual({ quarantining_enabled: true, quarantined_test_ids: [id] });
      // AUTO removes the override again.
      await ok(s, 'setTestQuarantine', { ...key, test_id: findsId, setting: 'AUTO' });
      expect([...(await quarantined()).keys()].sort()).toEqual(['finds', 'logs in', 'migrates']);
    });

    it('get-test-failure-history: runs, failures and rate per UTC day, oldest first, empty days included', async () => {
      const clock = { now: T0 + 4 * DAY + 12 * HOUR }; // 2026-11-05 12:00 UTC
      const s = await server(clock);
      const fails = { ...SEARCH, fail: 'expected 3 results, got 0' };
      // 11-01: a failure and a pass; 11-02: nothing; 11-03: a failure in its last minute; 11-04: a pass at
      // its first millisecond; 11-05 (today): a pass an hour ago.
      await upload(s, [LOGIN, PAYS, fails], { sha: sha(1), at: T0 + HOUR });
      await upload(s, [LOGIN, PAYS, SEARCH], { sha: sha(2), at: T0 + 2 * HOUR });
      await upload(s, [LOGIN, PAYS, fails], { sha: sha(3), at: T0 + 3 * DAY - 60_000 });
      await upload(s, [LOGIN, PAYS, SEARCH], { sha: sha(4), at: T0 + 3 * DAY });
      await upload(s, [LOGIN, PAYS, SEARCH], { sha: sha(5), at: clock.now - HOUR });
      const id = (
        await ok(s, 'listFailingTests', {
          ...key,
          start_time: new Date(T0).toISOString(),
          end_time: new Date(T0 + DAY).toISOString(),
          page_query: page(10),
        })
      ).tests[0].id as string;

      const week = await ok(s, 'getTestFailureHistory', { ...key, test_id: id, days: 7 });
      expectShape('getTestFailureHistory', week);
      const none = { runs: 0, failures: 0, failure_rate: null, excluded_runs: 0 };
      expect(week).toEqual({
        test_id: id,
        days: [
          { date: '2026-10-30', ...none },
          { date: '2026-10-31', ...none },
          { date: '2026-11-01', runs: 2, failures: 1, failure_rate: 0.5, excluded_runs: 0 },
          { date: '2026-11-02', ...none },
          { date: '2026-11-03', runs: 1, failures: 1, failure_rate: 1, excluded_runs: 0 },
          { date: '2026-11-04', runs: 1, failures: 0, failure_rate: 0, excluded_runs: 0 },
          { date: '2026-11-05', runs: 1, failures: 0, failure_rate: 0, excluded_runs: 0 },
        ],
        excluded_uploads: [],
        excluded_uploads_total: 0,
      });
      // The default window is 30 days ending today; a passing test has runs and no failures.
      const month = await ok(s, 'getTestFailureHistory', { ...key, test_id: id });
      expect(month.days).toHaveLength(30);
      expect(month.days[0].date).toBe('2026-10-07');
      expect(month.days.slice(-7)).toEqual(week.days);
      const two = await ok(s, 'getTestFailureHistory', { ...key, test_id: id, days: 2 });
      expect(two.days.map((d: { date: string }) => d.date)).toEqual(['2026-11-04', '2026-11-05']);

      for (const days of [0, 91, 1.5, 'many']) {
        const bad = await call(s, 'getTestFailureHistory', { ...key, test_id: id, days });
        expect(bad.status, `days ${days}`).toBe(400);
        expect(bad.text).toMatch(/^days: /);
      }
      const unknown = await call(s, 'getTestFailureHistory', {
        ...key,
        test_id: '00000000-0000-5000-8000-000000000000',
      });
      expect(unknown.status).toBe(404);
      expect(unknown.text).toBe(
        'test_id: no test 00000000-0000-5000-8000-000000000000 in github.com/acme/web',
      );
      // Another organisation cannot read our test's history, under its slug or ours.
      for (const slug of ['other', ORG]) {
        const theirs = await call(
          s,
          'getTestFailureHistory',
          { ...key, org_url_slug: slug, test_id: id },
          { token: 'token-b' },
        );
        expect(theirs.status, slug).toBe(404);
      }
    });

    it('another organisation sees none of it: our slug and our test ids give 404, its own lists of the same repository are its own (empty)', async () => {
      const clock = { now: T0 + 12 * HOUR };
      const s = await server(clock);
      await seed(s);
      const id = (await byName(s, 'BROKEN')).get('migrates')!.id as string;

      const theirs = { repo: REPO, org_url_slug: 'other' };
      const window = {
        start_time: new Date(T0).toISOString(),
        end_time: new Date(T0 + DAY).toISOString(),
        page_query: page(10),
      };
      const upload = { branch: 'main', sha: sha(1), reports: [{ name: 'a.xml', content: junit([PAYS]) }] };
      // Our organisation's slug: never another's data.
      for (const [op, body] of [
        ['listUnhealthyTests', { ...key, status: 'BROKEN', page_query: page(10) }],
        ['listFailingTests', { ...key, ...window }],
        ['listQuarantinedTests', { ...key, page_query: page(10) }],
        ['getTestDetails', { ...key, test_id: id }],
        ['uploadTestResults', { ...key, ...upload }],
      ] as const) {
        expect((await call(s, op, body, { token: 'token-b' })).status, `${op} as ${key.org_url_slug}`).toBe(
          404,
        );
      }
      // Its own slug: its own records of the same repository, which hold nothing of ours (issue 26:
      // the answer does not depend on whether another organisation uses the repository).
      expect(
        (await ok(s, 'listUnhealthyTests', { ...theirs, status: 'BROKEN', page_query: page(10) }, 'token-b'))
          .tests,
      ).toEqual([]);
      expect((await ok(s, 'listFailingTests', { ...theirs, ...window }, 'token-b')).tests).toEqual([]);
      expect(
        (await ok(s, 'listQuarantinedTests', { ...theirs, page_query: page(10) }, 'token-b'))
          .quarantined_tests,
      ).toEqual([]);
      expect((await call(s, 'getTestDetails', { ...theirs, test_id: id }, { token: 'token-b' })).status).toBe(
        404,
      );
      expect(
        (
          await call(
            s,
            'linkTicketToTestCase',
            { repo: REPO, test_case_id: id, external_ticket_id: 'X-1' },
            { token: 'token-b' },
          )
        ).status,
      ).toBe(404);
      // Its uploads are its own tests, counted as new for it; ours are untouched.
      const before = await ok(s, 'getTestDetails', { ...key, test_id: id });
      const own = await ok(
        s,
        'uploadTestResults',
        { ...theirs, ...upload, started_at: new Date(T0 + HOUR).toISOString() },
        'token-b',
      );
      expect(own.new_tests).toBe(1);
      expect(await ok(s, 'getTestDetails', { ...key, test_id: id })).toEqual(before);
    });
  });

  describe('flaky paging', () => {
    it('pages through 1,000 failing tests 7 at a time: each exactly once, stable while uploads arrive, back and to the last page', async () => {
      const clock = { now: T0 + 2 * DAY };
      const s = await server(clock);
      const many = (prefix: string, n: number): Case[] =>
        Array.from({ length: n }, (_, i) => [
          { name: `${prefix} failing ${i}`, classname: 'paging', fail: 'boom' },
          { name: `${prefix} passing ${i}`, classname: 'paging' },
        ]).flat();
      await upload(s, many('a', 1000), { branch: 'feature/p', sha: sha(1), at: T0 + HOUR });
      const window = {
        ...key,
        start_time: new Date(T0).toISOString(),
        end_time: new Date(T0 + DAY).toISOString(),
      };

      const seen = new Map<string, number>();
      let token = '';
      let pages = 0;
      let first: any; // eslint-disable-line @typescript-eslint/no-explicit-any
      do {
        const answer = await ok(s, 'listFailingTests', { ...window, page_query: page(7, token) });
        if (pages === 0) {
          first = answer;
          expect(answer.page).toMatchObject({
            total_rows: 1000,
            total_pages: 143,
            page_index: 0,
            prev_page_token: '',
          });
        }
        expect(answer.page.page_index).toBe(pages);
        expect(answer.tests.length).toBeLessThanOrEqual(7);
        for (const t of answer.tests) seen.set(t.name, (seen.get(t.name) ?? 0) + 1);
        pages++;
        // Halfway through, another upload adds 40 failing tests.
        if (pages === 70)
          await upload(s, many('b', 40), { branch: 'feature/p', sha: sha(2), at: T0 + 2 * HOUR });
        token = answer.page.next_page_token;
      } while (token);

      const originals = [...seen.keys()].filter((n) => n.startsWith('a '));
      expect(originals).toHaveLength(1000);
      expect([...seen].filter(([, n]) => n !== 1)).toEqual([]); // no test on two pages
      expect(pages).toBeGreaterThanOrEqual(143);

      // The last page and one step back from it.
      const last = await ok(s, 'listFailingTests', {
        ...window,
        page_query: page(7, first.page.last_page_token),
      });
      expect(last.page).toMatchObject({
        total_rows: 1040,
        total_pages: 149,
        page_index: 148,
        next_page_token: '',
      });
      expect(last.tests).toHaveLength(1040 - 148 * 7);
      const before = await ok(s, 'listFailingTests', {
        ...window,
        page_query: page(7, last.page.prev_page_token),
      });
      expect(before.page.page_index).toBe(147);
      expect(before.tests).toHaveLength(7);
      const forward = await ok(s, 'listFailingTests', {
        ...window,
        page_query: page(7, before.page.next_page_token),
      });
      expect(forward.tests.map((t: { id: string }) => t.id)).toEqual(
        last.tests.map((t: { id: string }) => t.id),
      );

      const bogus = await call(s, 'listFailingTests', { ...window, page_query: page(7, 'not-a-token') });
      expect(bogus.status).toBe(400);
      expect(bogus.text).toBe(
        'page_query.page_token: not a page token this server gave to this organisation',
      );
    });
  });
}

// SQLite and PostgreSQL side by side: each copy mostly waits on its servers and report workers.
eachDatabase(flakyEndpointsSuite, { sideBySide: true });
