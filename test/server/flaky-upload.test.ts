/**
 * Flaky tests over real HTTP, the upload side: what an upload counts and stores (retries folded,
 * ids as anyone computes them, uploads at the same moment, the latest CODEOWNERS), bad uploads
 * refused with a message that names the field or file, uploads of 12,000 results, a restart on
 * the same data, and Playwright projects as variants. The server's clock is under test control.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseJUnit } from '../../src/flaky/junit.js';
import { foldResults } from '../../src/flaky/results.js';
import { eachDatabase, type TestDatabase } from '../support/hooks.js';
import { startTestServer } from '../support/server.js';
import { call, ok, REPO } from './helpers.js';
import {
  byName,
  type Case,
  CODEOWNERS,
  DAY,
  dbFailure,
  expectShape,
  flakyServers,
  HOUR,
  junit,
  key,
  LOGIN,
  MIGRATES,
  names,
  ORG,
  page,
  PAYS,
  seed,
  sha,
  T0,
  upload,
} from './flaky-helpers.js';

/** Every test below, once per database. */
function flakyUploadSuite(database: TestDatabase): void {
  const server = flakyServers(database);

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
eachDatabase(flakyUploadSuite, { sideBySide: true });
