/**
 * The flaky-test store's repositories (src/store/flaky.ts): their rows, settings and CODEOWNERS,
 * and the shared lock an upload takes on one when it finds it.
 */
import { sql } from 'kysely';
import type { Repo } from '../contract/index.js';
import type { RepositoryRow } from './flaky-rows.js';
import type { FlakyHandle } from './flaky-sql.js';

/** The repositories of the flaky-test service (`store.flaky.repositories`): settings and CODEOWNERS. */
export class FlakyRepositories {
  constructor(private readonly h: FlakyHandle) {}

  // ---------------------------------------------------------------------- repositories

  /**
   * The repository; with `lock`, found and locked as `lockRepository` does in one statement (one
   * round trip less while uploads of the repository wait; its row is read as before the lock).
   */
  async findRepository(org: string, key: string, lock = false): Promise<RepositoryRow | null> {
    const row = await this.h.db
      .selectFrom('flaky_repositories')
      .select(['id', 'org_slug', 'host', 'owner', 'name', 'settings', 'codeowners'])
      .$if(lock && this.h.flavour.concurrentWriters, (q) =>
        q.select(
          sql<unknown>`pg_advisory_xact_lock_shared(hashtextextended('flaky:' || id, 0))`.as('locked'),
        ),
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
    await this.h.db
      .insertInto('organisations')
      .values({ slug: org, created_at: at })
      .onConflict((oc) => oc.column('slug').doNothing())
      .execute();
    await this.h.db
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
    await this.h.db
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
    await this.h.db
      .updateTable('flaky_repositories')
      .set({ codeowners, updated_at: at })
      .where('id', '=', repoId)
      .where('codeowners', 'is distinct from', codeowners)
      .execute();
  }
}
