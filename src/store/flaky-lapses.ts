/**
 * The flaky-test store's lapsed quarantine overrides (`store.flaky.lapses`): the overrides whose
 * end has come and was not announced yet, and the mark that says it was, set by a conditional
 * update so that two servers on one database (or two sweeps on one SQLite file) announce each end
 * once (src/server/flaky/lapses.ts writes the event in the same transaction).
 */
import { sql, type SqlBool } from 'kysely';
import type { QuarantineOverride } from '../flaky/quarantine.js';
import type { CaseRow, RepositoryRow } from './flaky-rows.js';
import { toCaseRow, type FlakyHandle } from './flaky-sql.js';

/**
 * The condition of the partial index test_cases_override_lapse (migration 022), written literally:
 * SQLite uses a partial index only when the query's WHERE clause contains its condition.
 */
const UNANNOUNCED_END = sql<SqlBool>`override_until IS NOT NULL AND override_lapse_sent IS NULL`;

/** A test whose override's end has come, not yet announced, with its repository. */
export interface DueLapse {
  test: CaseRow;
  repository: RepositoryRow;
}

export class FlakyLapses {
  constructor(private readonly h: FlakyHandle) {}

  /**
   * The overrides whose end is at or before `now` and whose lapse was not announced, the earliest
   * end first, at most `limit`, each with its repository. Read through test_cases_override_lapse,
   * which holds only the overrides with an end not announced.
   */
  async due(now: number, limit: number): Promise<DueLapse[]> {
    const tests = await this.h.db
      .selectFrom('test_cases')
      .selectAll()
      .where(UNANNOUNCED_END)
      .where('override_until', '<=', now)
      .where('override', 'is not', null)
      .orderBy('override_until')
      .orderBy('id')
      .limit(limit)
      .execute();
    if (tests.length === 0) return [];
    const repoIds = [...new Set(tests.map((t) => t.repo_id))];
    const repositories = await this.h.db
      .selectFrom('flaky_repositories')
      .select(['id', 'org_slug', 'host', 'owner', 'name', 'settings', 'codeowners'])
      .where('id', 'in', repoIds)
      .execute();
    const byId = new Map<string, RepositoryRow>(
      repositories.map((r) => [
        r.id,
        {
          id: r.id,
          org: r.org_slug,
          repo: { host: r.host, owner: r.owner, name: r.name },
          settings: r.settings,
          codeowners: r.codeowners || null,
        },
      ]),
    );
    const out: DueLapse[] = [];
    for (const test of tests) {
      const repository = byId.get(test.repo_id);
      if (repository) out.push({ test: toCaseRow(test), repository });
    }
    return out;
  }

  /**
   * Marks the lapse of test `id`'s override `value`, ending `until`, announced: true when this call
   * marked it; false when it was marked already (another server, another sweep) or the override is
   * no longer the one that ended (set again meanwhile). The database compares the row as it is now
   * (PostgreSQL re-reads it after waiting for the transaction that holds it), so of two callers at
   * once exactly one gets true.
   */
  async claim(id: string, value: QuarantineOverride, until: number): Promise<boolean> {
    const result = await this.h.db
      .updateTable('test_cases')
      .set({ override_lapse_sent: until })
      .where('id', '=', id)
      .where('override', '=', value)
      .where('override_until', '=', until)
      .where('override_lapse_sent', 'is', null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }
}
