/**
 * The flaky-test tables behind one typed repository (`store.flaky`): every SQL statement of the
 * flaky-test service is in its parts, each over one FlakyHandle (flaky-sql.ts) — `repositories`
 * (flaky-repositories.ts), `ingest` (what an upload writes and detection reads, flaky-ingest.ts),
 * `cases` (what the API reads and sets, flaky-cases.ts) and `lapses` (overrides whose end has come,
 * flaky-lapses.ts). Callers speak in rows and sets of tests (flaky-rows.ts); the statements a
 * database needs of its own (bulk-insert sizes, RETURNING, upserts) are chosen in one place,
 * `flavourOf`.
 */
import type { Kysely } from 'kysely';
import { FlakyCases } from './flaky-cases.js';
import { FlakyIngest } from './flaky-ingest.js';
import { FlakyLapses } from './flaky-lapses.js';
import { FlakyRepositories } from './flaky-repositories.js';
import { FlakyHandle, type FlakyStoreOptions } from './flaky-sql.js';
import type { SchemaTables } from './schema.js';
import { TicketStore } from './tickets.js';
import { writeWebhookEvents, type OutboxEvent } from './webhooks.js';

export type * from './flaky-rows.js';
export type { DueLapse } from './flaky-lapses.js';
export type { FlakyStoreOptions } from './flaky-sql.js';

export class FlakyStore {
  readonly repositories: FlakyRepositories;
  readonly ingest: FlakyIngest;
  readonly cases: FlakyCases;
  /** Quarantine overrides whose end has come: those not announced yet, and the mark that they were. */
  readonly lapses: FlakyLapses;
  /** Tickets of unhealthy tests: their rows and each repository's delivery line. */
  readonly tickets: TicketStore;
  private readonly handle: FlakyHandle;

  constructor(db: Kysely<SchemaTables>, options: FlakyStoreOptions = {}) {
    this.handle = new FlakyHandle(db, options);
    this.repositories = new FlakyRepositories(this.handle);
    this.ingest = new FlakyIngest(this.handle);
    this.cases = new FlakyCases(this.handle);
    this.lapses = new FlakyLapses(this.handle);
    this.tickets = new TicketStore(this.handle.db);
  }

  /** Runs `work` in one transaction: all of it is stored, or (if it throws) none. */
  transaction<T>(work: (store: FlakyStore) => Promise<T>): Promise<T> {
    return this.handle.db.transaction().execute((trx) => work(new FlakyStore(trx, this.handle.options)));
  }

  /** Puts webhook events of `org` in the outbox, in this store's transaction (src/store/webhooks.ts). */
  async writeWebhookEvents(org: string, events: readonly OutboxEvent[]): Promise<void> {
    await writeWebhookEvents(this.handle.db, org, events);
  }
}
