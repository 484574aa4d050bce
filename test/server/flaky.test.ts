import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { routes } from '../../src/contract/index.js';
import { parseJUnit } from '../../src/flaky/junit.js';
import { foldResults } from '../../src/flaky/results.js';
import { eachDatabase, serversPerTest, type TestDatabase } from '../support/hooks.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { call, ISO_MS, ok, REPO, shapeMismatches } from './helpers.js';

// Flaky tests over real HTTP: reports go in through the upload extension, and every v1 flaky
// operation is read back against the contract's schemas, with the server's clock under test control.

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T0 = Date.parse('2026-11-01T00:00:00.000Z');
const ORG = 'acme';

interface Case {
  name: string;
  classname?: string;
  file?: string;
  /** A failure message: the case failed. */
  fail?: string;
  skip?: boolean;
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');

/** A JUnit report in the common `<testsuites><testsuite><testcase>` shape. */
function junit(cases: Case[]): string {
  const body = cases
    .map((c) => {
      const attrs = `name="${esc(c.name)}" classname="${esc(c.classname ?? 'suite')}"${c.file ? ` file="${esc(c.file)}"` : ''} time="0.010"`;
      if (c.fail)
        return `<testcase ${attrs}><failure message="${esc(c.fail)}">${esc(c.fail)}</failure></testcase>`;
      if (c.skip) return `<testcase ${attrs}><skipped/></testcase>`;
      return `<testcase ${attrs}/>`;
    })
    .join('\n');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites><testsuite name="suite" tests="${cases.length}">\n${body}\n</testsuite></testsuites>\n`;
}

interface UploadOptions {
  branch?: string;
  sha: string;
  at: number;
  pr?: number;
  codeowners?: string;
}

function upload(s: TestServer, cases: Case[] | string, o: UploadOptions, token = 'token-a') {
  return ok(
    s,
    'uploadTestResults',
    {
      repo: REPO,
      org_url_slug: ORG,
      branch: o.branch ?? 'main',
      sha: o.sha,
      ...(o.pr ? { pr_number: o.pr } : {}),
      started_at: new Date(o.at).toISOString(),
      ...(o.codeowners ? { codeowners: o.codeowners } : {}),
      reports: [{ name: 'junit.xml', content: typeof cases === 'string' ? cases : junit(cases) }],
    },
    token,
  );
}

const page = (size: number, token = '') => ({ page_size: size, page_token: token });
const key = { repo: REPO, org_url_slug: ORG };
const names = (tests: { name: string }[]) => tests.map((t) => t.name).sort();

function expectShape(op: keyof typeof routes, value: unknown) {
  expect(shapeMismatches(routes[op].response as z.ZodType, value), op).toEqual([]);
}

const LOGIN = { name: 'logs in', classname: 'auth', file: 'src/auth/login.test.ts' };
const PAYS = { name: 'pays', classname: 'checkout', file: 'src/checkout/pay.test.ts' };
const SEARCH = { name: 'finds', classname: 'search', file: 'src/search/find.test.ts' };
const MIGRATES = { name: 'migrates', classname: 'db', file: 'src/db/migrate.test.ts' };
const SKIPPED = { name: 'someday', classname: 'misc', skip: true };
const CODEOWNERS = '* @acme/everyone\n/src/db/ @acme/db-team\n';
/** The same failure each time, with the numbers, address and time that vary between runs. */
const dbFailure = (i: number) =>
  `connection refused at 0x${(0xbeef00 + i).toString(16)} after ${3000 + i} ms (2026-11-01T0${i % 10}:00:00Z)`;
const sha = (i: number) => `${i.toString(16).padStart(2, '0')}${'a'.repeat(38)}`;

/**
 * Ten uploads on main an hour apart (T0+1h … T0+10h): `logs in` fails then passes in upload 1
 * (pass-on-retry), `migrates` fails every time (broken), `finds` fails in uploads 2, 5 and 8
 * (30 % on a stable branch: flaky), `pays` always passes; then two PR uploads where `finds`
 * fails (PRs 42 and 43) and `migrates` fails (PR 42).
 */
async function seed(s: TestServer) {
  const first = await upload(
    s,
    [
      { ...LOGIN, fail: 'Timeout 5000ms waiting for #submit' },
      LOGIN,
      PAYS,
      SEARCH,
      { ...MIGRATES, fail: dbFailure(1) },
      SKIPPED,
    ],
    { sha: sha(1), at: T0 + HOUR, codeowners: CODEOWNERS },
  );
  const later = [];
  for (let i = 2; i <= 10; i++) {
    const search = [2, 5, 8].includes(i) ? { ...SEARCH, fail: `expected 3 results, got ${i}` } : SEARCH;
    later.push(
      await upload(s, [LOGIN, PAYS, search, { ...MIGRATES, fail: dbFailure(i) }], {
        sha: sha(i),
        at: T0 + i * HOUR,
      }),
    );
  }
  await upload(
    s,
    [LOGIN, { ...SEARCH, fail: 'expected 3 results, got 0' }, { ...MIGRATES, fail: dbFailure(11) }],
    {
      branch: 'feature/x',
      sha: sha(11),
      pr: 42,
      at: T0 + 11 * HOUR,
    },
  );
  await upload(s, [LOGIN, { ...SEARCH, fail: 'expected 3 results, got 1' }, MIGRATES], {
    branch: 'feature/y',
    sha: sha(12),
    pr: 43,
    at: T0 + 11.5 * HOUR,
  });
  return { first, later };
}

async function byName(s: TestServer, status: 'FLAKY' | 'BROKEN', token = 'token-a') {
  const answer = await ok(s, 'listUnhealthyTests', { ...key, status, page_query: page(100) }, token);
  expectShape('listUnhealthyTests', answer);
  return new Map<string, Record<string, any>>(answer.tests.map((t: { name: string }) => [t.name, t])); // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** Every test below, once per database. */
function flakySuite(database: TestDatabase): void {
  const startServer = serversPerTest();

  /** A server whose clock reads `clock.now` (ms). */
  async function server(clock: { now: number }) {
    return startServer({
      tokens: { 'token-a': ORG, 'token-b': 'other' },
      now: () => clock.now,
      ...(await database()),
    });
  }

  describe('flaky tests: upload, classification and every endpoint', () => {
    it('counts each upload; retries fold into one pass-on-retry result; ids stay the same across uploads', async () => {
      const clock = { now: T0 + 12 * HOUR };
      const s = await server(clock);
      const { first, later } = await seed(s);
      expectShape('uploadTestResults', first);
      expect(first).toMatchObject({
        files: 1,
        tests: 5,
        passed: 2,
        failed: 1,
        skipped: 1,
        flaky: 1,
        new_tests: 5,
        excluded_from_detection: false,
      });
      expect(later.map((u) => u.new_tests)).toEqual(Array(9).fill(0));
      expect(later[0]).toMatchObject({ tests: 4, passed: 2, failed: 2, flaky: 0 });

      // The ids the server gives are the ones anyone computes from the report (UUID v5 of the identity).
      const expected = foldResults(ORG, REPO, '', parseJUnit(junit([MIGRATES]), 'x.xml').cases)[0].id;
      const broken = await byName(s, 'BROKEN');
      expect(broken.get('migrates')!.id).toBe(expected);
    });

    it('takes uploads of the same new tests at the same moment: each lands, and each test is new once', async () => {
      const clock = { now: T0 + 2 * HOUR };
      const s = await server(clock);
      // The repository exists already (its first upload is stored alone).
      await upload(s, [{ name: 'first' }], { sha: sha(9), at: T0 });
      const cases = Array.from({ length: 50 }, (_, i) => ({
        name: `concurrent ${i}`,
        fail: i % 10 === 0 ? 'boom' : undefined,
      }));
      const answers = await Promise.all(
        [1, 2, 3, 4].map((n) => upload(s, cases, { sha: sha(n), at: T0 + HOUR })),
      );
      expect(answers.map((a) => a.tests)).toEqual([50, 50, 50, 50]);
      expect(answers.reduce((sum, a) => sum + a.new_tests, 0)).toBe(50);
    });

    it('two uploads of one commit at the same moment see each other: a test failing in one and passing in the other is flaky', async () => {
      const clock = { now: T0 + 12 * HOUR };
      const s = await server(clock);
      const tests = Array.from({ length: 30 }, (_, i) => ({ name: `retried ${i}`, classname: 'shards' }));
      // Stored first, so that the uploads below find them stored and run side by side.
      await upload(s, tests, { sha: sha(99), at: T0 });
      // Ten commits, each uploaded twice at once (a CI re-run). Three more tests each time fail in
      // one of the two and pass in the other: flaky only if the second of them reads the first.
      for (let commit = 1; commit <= 10; commit++) {
        const failing = (i: number) => i >= (commit - 1) * 3 && i < commit * 3;
        await Promise.all(
          [0, 1].map((n) =>
            upload(s, n === 0 ? tests.map((t, i) => (failing(i) ? { ...t, fail: 'boom' } : t)) : tests, {
              branch: 'feature/retry',
              sha: sha(commit),
              at: T0 + commit * HOUR,
            }),
          ),
        );
        const flaky = await byName(s, 'FLAKY');
        expect([...flaky.keys()].sort(), `after commit ${commit}`).toEqual(names(tests.slice(0, commit * 3)));
      }
    });

    it('classifies: pass-on-retry and a 30 % stable-branch failure rate are flaky, 100 % is broken, with reasons and times', async () => {
      const clock = { now: T0 + 12 * HOUR };
      const s = await server(clock);
      await seed(s);

      const flaky = await byName(s, 'FLAKY');
      expect([...flaky.keys()].sort()).toEqual(['finds', 'logs in']);
      expect(flaky.get('logs in')!.status).toEqual({
        value: 'flaky',
        reason: `Inconsistent results on the same commit ${sha(1).slice(0, 7)} on main`,
        timestamp: new Date(T0 + HOUR).toISOString(),
      });
      // Flaky from the 10th stable run on (min sample 10): 3 of 10 failed.
      expect(flaky.get('finds')!.status.reason).toBe(
        '3 of 10 runs (30%) failed on stable branches in the last 72 h: flaky (activates at 20%, resolves below 10%)',
      );
      expect(flaky.get('finds')!.status.timestamp).toBe(new Date(T0 + 10 * HOUR).toISOString());
      expect(flaky.get('finds')!.pull_requests_impacted_last_7d).toBe(2);

      const broken = await byName(s, 'BROKEN');
      const migrates = broken.get('migrates')!;
      expect([...broken.keys()]).toEqual(['migrates']);
      expect(migrates.status.value).toBe('broken');
      expect(migrates.status.reason).toBe(
        '10 of 10 runs (100%) failed on stable branches in the last 72 h: at or above the broken threshold 80%',
      );
      expect(migrates).toMatchObject({
        name: 'migrates',
        classname: 'db',
        file_path: 'src/db/migrate.test.ts',
        variant: '',
        codeowners: ['@acme/db-team'],
        quarantined: false,
        pull_requests_impacted_last_7d: 1,
        html_url: 'https://github.com/acme/web/blob/HEAD/src/db/migrate.test.ts',
        repository: { html_url: 'https://github.com/acme/web' },
      });
      expect(flaky.get('logs in')!.codeowners).toEqual(['@acme/everyone']);
    });

    it('keeps the CODEOWNERS file of the latest upload that sent one; an upload without one leaves it', async () => {
      const s = await server({ now: T0 + 12 * HOUR });
      const ownersOfMigrates = async () => {
        const answer = await ok(s, 'listFailingTests', {
          ...key,
          start_time: new Date(T0).toISOString(),
          end_time: new Date(T0 + DAY).toISOString(),
          page_query: page(10),
        });
        return answer.tests.find((t: { name: string }) => t.name === 'migrates')?.codeowners;
      };
      const failing = [{ ...MIGRATES, fail: dbFailure(1) }];
      await upload(s, failing, { sha: sha(1), at: T0 + HOUR, codeowners: CODEOWNERS });
      expect(await ownersOfMigrates()).toEqual(['@acme/db-team']);
      await upload(s, failing, { sha: sha(2), at: T0 + 2 * HOUR, codeowners: '* @acme/platform\n' });
      expect(await ownersOfMigrates()).toEqual(['@acme/platform']);
      await upload(s, failing, { sha: sha(3), at: T0 + 3 * HOUR, codeowners: '* @acme/platform\n' });
      await upload(s, failing, { sha: sha(4), at: T0 + 4 * HOUR });
      expect(await ownersOfMigrates()).toEqual(['@acme/platform']);
    });

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

    it('pass-on-retry resolves after 7 days without recurrence; a new occurrence brings it back', async () => {
      const clock = { now: T0 + 12 * HOUR };
      const s = await server(clock);
      await seed(s);
      const loginId = (await byName(s, 'FLAKY')).get('logs in')!.id as string;

      clock.now = T0 + HOUR + 7 * DAY + 1;
      expect([...(await byName(s, 'FLAKY')).keys()]).toEqual(['finds']);
      const healthy = (await ok(s, 'getTestDetails', { ...key, test_id: loginId })).test.status;
      expect(healthy).toEqual({
        value: 'healthy',
        reason: 'No inconsistent results on the same commit since the recovery period began',
        timestamp: new Date(T0 + HOUR + 7 * DAY).toISOString(),
      });

      // Two days later it fails on one upload of a commit and passes on another of the same commit (a re-run job).
      clock.now = T0 + 9 * DAY;
      await upload(s, [{ ...LOGIN, fail: 'Timeout 5000ms waiting for #submit' }], {
        branch: 'feature/z',
        sha: sha(20),
        at: clock.now - HOUR,
      });
      await upload(s, [LOGIN], { branch: 'feature/z', sha: sha(20), at: clock.now - HOUR / 2 });
      const back = (await byName(s, 'FLAKY')).get('logs in')!;
      expect(back.status.reason).toBe(
        `Inconsistent results on the same commit ${sha(20).slice(0, 7)} on feature/z`,
      );
      expect(back.status.timestamp).toBe(new Date(clock.now - HOUR / 2).toISOString());
    });

    it('a failure-rate verdict leaves pass-on-retry as it was: each monitor writes only its own columns', async () => {
      const clock = { now: T0 + 12 * HOUR };
      const s = await server(clock);
      // Fails then passes on the first upload (pass-on-retry, active for 7 days), then fails 3 of the
      // next 9 stable runs: at the 10th run the failure-rate monitor says flaky too (4 of 10).
      await upload(s, [{ ...PAYS, fail: 'card declined' }, PAYS], { sha: sha(1), at: T0 + HOUR });
      for (let i = 2; i <= 10; i++)
        await upload(s, [i % 3 === 0 ? { ...PAYS, fail: `card declined ${i}` } : PAYS], {
          sha: sha(i),
          at: T0 + i * HOUR,
        });
      const pays = (await byName(s, 'FLAKY')).get('pays')!;
      // Pass-on-retry, still active, comes first; its reason and time are intact.
      expect(pays.status).toEqual({
        value: 'flaky',
        reason: `Inconsistent results on the same commit ${sha(1).slice(0, 7)} on main`,
        timestamp: new Date(T0 + HOUR).toISOString(),
      });
      // Once it has recovered, the failure-rate verdict made at the 10th run shows.
      clock.now = T0 + HOUR + 7 * DAY + 1;
      expect((await byName(s, 'FLAKY')).get('pays')!.status).toEqual({
        value: 'flaky',
        reason:
          '4 of 10 runs (40%) failed on stable branches in the last 72 h: flaky (activates at 20%, resolves below 10%)',
        timestamp: new Date(T0 + 10 * HOUR).toISOString(),
      });
    });

    it('an upload in which most tests failed is kept but changes no status (infrastructure outage guard)', async () => {
      const clock = { now: T0 + 20 * HOUR };
      const s = await server(clock);
      const cases = (i: number): Case[] =>
        Array.from({ length: 12 }, (_, k) => ({
          name: `t${k}`,
          classname: 'outage',
          ...(k < 10 ? { fail: `ECONNRESET ${i}` } : {}),
        }));
      for (let i = 1; i <= 12; i++) {
        const answer = await upload(s, cases(i), { sha: sha(i), at: T0 + i * HOUR });
        expect(answer.excluded_from_detection).toBe(true);
      }
      expect((await byName(s, 'BROKEN')).size).toBe(0);
      expect((await byName(s, 'FLAKY')).size).toBe(0);
      // The failures still happened: list-failing-tests shows them.
      const failing = await ok(s, 'listFailingTests', {
        ...key,
        start_time: new Date(T0).toISOString(),
        end_time: new Date(T0 + DAY).toISOString(),
        page_query: page(100),
      });
      expect(failing.page.total_rows).toBe(10);

      // A test's history shows those uploads apart: newest first, with their counts and its own
      // result, and its runs there apart from the runs that count. An upload that counts adds a run.
      await upload(
        s,
        [
          { name: 't0', classname: 'outage', fail: 'assert 1 == 2' },
          { name: 't11', classname: 'outage' },
        ],
        {
          sha: sha(13),
          at: T0 + 13 * HOUR,
          pr: 7,
        },
      );
      const byTest = new Map<string, string>(
        failing.tests.map((t: { name: string; id: string }) => [t.name, t.id]),
      );
      const history = await ok(s, 'getTestFailureHistory', { ...key, test_id: byTest.get('t0'), days: 2 });
      expectShape('getTestFailureHistory', history);
      expect(history.days).toEqual([
        { date: '2026-10-31', runs: 0, failures: 0, failure_rate: null, excluded_runs: 0 },
        { date: '2026-11-01', runs: 1, failures: 1, failure_rate: 1, excluded_runs: 12 },
      ]);
      expect(history.excluded_uploads_total).toBe(12);
      expect(history.excluded_uploads.map((u: { sha: string }) => u.sha)).toEqual(
        Array.from({ length: 12 }, (_, i) => sha(12 - i)),
      );
      expect(history.excluded_uploads[0]).toEqual({
        upload_id: expect.any(String),
        started_at: new Date(T0 + 12 * HOUR).toISOString(),
        branch: 'main',
        sha: sha(12),
        job: null,
        pr_number: null,
        tests: 12,
        failed: 10,
        outcome: 'failed',
      });
      expect(
        (await ok(s, 'getTestFailureHistory', { ...key, test_id: byTest.get('t0'), days: 1 }))
          .excluded_uploads_total,
      ).toBe(12);
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

    it('takes a report with an absurd duration (time="1e300"): the duration is not known, the upload is stored', async () => {
      const s = await server({ now: T0 + HOUR });
      const xml =
        '<testsuite name="s"><testcase classname="c" name="slow" time="1e300"/><testcase classname="c" name="fast" time="0.5"/></testsuite>';
      expect(await upload(s, xml, { sha: sha(1), at: T0 })).toMatchObject({
        tests: 2,
        passed: 2,
        new_tests: 2,
      });
    });

    it('refuses an attempt number no 32-bit integer holds with a 400 that names it, and takes the largest one that fits', async () => {
      const s = await server({ now: T0 + HOUR });
      const request = (attempt: number) => ({
        repo: REPO,
        org_url_slug: ORG,
        branch: 'main',
        sha: sha(1),
        attempt,
        reports: [{ name: 'junit.xml', content: junit([PAYS]) }],
      });
      const refused = await call(s, 'uploadTestResults', request(2_147_483_648), { token: 'token-a' });
      expect(refused.status).toBe(400);
      expect(refused.text).toMatch(/attempt/);
      expect((await call(s, 'uploadTestResults', request(2_147_483_647), { token: 'token-a' })).status).toBe(
        200,
      );
    });

    it('refuses a NUL character in any field with a 400 that names the field (PostgreSQL cannot store one)', async () => {
      const s = await server({ now: T0 + HOUR });
      await upload(s, [PAYS], { sha: sha(1), at: T0 });
      const settings = await call(
        s,
        'getRepositorySettings',
        { ...key, repo: { ...REPO, name: 'we\u0000b' } },
        { token: 'token-a' },
      );
      expect([settings.status, settings.text]).toEqual([
        400,
        'repo.name: must not contain a NUL character (U+0000)',
      ]);
      const uploaded = await call(
        s,
        'uploadTestResults',
        {
          ...key,
          branch: 'main\u0000',
          sha: sha(2),
          reports: [{ name: 'junit.xml', content: junit([PAYS]) }],
        },
        { token: 'token-a' },
      );
      expect([uploaded.status, uploaded.text]).toEqual([
        400,
        'branch: must not contain a NUL character (U+0000)',
      ]);
      // A report is not a field: its NUL bytes (captured output, a failure message) are read as U+FFFD.
      const report = junit([{ ...LOGIN, fail: 'got \u0000 instead of a name' }]).replace(
        '</testsuite>',
        '<system-out>bin\u0000ary</system-out></testsuite>',
      );
      expect(await upload(s, report, { sha: sha(3), at: T0 })).toMatchObject({ tests: 1, failed: 1 });
    });

    it('malformed XML anywhere in an upload stores nothing and names the file and line', async () => {
      const clock = { now: T0 + 12 * HOUR };
      const s = await server(clock);
      const bad = await call(s, 'uploadTestResults', {
        ...key,
        branch: 'main',
        sha: sha(1),
        reports: [
          { name: 'good.xml', content: junit([PAYS]) },
          {
            name: 'reports/broken.xml',
            content: '<testsuites>\n<testsuite name="x">\n<testcase name="a">\n',
          },
        ],
      });
      expect(bad.status).toBe(400);
      expect(bad.text).toMatch(/^reports: reports\/broken\.xml: line \d+/);
      // The good report of the refused upload was not stored either: it is new now.
      expect(
        (
          await ok(s, 'uploadTestResults', {
            ...key,
            branch: 'main',
            sha: sha(1),
            reports: [{ name: 'good.xml', content: junit([PAYS]) }],
          })
        ).new_tests,
      ).toBe(1);
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

  describe('flaky data and restarts', () => {
    it('stores an upload of more rows than one statement takes whole: 12,000 results, 6,000 failures', async () => {
      const clock = { now: T0 + 2 * DAY };
      const s = await server(clock);
      const cases: Case[] = Array.from({ length: 12_000 }, (_, i) => ({
        name: `bulk ${String(i).padStart(5, '0')}`,
        classname: 'bulk',
        ...(i % 2 ? {} : { fail: `failed ${i}` }),
      }));
      expect(await upload(s, cases, { sha: sha(1), at: T0 + HOUR })).toMatchObject({
        tests: 12_000,
        failed: 6_000,
        new_tests: 12_000,
      });
      expect(await upload(s, cases, { sha: sha(2), at: T0 + 2 * HOUR })).toMatchObject({
        tests: 12_000,
        new_tests: 0,
      });
      const window = {
        ...key,
        start_time: new Date(T0).toISOString(),
        end_time: new Date(T0 + DAY).toISOString(),
      };
      const first = await ok(s, 'listFailingTests', { ...window, page_query: page(100) });
      expect(first.page.total_rows).toBe(6_000);
      // The last failing test: its results and failures of both uploads were stored past the first 5,000 rows.
      const last = await ok(s, 'listFailingTests', {
        ...window,
        page_query: page(100, first.page.last_page_token),
      });
      const test = last.tests.find((t: { name: string }) => t.name === 'bulk 11998');
      expect(test).toMatchObject({ failure_rate_last_7d: 1 });
      expect(test.most_common_failures).toEqual([
        {
          summary: 'failed <n>',
          occurrence_count: 2,
          last_occurrence: new Date(T0 + 2 * HOUR).toISOString(),
        },
      ]);
    });

    it('survives a restart of the server on the same data dir', async () => {
      const clock = { now: T0 + 12 * HOUR };
      const dataDir = await mkdtemp(join(tmpdir(), 'railyard-flaky-'));
      const db = await database();
      try {
        const s = await startTestServer({ dataDir, tokens: { 'token-a': ORG }, now: () => clock.now, ...db });
        await seed(s);
        const before = await byName(s, 'BROKEN');
        await s.close();
        const again = await startTestServer({
          dataDir,
          tokens: { 'token-a': ORG },
          now: () => clock.now,
          ...db,
        });
        const after = await byName(again, 'BROKEN');
        await again.close();
        expect([...after.values()]).toEqual([...before.values()]);
        expect(after.size).toBe(1);
      } finally {
        await rm(dataDir, { recursive: true, force: true });
      }
    });
  });

  describe('Playwright projects', () => {
    it('a test failing only in Firefox is its own failing test, next to its passing Chromium twin', async () => {
      const clock = { now: T0 + 2 * HOUR };
      const s = await server(clock);
      const fixture = readFileSync(
        fileURLToPath(new URL('../fixtures/junit/playwright-junit-projects.xml', import.meta.url)),
        'utf8',
      );
      const answer = await upload(s, fixture, { sha: sha(1), at: T0 + HOUR });
      expect(answer).toMatchObject({ tests: 16, passed: 11, failed: 3, skipped: 2, new_tests: 16 });
      const failing = await ok(s, 'listFailingTests', {
        ...key,
        start_time: new Date(T0).toISOString(),
        end_time: new Date(clock.now).toISOString(),
        page_query: page(100),
      });
      const seen = (failing.tests as Array<{ name: string; variant: string }>)
        .map((t) => `${t.variant}: ${t.name}`)
        .sort();
      expect(seen).toEqual([
        'chromium: checkout › pays with card',
        'firefox: cart › keeps items after reload',
        'firefox: checkout › pays with card',
      ]);
    });
  });
}

// SQLite and PostgreSQL side by side: each copy mostly waits on its servers and report workers.
eachDatabase(flakySuite, { sideBySide: true });
