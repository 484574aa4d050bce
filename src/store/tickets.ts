/**
 * Tickets of unhealthy tests (`store.webhooks.tickets`, and FlakyStore's `tickets` inside an
 * upload's or a settings change's transaction): the `flaky_tickets` rows, the delivery line of a
 * repository's tickets in the webhook outbox (an endpoint of kind `ticket`, one per repository,
 * never listed among the organisation's webhooks), the last failures a ticket quotes, and the
 * link a test shows (`test_cases.ticket`, the field linkTicketToTestCase sets).
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import type { SchemaTables } from './schema.js';

type Db = Kysely<SchemaTables> | Transaction<SchemaTables>;

/** The outbox event type of ticket work; only ticket lines receive it, and they receive nothing else. */
export const TICKET_EVENT = 'railyard.ticket';

export type TicketState = 'creating' | 'open' | 'closed';

export interface TicketRow {
  repoId: string;
  testId: string;
  system: string;
  project: string;
  key: string | null;
  url: string | null;
  state: TicketState;
  creatingAt: number | null;
  openedAt: number | null;
  closedAt: number | null;
}

export interface LastFailure {
  at: number;
  prNumber: number | null;
  message: string | null;
}

const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));

/** Whether an endpoint takes an event of `type`: ticket work goes to ticket lines only, and they take nothing else. */
export const onTicketLine = (e: { kind: string }, type: string) =>
  (e.kind === 'ticket') === (type === TICKET_EVENT);

/** The id of a repository's ticket line. */
export const ticketLineId = (repoId: string) => `tickets_${repoId}`;

export class TicketStore {
  constructor(private readonly db: Db) {}

  /**
   * Creates, points or switches a repository's ticket line: enabled while tickets are on. Work
   * already waiting in it goes out at once when it is enabled again.
   */
  async setLine(org: string, repoId: string, repoKey: string, url: string, enabled: boolean): Promise<void> {
    const id = ticketLineId(repoId);
    const now = Date.now();
    const state = enabled ? 'enabled' : 'disabled';
    const found = await this.db
      .selectFrom('webhook_endpoints')
      .select('id')
      .where('id', '=', id)
      .executeTakeFirst();
    if (found)
      await this.db
        .updateTable('webhook_endpoints')
        .set({
          url,
          state,
          disabled_reason: enabled ? null : 'tickets off',
          failing_since: null,
          repos: JSON.stringify([repoKey]),
          updated_at: now,
        })
        .where('id', '=', id)
        .execute();
    else {
      const known = await this.db
        .selectFrom('organisations')
        .select('slug')
        .where('slug', '=', org)
        .executeTakeFirst();
      if (!known) await this.db.insertInto('organisations').values({ slug: org, created_at: now }).execute();
      await this.db
        .insertInto('webhook_endpoints')
        .values({
          id,
          org_slug: org,
          url,
          kind: 'ticket',
          description: 'tickets of unhealthy tests',
          events: JSON.stringify([TICKET_EVENT]),
          repos: JSON.stringify([repoKey]),
          secret: '',
          previous_secret: null,
          previous_secret_until: null,
          state,
          disabled_reason: enabled ? null : 'tickets off',
          failing_since: null,
          created_at: now,
          updated_at: now,
        })
        .execute();
    }
    if (enabled)
      await this.db
        .updateTable('webhook_deliveries')
        .set({ next_at: now })
        .where('endpoint_id', '=', id)
        .where('state', '=', 'pending')
        .execute();
  }

  async find(repoId: string, testId: string): Promise<TicketRow | undefined> {
    const r = await this.db
      .selectFrom('flaky_tickets')
      .selectAll()
      .where('repo_id', '=', repoId)
      .where('test_id', '=', testId)
      .executeTakeFirst();
    return (
      r && {
        repoId: r.repo_id,
        testId: r.test_id,
        system: r.system,
        project: r.project,
        key: r.ticket_key,
        url: r.url,
        state: r.state as TicketState,
        creatingAt: num(r.creating_at),
        openedAt: num(r.opened_at),
        closedAt: num(r.closed_at),
      }
    );
  }

  /** Stores what is known of a test's ticket (the whole row). */
  async save(t: TicketRow): Promise<void> {
    const row = {
      repo_id: t.repoId,
      test_id: t.testId,
      system: t.system,
      project: t.project,
      ticket_key: t.key,
      url: t.url,
      state: t.state,
      creating_at: t.creatingAt,
      opened_at: t.openedAt,
      closed_at: t.closedAt,
      updated_at: Date.now(),
    };
    await this.db
      .insertInto('flaky_tickets')
      .values(row)
      .onConflict((oc) => oc.columns(['repo_id', 'test_id']).doUpdateSet(row))
      .execute();
  }

  /** The test shows this ticket (the field linkTicketToTestCase sets). */
  async linkTest(repoId: string, testId: string, url: string): Promise<void> {
    await this.db
      .updateTable('test_cases')
      .set({ ticket: url })
      .where('repo_id', '=', repoId)
      .where('id', '=', testId)
      .execute();
  }

  /** The latest failures of a test, newest first. */
  async lastFailures(testSeq: number, limit: number): Promise<LastFailure[]> {
    const rows = await this.db
      .selectFrom('flaky_failures')
      .select(['at', 'pr_number', 'failure_line'])
      .where('test_seq', '=', testSeq)
      .orderBy('at', 'desc')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ at: Number(r.at), prNumber: num(r.pr_number), message: r.failure_line }));
  }

  /** How many tickets of a repository are open (for figures and tests). */
  async countOpen(repoId: string): Promise<number> {
    const r = await this.db
      .selectFrom('flaky_tickets')
      .select(sql<number>`count(*)`.as('n'))
      .where('repo_id', '=', repoId)
      .where('state', '=', 'open')
      .executeTakeFirst();
    return Number(r?.n ?? 0);
  }
}
