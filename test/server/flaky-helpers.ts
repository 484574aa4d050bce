/**
 * Shared by the flaky-test server suites (test/server/flaky-*.test.ts): a JUnit report writer, an
 * upload through the upload extension, the seeded history of four tests (`seed`), reads of the
 * unhealthy list by name and of the contract's shapes, and a server whose clock the test controls.
 */
import { expect } from 'vitest';
import type { z } from 'zod';
import { routes } from '../../src/contract/index.js';
import { serversPerTest, type TestDatabase } from '../support/hooks.js';
import type { TestServer } from '../support/server.js';
import { ok, REPO, shapeMismatches } from './helpers.js';

export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;
export const T0 = Date.parse('2026-11-01T00:00:00.000Z');
export const ORG = 'acme';

export interface Case {
  name: string;
  classname?: string;
  file?: string;
  /** A failure message: the case failed. */
  fail?: string;
  skip?: boolean;
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');

/** A JUnit report in the common `<testsuites><testsuite><testcase>` shape. */
export function junit(cases: Case[]): string {
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

export interface UploadOptions {
  branch?: string;
  sha: string;
  at: number;
  pr?: number;
  codeowners?: string;
}

export function upload(s: TestServer, cases: Case[] | string, o: UploadOptions, token = 'token-a') {
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

export const page = (size: number, token = '') => ({ page_size: size, page_token: token });
export const key = { repo: REPO, org_url_slug: ORG };
export const names = (tests: { name: string }[]) => tests.map((t) => t.name).sort();

export function expectShape(op: keyof typeof routes, value: unknown) {
  expect(shapeMismatches(routes[op].response as z.ZodType, value), op).toEqual([]);
}

export const LOGIN = { name: 'logs in', classname: 'auth', file: 'src/auth/login.test.ts' };
export const PAYS = { name: 'pays', classname: 'checkout', file: 'src/checkout/pay.test.ts' };
export const SEARCH = { name: 'finds', classname: 'search', file: 'src/search/find.test.ts' };
export const MIGRATES = { name: 'migrates', classname: 'db', file: 'src/db/migrate.test.ts' };
export const SKIPPED = { name: 'someday', classname: 'misc', skip: true };
export const CODEOWNERS = '* @acme/everyone\n/src/db/ @acme/db-team\n';
/** The same failure each time, with the numbers, address and time that vary between runs. */
export const dbFailure = (i: number) =>
  `connection refused at 0x${(0xbeef00 + i).toString(16)} after ${3000 + i} ms (2026-11-01T0${i % 10}:00:00Z)`;
export const sha = (i: number) => `${i.toString(16).padStart(2, '0')}${'a'.repeat(38)}`;

/**
 * Ten uploads on main an hour apart (T0+1h … T0+10h): `logs in` fails then passes in upload 1
 * (pass-on-retry), `migrates` fails every time (broken), `finds` fails in uploads 2, 5 and 8
 * (30 % on a stable branch: flaky), `pays` always passes; then two PR uploads where `finds`
 * fails (PRs 42 and 43) and `migrates` fails (PR 42).
 */
export async function seed(s: TestServer) {
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

export async function byName(s: TestServer, status: 'FLAKY' | 'BROKEN', token = 'token-a') {
  const answer = await ok(s, 'listUnhealthyTests', { ...key, status, page_query: page(100) }, token);
  expectShape('listUnhealthyTests', answer);
  return new Map<string, Record<string, any>>(answer.tests.map((t: { name: string }) => [t.name, t])); // eslint-disable-line @typescript-eslint/no-explicit-any
}

/**
 * The servers of one database's copy of a suite (call inside the suite: `const server =
 * flakyServers(database);`): each reads its clock from `clock.now` (ms), takes token-a for our
 * organisation and token-b for another, and is closed after its test.
 */
export function flakyServers(database: TestDatabase): (clock: { now: number }) => Promise<TestServer> {
  const startServer = serversPerTest();
  return async (clock) =>
    startServer({
      tokens: { 'token-a': ORG, 'token-b': 'other' },
      now: () => clock.now,
      ...(await database()),
    });
}
