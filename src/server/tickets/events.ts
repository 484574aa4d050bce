/**
 * The ticket work of what one upload's detection changed: for each test whose status changed, one
 * outbox event (type TICKET_EVENT) on its repository's ticket line, in the transaction that stores
 * the change. The event carries what the ticket says that only the server knows here (the test,
 * its status and reason, its owners from CODEOWNERS, the dashboard's links); the tracker is asked,
 * and the last failures read, when it is delivered (src/server/tickets/sync.ts).
 */
import type { TestStatus } from '../../contract/index.js';
import type { KnownCase, MonitorChange } from '../../store/flaky.js';
import { TICKET_EVENT, type OutboxEvent } from '../../store/index.js';
import type { Repository } from '../flaky/repositories.js';
import type { Links } from '../links.js';
import { repoKeyOf } from '../webhooks/events.js';
import { overall, type ChangedTest } from '../webhooks/flaky-events.js';

/** What a ticket delivery carries (the outbox event's payload). */
export interface TicketWork {
  repo_id: string;
  repository: string;
  test_id: string;
  test_seq: number;
  system: 'github' | 'gitlab' | 'jira';
  project: string;
  name: string;
  file: string | null;
  previous: TestStatus;
  status: TestStatus;
  reason: string;
  at: number;
  owners: string[];
  links: { test: string; dashboard: string; history: string };
}

export function ticketEvents(
  links: Links,
  repository: Repository,
  changes: ReadonlyArray<{
    test: ChangedTest & { seq: number };
    before: KnownCase;
    change: MonitorChange;
    at: number;
  }>,
): OutboxEvent[] {
  const { ticket_system: system, ticket_project: project } = repository.settings;
  if (system === 'off') return [];
  const repoKey = repoKeyOf(repository.repo);
  const out: OutboxEvent[] = [];
  for (const { test, before, change, at } of changes) {
    const was = overall(before.rate_status, before.por_until, at);
    const now = overall(change.rateStatus ?? before.rate_status, change.porUntil ?? before.por_until, at);
    if (was === now) continue;
    const work: TicketWork = {
      repo_id: repository.id,
      repository: repoKey,
      test_id: test.id,
      test_seq: test.seq,
      system,
      project,
      name: test.name,
      file: test.file ?? null,
      previous: was,
      status: now,
      reason: change.rateReason ?? change.porReason ?? '',
      at,
      owners: repository.codeowners?.ownersOf(test.file) ?? [],
      links: {
        test: links.test(repository.repo, test),
        dashboard: links.dashboardRepository(repository.repo),
        history: links.dashboardTest(repository.repo, test.id),
      },
    };
    out.push({
      type: TICKET_EVENT,
      orderKey: `ticket:${repository.id}:${test.id}`,
      repoKey,
      payload: { ...work },
    });
  }
  return out;
}
