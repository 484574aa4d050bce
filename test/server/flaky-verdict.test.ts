/**
 * The `verdict` extension of the flaky-test answers, over real HTTP and in the CLI: a test that
 * failed every time but has too few runs says "not enough runs yet (3 of 10)", never just healthy;
 * failures that a pass on the same commit followed are labelled as passed on retry. Trunk's own
 * fields (status.value, status.reason) stay as they were.
 */
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { routes, type DetailedTestCase, type UnhealthyTestCase } from '../../src/contract/index.js';
import { isolatedEnv, railyard } from '../support/cli.js';
import { eachDatabase, serversPerTest, type TestDatabase } from '../support/hooks.js';
import type { TestServer } from '../support/server.js';
import { ok, REPO, shapeMismatches } from './helpers.js';

const HOUR = 3_600_000;
const T0 = Date.parse('2026-11-01T00:00:00.000Z');
const ORG = 'acme';
const key = { repo: REPO, org_url_slug: ORG };
const sha = (i: number) => `${i.toString(16).padStart(2, '0')}${'b'.repeat(38)}`;

/** A JUnit report: each case passes, or fails with `fail`; the same name twice is a retry. */
function junit(cases: Array<{ name: string; fail?: string }>): string {
  const body = cases
    .map((c) =>
      c.fail
        ? `<testcase name="${c.name}" classname="suite" time="0.01"><failure message="${c.fail}">${c.fail}</failure></testcase>`
        : `<testcase name="${c.name}" classname="suite" time="0.01"/>`,
    )
    .join('\n');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites><testsuite name="suite">\n${body}\n</testsuite></testsuites>\n`;
}


function upload(s: TestServer, cases: Array<{ name: string; fail?: string }>, o: { sha: string; at: number; branch?: string }) {
  return ok(s, 'uploadTestResults', {
    ...key,
    branch: o.branch ?? 'main',
    sha: o.sha,
    started_at: new Date(o.at).toISOString(),
    reports: [{ name: 'junit.xml', content: junit(cases) }],
  });
}

async function failing(s: TestServer, clock: { now: number }): Promise<Map<string, DetailedTestCase>> {
  const body = await ok(s, 'listFailingTests', {
    ...key,
    start_time: new Date(T0).toISOString(),
    end_time: new Date(clock.now).toISOString(),
    page_query: { page_size: 100, page_token: '' },
  });
  expect(shapeMismatches(routes.listFailingTests.response as z.ZodType, body)).toEqual([]);
  return new Map((body.tests as DetailedTestCase[]).map((t) => [t.name, t]));
}

function verdictSuite(database: TestDatabase): void {
  const startServer = serversPerTest();

  it('a test that failed in each of its 3 runs has no verdict yet: "not enough runs yet (3 of 10)", in the API and the CLI', async () => {
    const clock = { now: T0 + 4 * HOUR };
    const s = await startServer({ tokens: { 'token-a': ORG }, now: () => clock.now, ...(await database()) });
    for (let i = 1; i <= 3; i++) {
      await upload(s, [{ name: 'slow', fail: 'timed out' }, { name: 'fine' }], { sha: sha(i), at: T0 + i * HOUR });
    }
    const slow = (await failing(s, clock)).get('slow')!;
    // Trunk's fields are as before: healthy (no monitor has decided), with its reason.
    expect(slow.status.value).toBe('healthy');
    expect(slow.status.reason).toBe('No problems detected');
    expect(slow.verdict).toEqual({
      kind: 'not_enough_runs',
      label: 'not enough runs yet (3 of 10)',
      runs: 3,
      failures: 3,
      min_runs: 10,
      window_hours: 72,
      failures_passed_on_retry_last_7d: 0,
    });
    const details = await ok(s, 'getTestDetails', { ...key, test_id: slow.id });
    expect(details.test.verdict).toEqual(slow.verdict);

    const env = isolatedEnv({ RAILYARD_API_URL: s.url, RAILYARD_TOKEN: 'token-a', RAILYARD_ORG: ORG });
    // The CLI's clock is the real one: give the window from T0 on.
    const list = await railyard(['flaky', 'list-failing', '--repo', 'acme/web', '--start', new Date(T0).toISOString(), '--end', new Date(clock.now).toISOString(), '--format', 'tsv'], env);
    expect(list.stderr).toBe('');
    const rows = list.stdout.trimEnd().split('\n').map((line) => line.split('\t'));
    const status = rows[0]!.indexOf('Status');
    expect(rows.find((r) => r[0] === 'slow')![status]).toBe('not enough runs yet (3 of 10)');
    const show = await railyard(['flaky', 'show', slow.id, '--repo', 'acme/web'], env);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/^status\s+not enough runs yet \(3 of 10\)$/m);
    expect(show.stdout).toMatch(/^reason\s+3 of 3 runs failed on stable branches in the last 72 h: the failure-rate monitor decides from 10 runs$/m);
    expect(show.stdout).not.toMatch(/healthy/);

    // From the 10th run on the monitor decides: broken, as before.
    for (let i = 4; i <= 10; i++) {
      await upload(s, [{ name: 'slow', fail: 'timed out' }, { name: 'fine' }], { sha: sha(i), at: T0 + i * HOUR });
    }
    clock.now = T0 + 11 * HOUR;
    const after = (await failing(s, clock)).get('slow')!;
    expect(after.status.value).toBe('broken');
    expect(after.verdict).toMatchObject({ kind: 'failure_rate', label: 'broken', runs: 10, failures: 10 });
  });

  it('labels failures that passed on retry on the same commit, in one upload or a later one, and the flaky status they cause', async () => {
    const clock = { now: T0 + 6 * HOUR };
    const s = await startServer({ tokens: { 'token-a': ORG }, now: () => clock.now, ...(await database()) });
    // `retried` fails on sha 1, and a later upload of sha 1 (a re-run) passes it.
    await upload(s, [{ name: 'retried', fail: 'flake' }, { name: 'inline' }], { sha: sha(1), at: T0 + HOUR });
    await upload(s, [{ name: 'retried' }], { sha: sha(1), at: T0 + 2 * HOUR });
    // `inline` fails and passes within one upload (the runner's retry).
    await upload(s, [{ name: 'inline', fail: 'flake' }, { name: 'inline' }, { name: 'retried' }], { sha: sha(2), at: T0 + 3 * HOUR });
    // `plain` fails on sha 3 and passes only on another commit: not a retry.
    await upload(s, [{ name: 'plain', fail: 'bug' }, { name: 'retried' }, { name: 'inline' }], { sha: sha(3), at: T0 + 4 * HOUR });
    await upload(s, [{ name: 'plain' }, { name: 'retried' }, { name: 'inline' }], { sha: sha(4), at: T0 + 5 * HOUR });

    const body = await ok(s, 'listUnhealthyTests', { ...key, status: 'FLAKY', page_query: { page_size: 100, page_token: '' } });
    const flaky = new Map((body.tests as UnhealthyTestCase[]).map((t) => [t.name, t]));
    expect([...flaky.keys()].sort()).toEqual(['inline', 'retried']);
    for (const name of ['inline', 'retried']) {
      expect(flaky.get(name)!.status.value).toBe('flaky');
      expect(flaky.get(name)!.verdict).toMatchObject({ kind: 'pass_on_retry', label: 'flaky: passed on retry', failures_passed_on_retry_last_7d: 1 });
    }
    const plain = (await failing(s, clock)).get('plain')!;
    expect(plain.verdict).toMatchObject({ kind: 'not_enough_runs', label: 'not enough runs yet (2 of 10)', failures_passed_on_retry_last_7d: 0 });

    const env = isolatedEnv({ RAILYARD_API_URL: s.url, RAILYARD_TOKEN: 'token-a', RAILYARD_ORG: ORG });
    const list = await railyard(['flaky', 'list-unhealthy', '--repo', 'acme/web', '--format', 'csv'], env);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^retried,flaky: passed on retry,/m);
    expect(list.stdout).toMatch(/^inline,flaky: passed on retry,/m);
  });
}

// SQLite and PostgreSQL side by side: each copy mostly waits on its servers.
eachDatabase(verdictSuite, { sideBySide: true });

describe('the verdict is an extension: marked so in the OpenAPI document', () => {
  it('is optional on the test answers and marked x-railyard-extension', async () => {
    const { buildOpenApiDocument } = await import('../../src/contract/openapi.js');
    const text = JSON.stringify(buildOpenApiDocument('test'));
    expect(text).toMatch(/"verdict":\{[^]*?"x-railyard-extension":true/);
  });
});
