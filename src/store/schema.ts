/** The tables as Kysely sees them (every column of every migration). */
import type { ColumnType, Generated, Kysely } from 'kysely';

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
  /** What the token is for, as given to `railyard token create --label` (004). */
  label: string | null;
  /** When it last authenticated a request, to the minute (004). */
  last_used_at: Millis | null;
  /** What it may change: permission names joined by commas, '' read only, NULL every one (016). */
  permissions: string | null;
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
  /** Bumped by every committed step: a replica whose copy has another version reloads it. */
  version: Generated<number>;
  /** When the queue was deleted (012): its row and history stay, and a re-create brings them back. Null while it exists. */
  deleted_at: ColumnType<number | null, number | null | undefined, number | null>;
  /** When the queue entered its current state (019); null only for a queue created before and not yet changed. */
  state_since: ColumnType<number | null, number | null | undefined, number | null>;
}

/** Which replica drives a queue (PostgreSQL with several replicas), until when, and its fencing number. */
export interface QueueLeasesTable {
  queue_id: string;
  holder: ColumnType<string, string | undefined, string>;
  fence: ColumnType<number, number | undefined, number>;
  expires_at: ColumnType<number, number | undefined, number>;
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

type Nullable<T> = ColumnType<T | null, T | null | undefined, T | null>;

/** One state change of one pull request (queue entry), in `seq` order. */
export interface PrTransitionsTable {
  seq: number;
  queue_id: string;
  entry_id: string;
  pr_number: number;
  from_state: Nullable<string>;
  state: string;
  reason: Nullable<string>;
  test_run_id: Nullable<string>;
  /** For failures: what went wrong, for people. */
  detail: Nullable<string>;
  at: Millis;
}

export interface FlakyRepositoriesTable {
  id: string;
  org_slug: string;
  /** `host/owner/name`, lower case. */
  repo_key: string;
  host: string;
  owner: string;
  name: string;
  /** RepositorySettings as JSON. */
  settings: string;
  codeowners: Nullable<string>;
  created_at: Millis;
  updated_at: Millis;
}

export interface TestCasesTable {
  id: string;
  /** Arrival order, from flaky_counters: results refer to the test by it. */
  seq: number;
  repo_id: string;
  name: string;
  file: Nullable<string>;
  classname: Nullable<string>;
  parent: Nullable<string>;
  variant: string;
  first_seen_at: Millis;
  /** The failure-rate monitor: healthy | flaky | broken. */
  rate_status: string;
  rate_reason: Nullable<string>;
  rate_changed_at: Nullable<number>;
  /** The pass-on-retry monitor: active from por_since until por_until. */
  por_since: Nullable<number>;
  por_until: Nullable<number>;
  por_reason: Nullable<string>;
  /** ALWAYS_QUARANTINE | NEVER_QUARANTINE, or null (the repository's settings decide). */
  override: Nullable<string>;
  override_at: Nullable<number>;
  /** When the override lapses by itself (null: never); the owner (a token's label) and reason of it. */
  override_until: Nullable<number>;
  override_owner: Nullable<string>;
  override_reason: Nullable<string>;
  /** The end (override_until) whose lapse was announced; null while not announced (src/store/flaky-lapses.ts). */
  override_lapse_sent: Nullable<number>;
  ticket: Nullable<string>;
}

export interface TestUploadsTable {
  id: string;
  repo_id: string;
  branch: string;
  sha: string;
  pr_number: Nullable<number>;
  job: Nullable<string>;
  attempt: number;
  variant: string;
  started_at: Millis;
  created_at: Millis;
  /** UploadTestResultsResponse as JSON. */
  counts: string;
  excluded: number;
  /** Arrival order, from flaky_counters; results refer to the upload by it. */
  seq: number;
  /** The earliest and latest time of its results. */
  first_at: Millis;
  last_at: Millis;
}

/** One row per test result that ran (skipped results are only counted in the upload). */
export interface FlakyResultsTable {
  test_seq: number;
  at: Millis;
  upload_seq: number;
  /** passed | failed | flaky (failed, then passed on retry in the same upload). */
  outcome: string;
  /** 1 when the branch is one the failure-rate monitor watches. */
  stable: number;
  /** 1 when the upload was kept out of detection (infrastructure failure guard). */
  excluded: number;
  duration_ms: Millis;
  attempts: number;
}

/** One row per failed or flaky result, with its failure. */
export interface FlakyFailuresTable {
  test_seq: number;
  at: Millis;
  upload_seq: number;
  repo_id: string;
  pr_number: Nullable<number>;
  failure_key: Nullable<string>;
  failure_line: Nullable<string>;
}

/** Sequence numbers of `test` (committed in the order of their numbers) and `upload` (unique only). */
export interface FlakyCountersTable {
  name: string;
  value: number;
}

/** Which organisation a repository belongs to (see decisions "Trust"). */
export interface RepoOwnersTable {
  /** `host/owner/name`, lower case. */
  repo_key: string;
  org_slug: string;
  created_at: Millis;
}

/** Secrets the server generates once and keeps (e.g. `page-token-key`). */
export interface ServerSecretsTable {
  name: string;
  /** Base64. */
  value: string;
  created_at: Millis;
}

/** A webhook delivery or command comment a forge driver acted on (migration 011). */
export interface ForgeEventsTable {
  forge: string;
  /** `host/owner/name`, lower case. */
  repo_key: string;
  /** `delivery` | `comment`. */
  kind: string;
  key: string;
  at: Millis;
}

/** An outgoing webhook endpoint of an organisation (009). */
export interface WebhookEndpointsTable {
  id: string;
  org_slug: string;
  url: string;
  /** standard | slack */
  kind: string;
  description: Nullable<string>;
  /** JSON list of event types, or null for every event. */
  events: Nullable<string>;
  /** JSON list of `host/owner/name` (lower case), or null for every repository. */
  repos: Nullable<string>;
  /** `whsec_…`: kept as is, since it signs (docs/webhooks.md). */
  secret: string;
  /** The secret before the last rotation, still signing until previous_secret_until. */
  previous_secret: Nullable<string>;
  previous_secret_until: Nullable<number>;
  /** enabled | disabled */
  state: string;
  disabled_reason: Nullable<string>;
  /** Since when every attempt failed (null after a success). */
  failing_since: Nullable<number>;
  created_at: Millis;
  updated_at: Millis;
}

/** The outbox: one event, written in the transaction of the change it reports (009). */
export interface WebhookMessagesTable {
  /** `msg_…`: the `webhook-id` of every delivery of the event, retries included. */
  id: string;
  org_slug: string;
  type: string;
  /** The JSON body, as sent. */
  payload: string;
  created_at: Millis;
}

/** One event for one endpoint (009). */
export interface WebhookDeliveriesTable {
  id: Generated<number>;
  endpoint_id: string;
  message_id: string;
  order_key: string;
  /** pending | succeeded | failed */
  state: string;
  attempts: ColumnType<number, number | undefined, number>;
  next_at: Millis;
  lease_until: ColumnType<number, number | undefined, number>;
  leased_by: Nullable<string>;
  last_status: Nullable<number>;
  last_error: Nullable<string>;
  created_at: Millis;
  finished_at: Nullable<number>;
  /** 1: the first pending delivery of its line (endpoint, order key), the only one a claim reads (015). */
  head: ColumnType<number, number | undefined, number>;
}

/** One attempt of a delivery: the delivery log (009). */
export interface WebhookAttemptsTable {
  delivery_id: number;
  n: number;
  at: Millis;
  status: Nullable<number>;
  latency_ms: number;
  error: Nullable<string>;
  /** The start of the answer's body (bounded). */
  response: Nullable<string>;
}

/** What the risk model knows of one submission (010): author, touched paths (JSON array), size. */
export interface RiskFactsTable {
  queue_id: string;
  entry_id: string;
  pr_number: number;
  author: string;
  paths: string;
  size: number;
  at: Millis;
}

/** The ticket of a test in a tracker (migration 020). */
export interface FlakyTicketsTable {
  repo_id: string;
  test_id: string;
  /** github | gitlab | jira */
  system: string;
  project: string;
  /** The number (GitHub), iid (GitLab) or key (Jira); null until it was opened. */
  ticket_key: Nullable<string>;
  url: Nullable<string>;
  /** creating | open | closed */
  state: string;
  creating_at: Nullable<number>;
  opened_at: Nullable<number>;
  closed_at: Nullable<number>;
  updated_at: Millis;
}

export interface SchemaTables {
  organisations: OrganisationsTable;
  api_tokens: ApiTokensTable;
  queues: QueuesTable;
  queue_leases: QueueLeasesTable;
  pull_requests: PullRequestsTable;
  test_runs: TestRunsTable;
  impacted_targets: ImpactedTargetsTable;
  pr_transitions: PrTransitionsTable;
  flaky_repositories: FlakyRepositoriesTable;
  test_cases: TestCasesTable;
  test_uploads: TestUploadsTable;
  flaky_results: FlakyResultsTable;
  flaky_failures: FlakyFailuresTable;
  flaky_counters: FlakyCountersTable;
  repo_owners: RepoOwnersTable;
  server_secrets: ServerSecretsTable;
  forge_events: ForgeEventsTable;
  risk_facts: RiskFactsTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_messages: WebhookMessagesTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  flaky_tickets: FlakyTicketsTable;
}

export type { Generated };

/** The database handle every part of the store shares. */
export type Db = Kysely<SchemaTables>;
