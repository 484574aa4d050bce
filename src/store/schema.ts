import type { ColumnType, Generated } from 'kysely';

/**
 * The tables as Kysely sees them. Times are epoch milliseconds (`bigint` columns, so PostgreSQL
 * may hand them back as strings: read them through `Number()`); JSON is stored as text.
 */
type Millis = ColumnType<number, number, number>;

export interface OrganisationsTable {
  slug: string;
  created_at: Millis;
}

export interface ApiTokensTable {
  /** SHA-256 of the token, hex. The token itself is never stored. */
  token_hash: string;
  org_slug: string;
  created_at: Millis;
}

export interface QueuesTable {
  id: string;
  org_slug: string;
  repo_host: string;
  repo_owner: string;
  repo_name: string;
  branch: string;
  /** The engine's QueueConfig as JSON. */
  config: string;
  next_seq: number;
  created_at: Millis;
  updated_at: Millis;
}

export interface PullRequestsTable {
  /** The engine's Entry id (one row per submission). */
  id: string;
  queue_id: string;
  pr_number: number;
  state: string;
  seq: number;
  head_sha: string;
  head_branch: string;
  state_changed_at: Millis;
  concluded_at: ColumnType<number | null, number | null, number | null>;
  /** The whole Entry as JSON. */
  data: string;
}

export interface TestRunsTable {
  id: string;
  queue_id: string;
  status: string;
  started_at: Millis;
  /** The whole TestRun as JSON. */
  data: string;
}

export interface ImpactedTargetsTable {
  queue_id: string;
  pr_number: number;
  head_sha: string;
  /** JSON: a list of targets or the string "ALL". */
  targets: string;
  updated_at: Millis;
}

export interface SchemaTables {
  organisations: OrganisationsTable;
  api_tokens: ApiTokensTable;
  queues: QueuesTable;
  pull_requests: PullRequestsTable;
  test_runs: TestRunsTable;
  impacted_targets: ImpactedTargetsTable;
}

export type { Generated };
