/**
 * Tickets of flaky and broken tests end to end, on each tracker's emulator (GitHub Issues, GitLab
 * issues, Jira Cloud REST v3 and Data Center REST v2), through a real server over HTTP: a test
 * turning unhealthy opens one ticket (title, status, failure rate, last failures, owners, links)
 * that the test's ticket link shows; healthy again closes it with a comment; unhealthy again
 * reopens it; a ticket a person closed while the test is unhealthy stays closed until the test
 * recovers and turns unhealthy again; and with the tracker down across a server restart, nothing
 * is lost and nothing is opened twice. Every answer of the emulators is checked against the
 * tracker's published description.
 */
import { describe, expect, it, type TestContext } from 'vitest';
import { tempDir } from '../support/tmp.js';
import type { TestServer } from '../support/server.js';
import {
  drive,
  only,
  railyard,
  statusOf,
  ticketsOn,
  until,
  upload,
  type TrackerUnderTest,
} from './flaky-tickets-harness.js';
import { postgresForFile } from '../support/hooks.js';
import { startJiraEmulator } from '../support/jira/index.js';
import { skipWithoutPostgres } from '../support/postgres.js';
import { githubTracker, gitlabTracker, jiraTracker } from './flaky-tickets-trackers.js';

const noPostgres = skipWithoutPostgres();
const postgres = postgresForFile(noPostgres);
type Closable = { close(): Promise<void> };

/**
 * What one test starts, closed (last first) when that test finishes: the tests run side by side
 * (`it.concurrent`; each has its own trackers, servers and data), since most of their time is
 * waiting on the server's delivery retries and on the checks that nothing more happens.
 */
function closedAtEnd(onTestFinished: TestContext['onTestFinished']): Closable[] {
  const open: Closable[] = [];
  onTestFinished(async () => {
    for (const x of open.splice(0).reverse()) await x.close();
  });
  return open;
}

const TRACKERS: Array<[string, () => Promise<TrackerUnderTest>]> = [
  ['GitHub Issues', githubTracker],
  ['GitLab issues', gitlabTracker],
  ['Jira Cloud (REST v3)', () => jiraTracker(3)],
  ['Jira Data Center (REST v2)', () => jiraTracker(2)],
];

describe.concurrent.each(TRACKERS)('flaky-test tickets on %s', (_label, make) => {
  async function setup(open: Closable[]): Promise<{ t: TrackerUnderTest; s: TestServer; dataDir: string }> {
    const t = await make();
    open.push(t);
    const dataDir = await tempDir('railyard-tickets-');
    const s = await railyard(t, dataDir);
    open.push(s);
    await ticketsOn(s, t);
    return { t, s, dataDir };
  }

  it.concurrent(
    'opens one ticket when a test turns broken, closes it with a comment when healthy, reopens it when unhealthy again',
    { timeout: 90_000 },
    async ({ onTestFinished }) => {
      const open = closedAtEnd(onTestFinished);
      const { t, s } = await setup(open);
      await upload(s, 'logs in', false, 'Timeout 5000ms exceeded');
      const first = await until('the ticket', () => t.tickets()[0]);
      expect(first.open).toBe(true);
      expect(first.title).toBe('Broken test: logs in');
      for (const part of [
        'broken',
        'Timeout 5000ms exceeded',
        '@acme/auth-team',
        '1 of 1 runs (100%) failed',
        '/#/flaky/github.com/acme/web/test/',
        'src/auth/logs in.test.ts',
      ])
        expect(first.body).toContain(part);
      // The test's ticket link is the ticket (lists, `flaky show`, exports, dashboard).
      await until('the ticket link', async () => (await statusOf(s, 'logs in'))?.ticket === first.url);

      await drive(s, 'logs in', 'healthy');
      await until('the ticket closed', () => !only(t).open);
      expect(only(t).comments.some((c) => c.includes('healthy again'))).toBe(true);

      await drive(s, 'logs in', 'unhealthy');
      await until('the ticket reopened', () => only(t).open);
      expect(only(t).key).toBe(first.key);
      expect(t.schemaViolations()).toEqual([]);
    },
  );

  it.concurrent(
    'leaves a ticket a person closed while the test is unhealthy closed until the test recovers and turns unhealthy again',
    { timeout: 90_000 },
    async ({ onTestFinished }) => {
      const open = closedAtEnd(onTestFinished);
      const { t, s } = await setup(open);
      await upload(s, 'logs in', false);
      const ticket = await until('the ticket', () => t.tickets()[0]);
      t.closeAsPerson(ticket.key);
      // Broken → flaky: a status change while unhealthy, and the ticket stays closed.
      await upload(s, 'logs in', true);
      expect((await statusOf(s, 'logs in'))?.status).toBe('flaky');
      await drive(s, 'logs in', 'healthy');
      await new Promise((r) => setTimeout(r, 1500));
      expect(only(t).open).toBe(false);
      await drive(s, 'logs in', 'unhealthy');
      await until('the ticket reopened', () => only(t).open);
      expect(t.schemaViolations()).toEqual([]);
    },
  );

  it.concurrent(
    'with the tracker down across a restart: nothing lost, nothing opened twice',
    { timeout: 120_000 },
    async ({ onTestFinished }) => {
      const open = closedAtEnd(onTestFinished);
      const { t, s, dataDir } = await setup(open);
      await upload(s, 'logs in', false);
      await until('the first ticket', () => t.tickets()[0]);
      t.setDown(true);
      await drive(s, 'logs in', 'healthy');
      await upload(s, 'signs up', false);
      await until('a few refused attempts', () => t.refused() >= 3);
      await s.close();
      open.splice(open.indexOf(s), 1);
      const again = await railyard(t, dataDir);
      open.push(again);
      const before = t.refused();
      await until('more refused attempts after the restart', () => t.refused() > before + 1);
      t.setDown(false);
      await until('the first ticket closed and the second opened', () => {
        const all = t.tickets();
        return (
          all.length === 2 &&
          all.some((x) => x.title.endsWith('logs in') && !x.open) &&
          all.some((x) => x.title.endsWith('signs up') && x.open)
        );
      });
      await new Promise((r) => setTimeout(r, 1500));
      const all = t.tickets();
      expect(all.length).toBe(2);
      expect(
        all.find((x) => x.title.endsWith('logs in'))!.comments.filter((c) => c.includes('healthy again'))
          .length,
      ).toBe(1);
      expect(t.schemaViolations()).toEqual([]);
    },
  );
});

describe.concurrent('flaky-test tickets: an answer lost after the tracker opened the ticket', () => {
  it.concurrent(
    'finds the ticket again by its label on the retry instead of opening a second one',
    { timeout: 60_000 },
    async ({ onTestFinished }) => {
      const open = closedAtEnd(onTestFinished);
      const jira = await startJiraEmulator(2, 'WEB');
      open.push(jira);
      const t = await jiraTracker(2);
      open.push(t);
      const s = await railyard(
        { ...t, apiUrl: jira.url, token: jira.token },
        await tempDir('railyard-tickets-'),
      );
      open.push(s);
      await ticketsOn(s, t);
      jira.loseCreateAnswers(1);
      await upload(s, 'logs in', false);
      const link = await until('the ticket link', async () => (await statusOf(s, 'logs in'))?.ticket);
      expect(jira.issues.size).toBe(1);
      const [issue] = jira.issues.values();
      expect(link).toBe(`${jira.url}/browse/${issue.key}`);
      await new Promise((r) => setTimeout(r, 1000));
      expect(jira.issues.size).toBe(1);
      expect(jira.schemaViolations).toEqual([]);
    },
  );
});

describe.concurrent('flaky-test tickets on PostgreSQL', () => {
  it.skipIf(noPostgres).concurrent(
    'open, close across a restart with GitHub down, reopen: one ticket, one closing comment',
    { timeout: 90_000 },
    async ({ onTestFinished }) => {
      const open = closedAtEnd(onTestFinished);
      const t = await githubTracker();
      open.push(t);
      const dataDir = await tempDir('railyard-tickets-');
      const databaseUrl = await postgres().createDatabase();
      const s = await railyard(t, dataDir, databaseUrl);
      open.push(s);
      await ticketsOn(s, t);
      await upload(s, 'logs in', false);
      const first = await until('the ticket', () => t.tickets()[0]);
      await until('the ticket link', async () => (await statusOf(s, 'logs in'))?.ticket === first.url);
      t.setDown(true);
      await drive(s, 'logs in', 'healthy');
      await until('a refused attempt', () => t.refused() >= 2);
      await s.close();
      open.splice(open.indexOf(s), 1);
      const again = await railyard(t, dataDir, databaseUrl);
      open.push(again);
      t.setDown(false);
      await until('the ticket closed', () => !only(t).open);
      await drive(again, 'logs in', 'unhealthy');
      await until('the ticket reopened', () => only(t).open);
      expect(only(t).comments.filter((c) => c.includes('healthy again')).length).toBe(1);
      expect(t.schemaViolations()).toEqual([]);
    },
  );
});
