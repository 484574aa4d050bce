/**
 * What a forge driver has acted on (migration 011): webhook deliveries and command comments,
 * recorded so each acts once, also across restarts and replicas (the primary key decides between
 * concurrent claims). Bounded per repository and kind: past `keep` rows the oldest are dropped.
 */
import type { Kysely } from 'kysely';
import type { SchemaTables } from './schema.js';

export type ForgeEventKind = 'delivery' | 'comment';

export class ForgeEventsStore {
  private readonly claims = new Map<string, number>();

  constructor(
    private readonly db: Kysely<SchemaTables>,
    /** Rows kept per (forge, repository, kind). */
    private readonly keep = 10_000,
  ) {}

  /**
   * Records `key` as handled; true when this call recorded it (act on it), false when it was
   * recorded before (a redelivery or a replay: do nothing).
   */
  async claim(forge: string, repoKey: string, kind: ForgeEventKind, key: string, at = Date.now()): Promise<boolean> {
    const result = await this.db
      .insertInto('forge_events')
      .values({ forge, repo_key: repoKey, kind, key: key.slice(0, 200), at })
      .onConflict((oc) => oc.columns(['forge', 'repo_key', 'kind', 'key']).doNothing())
      .executeTakeFirst();
    const inserted = Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
    if (inserted) await this.bound(forge, repoKey, kind);
    return inserted;
  }

  /** Every `keep / 10` claims of a repository and kind, rows past the newest `keep` are deleted. */
  private async bound(forge: string, repoKey: string, kind: ForgeEventKind): Promise<void> {
    const id = `${forge}\n${repoKey}\n${kind}`;
    const n = (this.claims.get(id) ?? 0) + 1;
    this.claims.set(id, n);
    if (n % Math.max(1, Math.floor(this.keep / 10)) !== 0) return;
    const oldest = await this.db
      .selectFrom('forge_events')
      .select('at')
      .where('forge', '=', forge)
      .where('repo_key', '=', repoKey)
      .where('kind', '=', kind)
      .orderBy('at', 'desc')
      .offset(this.keep)
      .limit(1)
      .executeTakeFirst();
    if (!oldest) return;
    await this.db
      .deleteFrom('forge_events')
      .where('forge', '=', forge)
      .where('repo_key', '=', repoKey)
      .where('kind', '=', kind)
      .where('at', '<=', oldest.at)
      .execute();
  }

  /** How many rows a repository holds of a kind (tests, bounds). */
  async count(forge: string, repoKey: string, kind: ForgeEventKind): Promise<number> {
    const row = await this.db
      .selectFrom('forge_events')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('forge', '=', forge)
      .where('repo_key', '=', repoKey)
      .where('kind', '=', kind)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }
}
