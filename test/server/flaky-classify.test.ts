/**
 * Flaky tests over real HTTP, the classification side: pass-on-retry and failure-rate verdicts
 * with their reasons and times, pass-on-retry recovering after 7 days and coming back, each
 * monitor keeping to its own verdict, and the outage guard (an upload in which most tests failed
 * changes no status, and a test's history shows it apart). The server's clock is under test control.
 */
import { describe, expect, it } from 'vitest';
import { eachDatabase, type TestDatabase } from '../support/hooks.js';
import { ok } from './helpers.js';
import {
  byName,
  type Case,
  DAY,
  expectShape,
  flakyServers,
  HOUR,
  key,
  LOGIN,
  page,
  PAYS,
  seed,
  sha,
  T0,
  upload,
} from './flaky-helpers.js';

/** Every test below, once per database. */
function flakyClassifySuite(database: TestDatabase): void {
  const server = flakyServers(database);

  describe('flaky tests: upload, classification and every endpoint', () => {
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
  });
}

// SQLite and PostgreSQL side by side: each copy mostly waits on its servers and report workers.
eachDatabase(flakyClassifySuite, { sideBySide: true });
