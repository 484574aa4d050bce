/** Store migration 004 (trust): creates repo_owners, server_secrets. */
import type { Kysely } from 'kysely';

interface Claim {
  repo_key: string;
  org_slug: string;
  created_at: number;
}

/** The tables this migration reads and writes, as they are at this point. */
interface Tables {
  queues: { repo_host: string; repo_owner: string; repo_name: string; org_slug: string; created_at: number };
  flaky_repositories: { repo_key: string; org_slug: string; created_at: number };
  repo_owners: Claim;
}

/**
 * Repositories belong to organisations (`repo_owners`: the organisation that first created a
 * queue for the repository or uploaded tests for it), and the server keeps its secrets
 * (`server_secrets`: the key that seals page tokens per organisation).
 * Existing data: each repository goes to the organisation with its earliest queue or test upload.
 */
export async function up(db: Kysely<Tables>): Promise<void> {
  await db.schema
    .createTable('repo_owners')
    .addColumn('repo_key', 'text', (c) => c.primaryKey())
    .addColumn('org_slug', 'text', (c) => c.notNull().references('organisations.slug'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('server_secrets')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  const queues = await db
    .selectFrom('queues')
    .select(['repo_host', 'repo_owner', 'repo_name', 'org_slug', 'created_at'])
    .execute();
  const flaky = await db
    .selectFrom('flaky_repositories')
    .select(['repo_key', 'org_slug', 'created_at'])
    .execute();
  const claims: Claim[] = [
    ...queues.map((q) => ({
      repo_key: `${q.repo_host}/${q.repo_owner}/${q.repo_name}`.toLowerCase(),
      org_slug: String(q.org_slug),
      created_at: Number(q.created_at),
    })),
    ...flaky.map((f) => ({
      repo_key: String(f.repo_key).toLowerCase(),
      org_slug: String(f.org_slug),
      created_at: Number(f.created_at),
    })),
  ].sort((a, b) => a.created_at - b.created_at);
  const first = new Map<string, Claim>();
  for (const c of claims) if (!first.has(c.repo_key)) first.set(c.repo_key, c);
  const rows = [...first.values()];
  for (let i = 0; i < rows.length; i += 300)
    await db
      .insertInto('repo_owners')
      .values(rows.slice(i, i + 300))
      .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('server_secrets').execute();
  await db.schema.dropTable('repo_owners').execute();
}
