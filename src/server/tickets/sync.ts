/**
 * One ticket delivery (the deliverer's work for a delivery of a ticket line): brings the test's
 * ticket in line with the status change the event carries.
 * - Turned flaky or broken from healthy: the ticket is opened; one closed within REOPEN_WITHIN_MS
 *   is reopened instead, one still open gets a comment.
 * - Healthy again: an open ticket gets a comment and is closed. One a person closed meanwhile stays
 *   closed, and is reopened (or a new one opened) only when the test turns unhealthy again.
 * - Flaky to broken or back: a comment on an open ticket; a closed one stays closed. A test with no
 *   ticket yet (tickets turned on while it was unhealthy) gets one.
 * Opening is the one step not safe to repeat: the row is marked `creating` before the tracker is
 * asked, and a delivery that finds it so (a crash, a timeout whose request went through) looks for
 * the ticket by its marker before opening another. The ticket's address becomes the test's ticket
 * link (what `flaky show`, the lists, the exports and the dashboard show).
 */
import { createHash } from 'node:crypto';
import type { TicketRow, TicketStore } from '../../store/index.js';
import type { WebhookTransport } from '../webhooks/ssrf.js';
import { ticketApiUrl, type TicketOptions } from './config.js';
import type { TicketWork } from './events.js';
import { JiraTracker } from './jira.js';
import { GitHubTracker, GitLabTracker, TrackerError, type Tracker } from './tracker.js';

/** A ticket closed this recently is reopened rather than a new one opened. */
export const REOPEN_WITHIN_MS = 30 * 24 * 3_600_000;
/** Failures quoted in a new ticket. */
const LAST_FAILURES = 5;

export function trackerFor(
  transport: WebhookTransport,
  work: Pick<TicketWork, 'system' | 'project'>,
  options: TicketOptions,
): Tracker {
  const token = options.token;
  if (!token)
    throw new TrackerError(
      'the server has no ticket token (--ticket-token-file or RAILYARD_TICKET_TOKEN)',
      null,
    );
  const apiUrl = ticketApiUrl(work.system, options);
  if (!apiUrl) throw new TrackerError(`${work.system} tickets need the server flag --ticket-api-url`, null);
  if (work.system === 'github') return new GitHubTracker(transport, apiUrl, work.project, token);
  if (work.system === 'gitlab') return new GitLabTracker(transport, apiUrl, work.project, token);
  return new JiraTracker(transport, apiUrl, work.project, token);
}

/** Hidden in a ticket, or its label in Jira: names the test, so the ticket is found again. */
export function markerOf(work: Pick<TicketWork, 'repo_id' | 'test_id'>): string {
  return `railyard-test-${createHash('sha256').update(`${work.repo_id}/${work.test_id}`).digest('hex').slice(0, 16)}`;
}

const oneLine = (s: string, max: number) => {
  const line = s.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
};

export function ticketTitle(work: TicketWork): string {
  return oneLine(`${work.status === 'broken' ? 'Broken' : 'Flaky'} test: ${work.name}`, 200);
}

export function ticketBody(
  work: TicketWork,
  failures: ReadonlyArray<{ at: number; prNumber: number | null; message: string | null }>,
): string {
  const lines = [
    `The test **${oneLine(work.name, 500)}** in ${work.repository} is **${work.status}** (was ${work.previous}).`,
    '',
    `- Status: ${work.status}`,
    `- Failure rate: ${work.reason || 'not measured (pass-on-retry)'}`,
    `- Owners (CODEOWNERS): ${work.owners.length ? work.owners.join(', ') : 'none'}`,
  ];
  if (work.file) lines.push(`- File: ${work.file}`);
  lines.push('', 'Last failures:');
  if (!failures.length) lines.push('- none stored');
  for (const f of failures)
    lines.push(
      `- ${new Date(f.at).toISOString()}${f.prNumber !== null ? ` (PR #${f.prNumber})` : ''}: ${f.message ? oneLine(f.message, 300) : 'no message'}`,
    );
  lines.push(
    '',
    `Dashboard: ${work.links.dashboard}`,
    `History of the test: ${work.links.history}`,
    `Test: ${work.links.test}`,
  );
  lines.push('', 'Opened by Railyard; it closes this ticket when the test is healthy again.');
  return lines.join('\n');
}

/** What the delivery log shows of a ticket delivery. */
export interface TicketOutcome {
  status: number;
  excerpt: string;
}

export async function syncTicket(
  store: TicketStore,
  tracker: Tracker,
  work: TicketWork,
  now: number,
): Promise<TicketOutcome> {
  const marker = markerOf(work);
  const found = await store.find(work.repo_id, work.test_id);
  // A ticket of another tracker or project (the settings changed since) is not this one's.
  let row: TicketRow | undefined =
    found && found.system === work.system && found.project === work.project ? found : undefined;
  if (row?.state === 'creating') {
    const made = await tracker.find(marker, row.creatingAt ?? now);
    row = made
      ? { ...row, key: made.key, url: made.url, state: 'open', openedAt: row.creatingAt }
      : { ...row, state: row.key ? 'closed' : 'creating' };
    if (made) {
      await store.save(row);
      await store.linkTest(work.repo_id, work.test_id, made.url);
    } else if (!row.key) row = undefined;
  }
  const done = (excerpt: string): TicketOutcome => ({ status: 200, excerpt });

  if (work.status === 'healthy') {
    if (!row?.key) return done('no ticket to close');
    const remote = await tracker.get(row.key);
    if (remote.open) {
      await tracker.comment(
        row.key,
        `The test is healthy again: ${work.reason || 'no problems detected'}. Closed by Railyard.`,
      );
      await tracker.close(row.key);
      await store.save({ ...row, state: 'closed', closedAt: now });
      return done(`closed ${row.key}`);
    }
    await store.save({ ...row, state: 'closed', closedAt: remote.closedAt ?? now });
    return done(`${row.key} was closed already`);
  }

  if (row?.key && work.previous !== 'healthy') {
    // Flaky ↔ broken: the ticket says so if it is open; one a person closed stays closed.
    const remote = await tracker.get(row.key);
    if (!remote.open) {
      await store.save({ ...row, state: 'closed', closedAt: remote.closedAt ?? row.closedAt ?? now });
      return done(`${row.key} stays closed (closed while the test was unhealthy)`);
    }
    await tracker.comment(row.key, `The test is now ${work.status}: ${work.reason}`);
    await store.save({ ...row, state: 'open' });
    return done(`commented on ${row.key}`);
  }

  if (row?.key) {
    const remote = await tracker.get(row.key);
    if (remote.open) {
      await tracker.comment(row.key, `The test is ${work.status} again: ${work.reason}`);
      await store.save({ ...row, state: 'open' });
      await store.linkTest(work.repo_id, work.test_id, remote.url);
      return done(`${row.key} is open: commented`);
    }
    const closedAt = remote.closedAt ?? row.closedAt ?? 0;
    if (now - closedAt <= REOPEN_WITHIN_MS) {
      await tracker.comment(
        row.key,
        `The test is ${work.status} again: ${work.reason}. Reopened by Railyard.`,
      );
      await tracker.reopen(row.key);
      await store.save({ ...row, state: 'open', openedAt: now, closedAt: null });
      await store.linkTest(work.repo_id, work.test_id, remote.url);
      return done(`reopened ${row.key}`);
    }
  }

  const failures = await store.lastFailures(work.test_seq, LAST_FAILURES);
  const creating: TicketRow = {
    repoId: work.repo_id,
    testId: work.test_id,
    system: work.system,
    project: work.project,
    key: row?.key ?? null,
    url: row?.url ?? null,
    state: 'creating',
    creatingAt: now,
    openedAt: null,
    closedAt: row?.closedAt ?? null,
  };
  await store.save(creating);
  const made = await tracker.create({ title: ticketTitle(work), body: ticketBody(work, failures), marker });
  await store.save({
    ...creating,
    key: made.key,
    url: made.url,
    state: 'open',
    openedAt: now,
    closedAt: null,
  });
  await store.linkTest(work.repo_id, work.test_id, made.url);
  return done(`opened ${made.key} ${made.url}`);
}
