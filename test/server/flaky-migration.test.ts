import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { testId } from '../../src/flaky/identity.js';
import { migrations } from '../../src/store/migrations/index.js';
import { SQLITE_FILE } from '../../src/store/index.js';
import { startTestServer } from '../support/server.js';
import { ok, REPO } from './helpers.js';

// A database written by 002_flaky (one text-keyed row per result) is moved to 003's layout when a
// newer server opens it, and the results it held keep counting: rates, failures, list-failing,
// pass-on-retry against an old upload of the same commit, and tests recognised as known.

const HOUR = 3_600_000;
const T0 = Date.parse('2026-11-10T12:00:00.000Z');
const ORG = 'acme';
const SHA = 'c0ffee1234567890c0ffee1234567890c0ffee12';
const identity = (name: string) => ({ file: 'src/cart.test.ts', classname: 'cart', parent: 'suite', name, variant: '' });
const ID = { flaky: testId(ORG, REPO, identity('applies discount')), steady: testId(ORG, REPO, identity('adds item')) };

/** Writes results the way 002 stored them: `flaky` failed and `steady` passed on SHA at T0, on main. */
async function databaseAt002(dataDir: string): Promise<void> {
  const file = join(dataDir, SQLITE_FILE);
  const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new Database(file) }) });
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const { error } = await migrator.migrateTo('002_flaky');
  await db.destroy();
  if (error) throw error;
  const sqlite = new Database(file);
  const insert = (table: string, row: Record<string, unknown>) =>
    sqlite.prepare(`INSERT INTO ${table} (${Object.keys(row).join(', ')}) VALUES (${Object.keys(row).map((k) => `@${k}`).join(', ')})`).run(row);
  insert('organisations', { slug: ORG, created_at: T0 });
  insert('flaky_repositories', { id: 'repo-1', org_slug: ORG, repo_key: 'github.com/acme/web', host: 'github.com', owner: 'acme', name: 'web', settings: '{}', codeowners: null, created_at: T0, updated_at: T0 });
  for (const [key, name] of [['flaky', 'applies discount'], ['steady', 'adds item']] as const) {
    insert('test_cases', { id: ID[key], repo_id: 'repo-1', ...identity(name), first_seen_at: T0, rate_status: 'healthy' });
  }
  insert('test_uploads', { id: 'upload-1', repo_id: 'repo-1', branch: 'main', sha: SHA, pr_number: null, job: null, attempt: 1, variant: '', started_at: T0, created_at: T0, counts: '{}', excluded: 0 });
  const result = { upload_id: 'upload-1', repo_id: 'repo-1', at: T0, stable: 1, excluded: 0, sha: SHA, pr_number: null, duration_ms: 12, attempts: 1 };
  insert('test_results', { ...result, test_id: ID.flaky, outcome: 'failed', failure_key: 'expected <n> to be <n>', failure_line: 'expected 90 to be 81' });
  insert('test_results', { ...result, test_id: ID.steady, outcome: 'passed', failure_key: null, failure_line: null });
  sqlite.close();
}

describe('migrating flaky results from 002', () => {
  let dataDir = '';
  afterAll(() => rm(dataDir, { recursive: true, force: true }));

  it('keeps every stored result counting under the new layout', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'railyard-migrate-'));
    await databaseAt002(dataDir);
    const clock = { now: T0 + HOUR };
    const s = await startTestServer({ dataDir, tokens: { 'token-a': ORG }, now: () => clock.now });
    try {
      const key = { repo: REPO, org_url_slug: ORG };
      const { test } = await ok(s, 'getTestDetails', { ...key, test_id: ID.flaky });
      expect(test).toMatchObject({
        failure_rate_last_24h: 1,
        failure_rate_last_7d: 1,
        most_common_failures: [{ summary: 'expected <n> to be <n>', occurrence_count: 1, last_occurrence: new Date(T0).toISOString() }],
      });
      const window = { start_time: new Date(T0 - HOUR).toISOString(), end_time: new Date(T0 + HOUR).toISOString() };
      const failing = await ok(s, 'listFailingTests', { ...key, ...window, page_query: { page_size: 10, page_token: '' } });
      expect(failing.tests.map((t: { id: string }) => t.id)).toEqual([ID.flaky]);

      // The same commit again, now passing: pass-on-retry evidence against the migrated upload.
      const xml = `<testsuites><testsuite name="suite"><testcase name="applies discount" classname="cart" file="src/cart.test.ts"/><testcase name="adds item" classname="cart" file="src/cart.test.ts"/><testcase name="removes item" classname="cart" file="src/cart.test.ts"/></testsuite></testsuites>`;
      const answer = await ok(s, 'uploadTestResults', { ...key, branch: 'main', sha: SHA, started_at: new Date(T0 + HOUR).toISOString(), reports: [{ name: 'junit.xml', content: xml }] });
      expect(answer).toMatchObject({ tests: 3, passed: 3, new_tests: 1 });
      const unhealthy = await ok(s, 'listUnhealthyTests', { ...key, status: 'FLAKY', page_query: { page_size: 10, page_token: '' } });
      expect(unhealthy.tests).toEqual([
        expect.objectContaining({ id: ID.flaky, status: expect.objectContaining({ value: 'flaky', reason: expect.stringContaining(SHA.slice(0, 7)) }) }),
      ]);
    } finally {
      await s.close();
    }
  });
});
