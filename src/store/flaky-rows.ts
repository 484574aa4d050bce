/**
 * The rows of the flaky-test tables as the flaky-test store (src/store/flaky.ts) hands them out
 * and takes them in: tests, uploads, results, failures and the sets the lists ask for.
 */
import type { Repo, TestStatus } from '../contract/index.js';
import type { MonitorDecision } from '../flaky/detect.js';
import type { QuarantineMatch, QuarantineOverride } from '../flaky/quarantine.js';

/** A test as stored, times as numbers (PostgreSQL hands `bigint` back as strings). */
export interface CaseRow {
  id: string;
  seq: number;
  repo_id: string;
  name: string;
  file: string | null;
  classname: string | null;
  parent: string | null;
  variant: string;
  first_seen_at: number;
  rate_status: TestStatus;
  rate_reason: string | null;
  rate_changed_at: number | null;
  por_since: number | null;
  por_until: number | null;
  por_reason: string | null;
  override: QuarantineOverride | null;
  override_at: number | null;
  /** When the override lapses by itself (null: never), who set it and why. */
  override_until: number | null;
  override_owner: string | null;
  override_reason: string | null;
  /** The end whose lapse was announced (null: not announced, or no end has come). */
  override_lapse_sent: number | null;
  ticket: string | null;
}

/** An upload kept out of detection, with one test's result in it (`cases.excludedUploads`). */
export interface ExcludedUploadRow {
  id: string;
  branch: string;
  sha: string;
  job: string | null;
  prNumber: number | null;
  startedAt: number;
  /** UploadTestResultsResponse as JSON, as stored. */
  counts: string;
  /** The test's result: passed | failed | flaky. */
  outcome: string;
}

/** What an upload needs of each stored test: where its results go, and what detection had decided. */
export type KnownCase = Pick<CaseRow, 'seq' | 'rate_status' | 'por_until'>;

export interface RepositoryRow {
  id: string;
  org: string;
  repo: Repo;
  /** The stored settings, JSON (only what was ever set). */
  settings: string;
  codeowners: string | null;
}

/** A test as an upload first stores it (detection's columns take their defaults). */
export type NewCase = Pick<
  CaseRow,
  'id' | 'seq' | 'repo_id' | 'name' | 'file' | 'classname' | 'parent' | 'variant' | 'first_seen_at'
>;

export interface NewUpload {
  id: string;
  seq: number;
  repo_id: string;
  branch: string;
  sha: string;
  pr_number: number | null;
  job: string | null;
  attempt: number;
  variant: string;
  started_at: number;
  first_at: number;
  last_at: number;
  created_at: number;
  counts: string;
  excluded: boolean;
}

export interface NewResult {
  test_seq: number;
  at: number;
  upload_seq: number;
  outcome: string;
  stable: boolean;
  excluded: boolean;
  duration_ms: number;
  attempts: number;
}

export interface NewFailure {
  test_seq: number;
  at: number;
  upload_seq: number;
  repo_id: string;
  pr_number: number | null;
  failure_key: string | null;
  failure_line: string | null;
}

/** An upload to store with its results and failures (`upload.seq` is the `upload_seq` of its rows). */
export interface UploadWrite<T> {
  upload: NewUpload;
  results: readonly T[];
  result: (item: T) => Omit<NewResult, 'upload_seq'>;
  failures: readonly T[];
  failure: (item: T) => Omit<NewFailure, 'upload_seq'>;
}

/** The monitor columns detection changes (only the keys present are written): detection's decision. */
export type MonitorChange = MonitorDecision;

/** A set of one repository's tests, as the lists and checks ask for them. */
export type CaseSet =
  | { kind: 'failedBetween'; repoId: string; start: number; end: number }
  | { kind: 'broken'; repoId: string }
  | { kind: 'flaky'; repoId: string; now: number }
  | { kind: 'quarantined'; repoId: string; now: number; matches: readonly QuarantineMatch[] };

export interface EarlierUpload {
  seq: number;
  first_at: number;
  last_at: number;
}

export interface RecentRates {
  runs7: number;
  fails7: number;
  runs1: number;
  fails1: number;
}

export interface FailureGroup {
  testSeq: number;
  key: string;
  count: number;
  last: number;
}
