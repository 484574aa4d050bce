/**
 * The flaky-ticket lifecycle tests' harness: a tracker emulator behind one face (its tickets, a
 * person closing one, an outage), a Railyard server on the same data dir across restarts with
 * tickets on, and uploads that drive one test healthy or unhealthy through the failure-rate
 * monitor (min_sample 1: each upload moves the rate; flaky at 60 %, broken at 80 %, healthy below 50 %).
 */
import { expect } from 'vitest';
import { ok } from '../server/helpers.js';
import { until as waitUntil } from '../support/forge-e2e.js';
import { startTestServer, type TestServer } from '../support/server.js';

export const REPO = { host: 'github.com', owner: 'acme', name: 'web' };
export const CODEOWNERS = 'src/auth/ @acme/auth-team\n';

/** One ticket as the tracker has it. */
export interface SeenTicket {
  key: string;
  url: string;
  open: boolean;
  title: string;
  body: string;
  comments: string[];
}

/** A tracker emulator as the lifecycle tests use it. */
export interface TrackerUnderTest {
  system: 'github' | 'gitlab' | 'jira';
  project: string;
  apiUrl: string;
  token: string;
  tickets(): SeenTicket[];
  closeAsPerson(key: string): void;
  /** Every ticket request answered 503 while on. */
  setDown(on: boolean): void;
  /** Requests answered 503 so far. */
  refused(): number;
  schemaViolations(): string[];
  close(): Promise<void>;
}

/** Answers what `get` answers once it is truthy, looking every 50 ms; fails after `timeoutMs`. */
export const until = <T>(what: string, get: () => T | Promise<T>, timeoutMs = 30_000) =>
  waitUntil(what, get, timeoutMs, 50);

export async function railyard(
  t: TrackerUnderTest,
  dataDir: string,
  databaseUrl?: string,
): Promise<TestServer> {
  return startTestServer({
    dataDir,
    ...(databaseUrl ? { databaseUrl } : {}),
    webhooks: {
      allowPrivate: true,
      allowHttp: true,
      retrySchedule: [200, 300, 400, 500, 600, 800, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000],
      timeoutMs: 2000,
      pollMs: 50,
      tickets: { apiUrl: t.apiUrl, token: t.token },
    },
  });
}

export async function ticketsOn(s: TestServer, t: TrackerUnderTest): Promise<void> {
  await ok(s, 'updateRepositorySettings', {
    repo: REPO,
    org_url_slug: s.org,
    settings: {
      pass_on_retry: { enabled: false },
      failure_rate: {
        min_sample: 1,
        window_hours: 720,
        flaky_activation: 0.6,
        flaky_resolution: 0.5,
        broken_threshold: 0.8,
      },
      ticket_system: t.system,
      ticket_project: t.project,
    },
  });
}

let clock = Date.parse('2026-11-01T00:00:00Z');

/** One upload of the test `name` (in src/auth/), passing or failing with `message`. */
export async function upload(
  s: TestServer,
  name: string,
  passed: boolean,
  message = 'Timeout 5000ms exceeded',
): Promise<void> {
  clock += 60_000;
  const result = passed
    ? ''
    : `<failure message="${message}">at login (src/auth/${name}.test.ts:12)</failure>`;
  const report = `<testsuite name="auth"><testcase classname="auth" name="${name}" file="src/auth/${name}.test.ts">${result}</testcase></testsuite>`;
  await ok(s, 'uploadTestResults', {
    repo: REPO,
    org_url_slug: s.org,
    branch: 'main',
    sha: clock.toString(16).padStart(40, '0'),
    started_at: new Date(clock).toISOString(),
    codeowners: CODEOWNERS,
    reports: [{ name: 'junit.xml', content: report }],
  });
}

export async function statusOf(
  s: TestServer,
  name: string,
): Promise<{ id: string; status: string; ticket: string | undefined } | undefined> {
  for (const status of ['FLAKY', 'BROKEN'] as const) {
    const { tests } = (await ok(s, 'listUnhealthyTests', {
      repo: REPO,
      org_url_slug: s.org,
      status,
      page_query: { page_size: 100 },
    })) as {
      tests: { id: string; name: string; ticket?: { html_url: string } }[];
    };
    const t = tests.find((x) => x.name === name);
    if (t) return { id: t.id, status: status.toLowerCase(), ticket: t.ticket?.html_url };
  }
  return undefined;
}

/** Uploads failures (or passes) until the test is unhealthy (or healthy). */
export async function drive(s: TestServer, name: string, to: 'unhealthy' | 'healthy'): Promise<void> {
  for (let i = 0; i < 20; i++) {
    const now = await statusOf(s, name);
    if ((to === 'healthy') === (now === undefined)) return;
    await upload(s, name, to === 'healthy');
  }
  throw new Error(`${name} did not turn ${to}`);
}

export function only(t: TrackerUnderTest): SeenTicket {
  const all = t.tickets();
  expect(all.length, all.map((x) => x.title).join(', ')).toBe(1);
  return all[0];
}
