/**
 * The base of the flaky-test store (src/store/flaky.ts): its database handle, chunked statements,
 * and the repositories' rows (settings, CODEOWNERS). Ingest and reading build on it.
 */
import { sql, type Kysely, type RawBuilder, type SqlBool } from 'kysely';
import type { Repo } from '../contract/index.js';
import type { RepositoryRow } from './flaky-rows.js';
import { chunks, flavourOf, type Flavour, type FlakyStoreOptions } from './flaky-sql.js';
import type { SchemaTables } from './schema.js';
import { writeWebhookEvents, type OutboxEvent } from './webhooks.js';

export class FlakyRepositories {
  protected readonly flavour: Flavour;
  protected readonly pause: () => Promise<void>;

  constructor(
    protected readonly db: Kysely<SchemaTables>,
    protected readonly options: FlakyStoreOptions = {},
  ) {
    this.flavour = flavourOf(db);
    this.pause = options.pause ?? (() => Promise.resolve());
  }

  /** Puts webhook events of `org` in the outbox, in this store's transaction (src/store/webhooks.ts). */
  async writeWebhookEvents(org: string, events: readonly OutboxEvent[]): Promise<void> {
    await writeWebhookEvents(this.db, org, events);
  }

  /**
   * `column IN (seqs)`. On PostgreSQL `= ANY` of one array parameter: the statements an upload runs
   * per 500 tests took 500 parameters each for Kysely to compile, pg to serialize and PostgreSQL to
   * parse (the plan is the same: PostgreSQL reads an IN list as `= ANY` of an array).
   */
  protected seqIn(column: 'test_seq' | 'seq', seqs: readonly number[]): RawBuilder<SqlBool> {
    return this.flavour.rowsPerArray
      ? sql<SqlBool>`${sql.ref(column)} = ANY(${seqs}::bigint[])`
      : sql<SqlBool>`${sql.ref(column)} IN (${sql.join(seqs)})`;
  }

  /** Runs `each` over `items` in chunks of `size`, pausing between chunks. */
  protected async inChunks<T>(
    items: readonly T[],
    size: number,
    each: (chunk: T[]) => Promise<void>,
  ): Promise<void> {
    let first = true;
    for (const chunk of chunks(items, size)) {
      if (!first) await this.pause();
      first = false;
      await each(chunk);
    }
  }
  // ---------------------------------------------------------------------- repositories

  /**
   * The repository; with `lock`, found and locked as `lockRepository` does in one statement (one
   * round trip less while uploads of the repository wait; its row is read as before the lock).
   */
  async findRepository(org: string, key: string, lock = false): Promise<RepositoryRow | null> {
    const row = await this.db
      .selectFrom('flaky_repositories')
      .select(['id', 'org_slug', 'host', 'owner', 'name', 'settings', 'codeowners'])
      .$if(lock && this.flavour.concurrentWriters, (q) =>
        q.select(sql<unknown>`pg_advisory_xact_lock_shared(hashtextextended('flaky:' || id, 0))`.as('locked')),
      )
      .where('org_slug', '=', org)
      .where('repo_key', '=', key)
      .executeTakeFirst();
    if (!row) return null;
    return {
      id: row.id,
      org: row.org_slug,
      repo: { host: row.host, owner: row.owner, name: row.name },
      settings: row.settings,
      codeowners: row.codeowners || null,
    };
  }

  /** Creates the organisation and the repository (default settings) unless they exist. */
  async ensureRepository(org: string, key: string, repo: Repo, id: string, at: number): Promise<void> {
    await this.db
      .insertInto('organisations')
      .values({ slug: org, created_at: at })
      .onConflict((oc) => oc.column('slug').doNothing())
      .execute();
    await this.db
      .insertInto('flaky_repositories')
      .values({
        id,
        org_slug: org,
        repo_key: key,
        host: repo.host.toLowerCase(),
        owner: repo.owner,
        name: repo.name,
        settings: '{}',
        codeowners: null,
        created_at: at,
        updated_at: at,
      })
      .onConflict((oc) => oc.columns(['org_slug', 'repo_key']).doNothing())
      .execute();
  }

  async setRepositorySettings(repoId: string, settings: string, at: number): Promise<void> {
    await this.db
      .updateTable('flaky_repositories')
      .set({ settings, updated_at: at })
      .where('id', '=', repoId)
      .execute();
  }

  /**
   * Stores the repository's CODEOWNERS file unless it is stored already. The comparison is made
   * by the database against the row as it is now (PostgreSQL rechecks it after waiting for a
   * writer), so an unchanged file neither locks the row nor loses to a change made meanwhile.
   */
  async setCodeowners(repoId: string, codeowners: string, at: number): Promise<void> {
    await this.db
      .updateTable('flaky_repositories')
      .set({ codeowners, updated_at: at })
      .where('id', '=', repoId)
      .where('codeowners', 'is distinct from', codeowners)
      .execute();
  }

}
