/** The flaky-test service: uploads, lists, details and settings over the flaky store, and failing tests of runs. */
import type {
  CheckQuarantineRequest,
  CheckQuarantineResponse,
  GetTestDetailsRequest,
  GetTestFailureHistoryRequest,
  LinkTicketRequest,
  ListFailingTestsRequest,
  ListQuarantinedTestsRequest,
  ListUnhealthyTestsRequest,
  Repo,
  RepositorySettings,
  SetTestQuarantineRequest,
  SetTestQuarantineResponse,
  UpdateRepositorySettingsRequest,
  UploadTestResultsRequest,
  UploadTestResultsResponse,
} from '../../contract/index.js';
import { DEFAULT_SETTINGS } from '../../flaky/detect.js';
import { readReports } from '../../flaky/ingest.js';
import { FlakyStore } from '../../store/flaky.js';
import type { Store } from '../../store/index.js';
import { Ingest, type ReportReader } from './ingest.js';
import { Queries } from './queries.js';
import { findRepository, updateSettings } from './repositories.js';
import type { TicketOptions } from '../tickets/config.js';
import { serverLinks, type Links } from '../links.js';
import { GITHUB_PAGES, hostedLinks } from '../../forge/shared/web-links.js';

export { emptyPage } from './paging.js';
export type { ReportReader } from './ingest.js';

/** A failing test of a merge-queue run, with what the flaky-test data says of it. */
export interface RunFailingTest {
  id: string;
  name: string;
  file: string | null;
  classname: string | null;
  quarantined: boolean;
  flaky: boolean;
}

/**
 * The flaky-test service: the v1 flaky-test operations over the store. Its parts live in
 * ./flaky/: ingest (an upload: parse, store, detect), queries (lists, details, per-test
 * settings), repositories (settings), paging (page tokens) and present (the answers' shapes).
 * Every SQL statement is in src/store/flaky*.ts; the rules (detection, quarantine) in src/flaky/.
 */
export class FlakyService {
  private readonly store: FlakyStore;
  private readonly ingest: Ingest;
  private readonly queries: Queries;

  /**
   * A big upload lets other requests run between its statements (store.pause) (an upload of 200,000
   * new tests held every request for 3.8 s on an empty database, 35 s with 400,000 tests stored,
   * because better-sqlite3 runs each statement on the event loop).
   *
   * Why chunked writes that yield, of the three ways to keep the loop free:
   * - The upload stays ONE transaction, so it is all or nothing, crash included, with no code to
   *   undo half an upload. Statements are at most 500 rows (src/store/flaky-sql.ts), so the loop is
   *   never held for long; the requests that need the database meanwhile wait for it
   *   asynchronously on Kysely's connection lock, the others (status, the merge queue's reads, which
   *   are served from memory) are answered at once.
   * - A writer thread with its own connection would free the loop during COMMIT too, but SQLite has
   *   one writer at a time: a write on the main connection meanwhile (a merge-queue step) would wait
   *   in better-sqlite3's busy handler, which sleeps on the event loop for up to busy_timeout (5 s),
   *   the very stall this avoids, unless every write in the server went through that thread.
   * - A staging table swapped in at the end still has to copy every row into the real tables and
   *   their indexes in one last transaction: the same stall, moved to the end.
   * What is left on the loop: COMMIT (its fsync has little left to write: the pause flushes the
   * WAL in the background), garbage collection, and the parse result arriving from the worker
   * thread (bench/flaky-stall.ts prints the figures).
   */
  constructor(
    store: Store,
    private readonly now: () => number = Date.now,
    reader?: ReportReader,
    /** The links in answers and events (the server's forge and dashboard; src/server/links.ts). */
    links: Links = serverLinks(hostedLinks(GITHUB_PAGES), () => 'http://127.0.0.1'),
    /** The server's ticket tracker settings (docs/flaky-tests.md, "Tickets"). */
    private readonly tickets: TicketOptions = {},
  ) {
    this.store = new FlakyStore(store.db, { pause: store.pause });
    this.ingest = new Ingest(this.store, now, links, reader);
    this.queries = new Queries(this.store, now, links);
  }

  async getSettings(org: string, repo: Repo): Promise<RepositorySettings> {
    return (await findRepository(this.store, org, repo))?.settings ?? DEFAULT_SETTINGS;
  }

  updateSettings(org: string, input: UpdateRepositorySettingsRequest): Promise<RepositorySettings> {
    return updateSettings(this.store, org, input, this.now(), this.tickets);
  }

  async upload(org: string, input: UploadTestResultsRequest): Promise<UploadTestResultsResponse> {
    const answer = await this.ingest.upload(org, input);
    const sha = input.sha.toLowerCase();
    for (const listener of this.uploadListeners) listener(org, sha);
    return answer;
  }

  private readonly uploadListeners = new Set<(org: string, sha: string) => void>();

  /** Calls `listener` after every stored upload (the merge queue waits for a failed run's results); returns the unsubscribe. */
  onUpload(listener: (org: string, sha: string) => void): () => void {
    this.uploadListeners.add(listener);
    return () => this.uploadListeners.delete(listener);
  }

  /**
   * What CI uploaded for one commit of a repository (the GitHub and GitLab path of the flake-aware
   * merge queue: uploads are linked to a test run by the test commit's SHA): the jobs of the uploads,
   * and the tests that failed in them with the job of their upload and what the flaky-test data says
   * of each. Null when nothing was uploaded for the commit.
   */
  async commitResults(
    org: string,
    repo: Repo,
    sha: string,
  ): Promise<{ jobs: (string | null)[]; failing: (RunFailingTest & { job: string | null })[] } | null> {
    const repository = await findRepository(this.store, org, repo);
    if (!repository) return null;
    const { uploads, failed } = await this.store.cases.resultsOfCommit(repository.id, sha.toLowerCase());
    if (uploads.length === 0) return null;
    const jobOf = new Map(uploads.map((u) => [u.seq, u.job]));
    const known = await this.queries.knownFlakes(org, repo, [...new Set(failed.map((f) => f.id))]);
    return {
      jobs: uploads.map((u) => u.job),
      failing: failed.map((f) => ({
        id: f.id,
        name: [f.parent, f.name].filter(Boolean).join(' › '),
        file: f.file,
        classname: f.classname,
        job: jobOf.get(f.uploadSeq) ?? null,
        ...(known.get(f.id) ?? { quarantined: false, flaky: false }),
      })),
    };
  }

  /**
   * The test results of a merge-queue test run (the reports its checks declared): stored as an
   * upload for the test commit, like CI's, and its failing tests returned with what the flaky-test
   * data says of each (the merge queue's flake-aware verdict reads them).
   */
  async testRunResults(
    org: string,
    input: { repo: Repo; branch: string; sha: string; reports: { name: string; content: string }[] },
  ): Promise<RunFailingTest[]> {
    if (input.reports.length === 0) return [];
    await this.ingest.upload(org, {
      repo: input.repo,
      org_url_slug: org,
      branch: input.branch,
      sha: input.sha,
      reports: input.reports,
    });
    const read = readReports({ org, repo: input.repo, variant: '', reports: input.reports });
    if (!read.ok) return [];
    const failing = read.results.filter((r) => r.outcome === 'failed');
    const known = await this.queries.knownFlakes(
      org,
      input.repo,
      failing.map((r) => r.id),
    );
    return failing.map((r) => ({
      id: r.id,
      name: [r.parent, r.name].filter(Boolean).join(' › '),
      file: r.file,
      classname: r.classname,
      ...(known.get(r.id) ?? { quarantined: false, flaky: false }),
    }));
  }

  listFailing(org: string, input: ListFailingTestsRequest) {
    return this.queries.listFailing(org, input);
  }

  listUnhealthy(org: string, input: ListUnhealthyTestsRequest) {
    return this.queries.listUnhealthy(org, input);
  }

  details(org: string, input: GetTestDetailsRequest) {
    return this.queries.details(org, input);
  }

  failureHistory(org: string, input: GetTestFailureHistoryRequest) {
    return this.queries.failureHistory(org, input);
  }

  listQuarantined(org: string, input: ListQuarantinedTestsRequest) {
    return this.queries.listQuarantined(org, input);
  }

  linkTicket(org: string, input: LinkTicketRequest): Promise<Record<string, never>> {
    return this.queries.linkTicket(org, input);
  }

  /** Sets a test's quarantine override; `actor` (the request token's label) owns it. */
  setQuarantine(
    org: string,
    actor: string,
    input: SetTestQuarantineRequest,
  ): Promise<SetTestQuarantineResponse> {
    return this.queries.setQuarantine(org, actor, input);
  }

  checkQuarantine(org: string, input: CheckQuarantineRequest): Promise<CheckQuarantineResponse> {
    return this.queries.checkQuarantine(org, input);
  }
}
