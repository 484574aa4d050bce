/**
 * The accounts in the store: organisations, API tokens (kept as hashes), repository owners and
 * server secrets. One part of the Store (store.ts), over its database handle.
 */
import { createHash } from 'node:crypto';
import type { Transaction } from 'kysely';
import {
  ALL_PERMISSIONS,
  formatPermissions,
  parsePermissions,
  type Permission,
} from '../contract/permissions.js';
import type { Db, SchemaTables } from './schema.js';

/** SHA-256 hex of an API token: the only form in which tokens are stored. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** A token as the server checks it: its hash, organisation and permissions. */
export interface StoredToken {
  hash: string;
  org: string;
  permissions: Permission[];
  /** What the token is for (`token create --label`): the owner of what it sets, e.g. a quarantine. */
  label: string | null;
}

/** An API token as `railyard token list` shows it (never the token itself). */
export interface TokenInfo {
  /** The first 12 hex digits of its SHA-256: what `railyard token revoke` takes. */
  id: string;
  org: string;
  label: string | null;
  createdAt: number;
  lastUsedAt: number | null;
  /** What it may change (every permission for a token made before permissions existed). */
  permissions: Permission[];
}

/** Characters of the hash that name a token. */
export const TOKEN_ID_LENGTH = 12;

function tokenInfo(r: {
  token_hash: string;
  org_slug: string;
  label: string | null;
  created_at: number;
  last_used_at: number | null;
  permissions: string | null;
}): TokenInfo {
  return {
    id: r.token_hash.slice(0, TOKEN_ID_LENGTH),
    org: r.org_slug,
    label: r.label,
    createdAt: Number(r.created_at),
    lastUsedAt: r.last_used_at === null ? null : Number(r.last_used_at),
    permissions: parsePermissions(r.permissions),
  };
}

/** Creates the organisation `slug` inside `trx` unless it exists (queues and tokens belong to one). */
export async function ensureOrganisationIn(trx: Transaction<SchemaTables>, slug: string): Promise<void> {
  const found = await trx
    .selectFrom('organisations')
    .select('slug')
    .where('slug', '=', slug)
    .executeTakeFirst();
  if (!found) await trx.insertInto('organisations').values({ slug, created_at: Date.now() }).execute();
}

/** The accounts part of the store (`store.accounts`): organisations, API tokens, repository owners, server secrets. */
export class AccountStore {
  constructor(
    private readonly db: Db,
    /**
     * SQLite: listTokens at once, without waiting for a transaction in progress on the connection.
     * The server re-reads tokens whenever another connection committed (dataVersion), which the
     * webhook deliverer's thread does many times a second; through the connection's queue every
     * such request waited behind the queue's write in progress.
     */
    readonly listTokensNow?: () => StoredToken[],
  ) {}

  // ------------------------------------------------------------ organisations and tokens

  /**
   * Stores the hash of `token` for `org` (creating the organisation) with what it may change
   * (default: every permission); false if it was already stored.
   */
  async addToken(
    org: string,
    token: string,
    label?: string,
    permissions: readonly Permission[] = ALL_PERMISSIONS,
  ): Promise<boolean> {
    const hash = hashToken(token);
    return this.db.transaction().execute(async (trx) => {
      await ensureOrganisationIn(trx, org);
      const existing = await trx
        .selectFrom('api_tokens')
        .select('org_slug')
        .where('token_hash', '=', hash)
        .executeTakeFirst();
      if (existing) {
        if (existing.org_slug !== org)
          throw new Error(`that token already belongs to organisation "${existing.org_slug}"`);
        return false;
      }
      await trx
        .insertInto('api_tokens')
        .values({
          token_hash: hash,
          org_slug: org,
          created_at: Date.now(),
          label: label ?? null,
          last_used_at: null,
          permissions: formatPermissions(permissions),
        })
        .execute();
      return true;
    });
  }

  async listTokens(): Promise<StoredToken[]> {
    const rows = await this.db
      .selectFrom('api_tokens')
      .select(['token_hash', 'org_slug', 'permissions', 'label'])
      .execute();
    return rows.map((r) => ({
      hash: r.token_hash,
      org: r.org_slug,
      permissions: parsePermissions(r.permissions),
      label: r.label,
    }));
  }

  // ------------------------------------------------------------ repository owners and secrets

  /** Every recorded repository owner: `host/owner/name` (lower case) → organisation. */
  async loadRepoOwners(): Promise<Map<string, string>> {
    const rows = await this.db.selectFrom('repo_owners').select(['repo_key', 'org_slug']).execute();
    return new Map(rows.map((r) => [r.repo_key, r.org_slug]));
  }

  /**
   * Records `org` as the owner of `repoKey` unless the repository already has one; returns the
   * owner either way (the first claim wins, also between concurrent claims).
   */
  async claimRepo(org: string, repoKey: string): Promise<string> {
    return this.db.transaction().execute(async (trx) => {
      await ensureOrganisationIn(trx, org);
      await trx
        .insertInto('repo_owners')
        .values({ repo_key: repoKey, org_slug: org, created_at: Date.now() })
        .onConflict((oc) => oc.column('repo_key').doNothing())
        .execute();
      const row = await trx
        .selectFrom('repo_owners')
        .select('org_slug')
        .where('repo_key', '=', repoKey)
        .executeTakeFirstOrThrow();
      return row.org_slug;
    });
  }

  /** The secret named `name`, created from `generate()` on first use and kept from then on. */
  async serverSecret(name: string, generate: () => string): Promise<string> {
    await this.db
      .insertInto('server_secrets')
      .values({ name, value: generate(), created_at: Date.now() })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
    const row = await this.db
      .selectFrom('server_secrets')
      .select('value')
      .where('name', '=', name)
      .executeTakeFirstOrThrow();
    return row.value;
  }

  /** Every token (of `org`, if given), oldest first, without the secret. */
  async describeTokens(org?: string): Promise<TokenInfo[]> {
    let query = this.db
      .selectFrom('api_tokens')
      .select(['token_hash', 'org_slug', 'label', 'created_at', 'last_used_at', 'permissions'])
      .orderBy('created_at')
      .orderBy('token_hash');
    if (org !== undefined) query = query.where('org_slug', '=', org);
    return (await query.execute()).map(tokenInfo);
  }

  /**
   * Deletes the token whose SHA-256 (hex) starts with `hashPrefix` (and belongs to `org`, if
   * given). Deletes nothing when the prefix names several tokens. Answers what matched.
   */
  async revokeToken(hashPrefix: string, org?: string): Promise<TokenInfo[]> {
    if (!/^[0-9a-f]+$/.test(hashPrefix)) throw new Error(`not a token id: "${hashPrefix}"`);
    return this.db.transaction().execute(async (trx) => {
      let query = trx
        .selectFrom('api_tokens')
        .select(['token_hash', 'org_slug', 'label', 'created_at', 'last_used_at', 'permissions'])
        .where('token_hash', 'like', `${hashPrefix}%`);
      if (org !== undefined) query = query.where('org_slug', '=', org);
      const rows = await query.execute();
      if (rows.length === 1)
        await trx.deleteFrom('api_tokens').where('token_hash', '=', rows[0].token_hash).execute();
      return rows.map(tokenInfo);
    });
  }

  /** Records that the token with this hash was used at `at`. */
  async touchToken(hash: string, at: number): Promise<void> {
    await this.db
      .updateTable('api_tokens')
      .set({ last_used_at: at })
      .where('token_hash', '=', hash)
      .execute();
  }
}
