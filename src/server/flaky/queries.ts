/** The flaky-test reads: lists, a test's details and history, and the per-test settings. */
import type {
  CheckQuarantineRequest,
  CheckQuarantineResponse,
  DetailedTestCase,
  GetTestDetailsRequest,
  GetTestFailureHistoryRequest,
  GetTestFailureHistoryResponse,
  LinkTicketRequest,
  ListFailingTestsRequest,
  ListQuarantinedTestsRequest,
  ListUnhealthyTestsRequest,
  Repo,
  SetTestQuarantineRequest,
  SetTestQuarantineResponse,
  UnhealthyTestCase,
} from '../../contract/index.js';
import { isoTime, MAX_EXCLUDED_UPLOADS } from '../../contract/index.js';
import { repoKey } from '../../flaky/identity.js';
import type { CaseRow, FailureGroup, FlakyStore } from '../../store/flaky.js';
import { badRequest, notFound } from '../errors.js';
import { emptyPage, pageOfCases } from './paging.js';
import type { Links } from '../links.js';
import { quarantineEvent } from '../webhooks/flaky-events.js';
import {
  detailedCase,
  excludedUpload,
  overrideInfo,
  quarantinedTest,
  statusOf,
  unhealthyCase,
} from './present.js';
import { isQuarantined, overrideAt, quarantiningOffWarning } from '../../flaky/quarantine.js';
import { announceLapses, lapsedUnannounced } from './lapses.js';
import { findRepository, requireRepository, type Repository } from './repositories.js';

const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;
/** The furthest end a quarantine override may have. */
const MAX_QUARANTINE_MS = 10 * 365 * DAY;

/** The flaky-test lists, a test's details, and the per-test settings (ticket, quarantine override). */
export class Queries {
  constructor(
    private readonly store: FlakyStore,
    private readonly now: () => number,
    private readonly links: Links,
  ) {}

  /**
   * The tests of a page as the lists show them, each with its verdict: the failure-rate monitor's
   * runs and failures now (its window on stable branches), its failures of the last 7 days
   * (`fails7`, when the caller counted them) and how many of those passed on retry.
   */
  private async unhealthyCases(
    repository: Repository,
    rows: readonly CaseRow[],
    now: number,
    fails7?: ReadonlyMap<number, number>,
  ): Promise<UnhealthyTestCase[]> {
    const seqs = rows.map((r) => r.seq);
    const [prs, window, retried] = await Promise.all([
      this.store.cases.impactedPullRequests(seqs, now - 7 * DAY, now),
      this.store.ingest.stableRates(seqs, now - repository.settings.failure_rate.window_hours * HOUR, now),
      this.store.cases.passedOnRetry(seqs, now - 7 * DAY, now),
    ]);
    return rows.map((row) =>
      unhealthyCase(this.links, repository, row, prs.get(row.seq) ?? 0, now, {
        window: window.get(row.seq) ?? { runs: 0, fails: 0 },
        failures7d: fails7?.get(row.seq) ?? 0,
        passedOnRetry7d: retried.get(row.seq) ?? 0,
      }),
    );
  }

  private async detailedCases(
    repository: Repository,
    rows: readonly CaseRow[],
    now: number,
  ): Promise<DetailedTestCase[]> {
    const seqs = rows.map((r) => r.seq);
    const rates = await this.store.cases.recentRates(seqs, now - 7 * DAY, now - DAY, now);
    const fails7 = new Map([...rates].map(([seq, r]) => [seq, r.fails7]));
    const base = await this.unhealthyCases(repository, rows, now, fails7);
    const failures = new Map<number, FailureGroup[]>();
    for (const group of await this.store.cases.failureGroups(seqs, now - 7 * DAY, now)) {
      const list = failures.get(group.testSeq) ?? [];
      list.push(group);
      failures.set(group.testSeq, list);
    }
    return base.map((test, i) => detailedCase(test, rates.get(rows[i].seq), failures.get(rows[i].seq) ?? []));
  }

  async listFailing(org: string, input: ListFailingTestsRequest) {
    const repository = await findRepository(this.store, org, input.repo);
    if (!repository) return { tests: [], page: emptyPage() };
    const set = {
      kind: 'failedBetween',
      repoId: repository.id,
      start: Date.parse(input.start_time),
      end: Date.parse(input.end_time),
    } as const;
    const { rows, page } = await pageOfCases(this.store, set, input.page_query);
    return { tests: await this.detailedCases(repository, rows, this.now()), page };
  }

  async listUnhealthy(org: string, input: ListUnhealthyTestsRequest) {
    const repository = await findRepository(this.store, org, input.repo);
    if (!repository) return { tests: [], page: emptyPage() };
    const now = this.now();
    const set =
      input.status === 'BROKEN'
        ? ({ kind: 'broken', repoId: repository.id } as const)
        : ({ kind: 'flaky', repoId: repository.id, now } as const);
    const { rows, page } = await pageOfCases(this.store, set, input.page_query);
    return { tests: await this.unhealthyCases(repository, rows, now), page };
  }

  async details(org: string, input: GetTestDetailsRequest) {
    const repository = await findRepository(this.store, org, input.repo);
    const row = repository && (await this.store.cases.findCase(repository.id, input.test_id));
    if (!repository || !row) throw notFound(`test_id: no test ${input.test_id} in ${repoKey(input.repo)}`);
    const [test] = await this.detailedCases(repository, [row], this.now());
    return { test };
  }

  /** A test's runs, failures and failure rate per UTC day, the last `days` days up to today, oldest first. */
  async failureHistory(
    org: string,
    input: GetTestFailureHistoryRequest,
  ): Promise<GetTestFailureHistoryResponse> {
    const repository = await findRepository(this.store, org, input.repo);
    const row = repository && (await this.store.cases.findCase(repository.id, input.test_id));
    if (!repository || !row) throw notFound(`test_id: no test ${input.test_id} in ${repoKey(input.repo)}`);
    const now = this.now();
    const today = Math.floor(now / DAY);
    const first = today - input.days + 1;
    const [counts, excluded] = await Promise.all([
      this.store.cases.dailyRates(row.seq, first * DAY, now),
      this.store.cases.excludedUploads(row.seq, first * DAY, now, MAX_EXCLUDED_UPLOADS),
    ]);
    const days = [];
    for (let d = first; d <= today; d++) {
      const { runs, fails, excluded: excludedRuns } = counts.get(d) ?? { runs: 0, fails: 0, excluded: 0 };
      days.push({
        date: new Date(d * DAY).toISOString().slice(0, 10),
        runs,
        failures: fails,
        failure_rate: runs ? fails / runs : null,
        excluded_runs: excludedRuns,
      });
    }
    return {
      test_id: row.id,
      days,
      excluded_uploads: excluded.uploads.map(excludedUpload),
      excluded_uploads_total: excluded.total,
    };
  }

  async listQuarantined(org: string, input: ListQuarantinedTestsRequest) {
    const repository = await findRepository(this.store, org, input.repo);
    if (!repository) return { quarantined_tests: [], page: emptyPage() };
    const now = this.now();
    const set = { kind: 'quarantined', repoId: repository.id, now, matches: repository.quarantine } as const;
    const { rows, page } = await pageOfCases(this.store, set, input.page_query);
    return { quarantined_tests: rows.map((row) => quarantinedTest(repository, row, now)), page };
  }

  async linkTicket(org: string, input: LinkTicketRequest): Promise<Record<string, never>> {
    const repository = await findRepository(this.store, org, input.repo);
    const row = repository && (await this.store.cases.findCase(repository.id, input.test_case_id));
    if (!repository || !row)
      throw notFound(`test_case_id: no test ${input.test_case_id} in ${repoKey(input.repo)}`);
    await this.store.cases.setTicket(row.id, input.external_ticket_id);
    return {};
  }

  /**
   * Sets a test's override, owned by `actor` (the label of the request's token), until a time and
   * with a reason when given. Answers whether the test is quarantined now, and a warning while
   * quarantining is off for the repository (the override is kept, and counts once it is turned on).
   */
  async setQuarantine(
    org: string,
    actor: string,
    input: SetTestQuarantineRequest,
  ): Promise<SetTestQuarantineResponse> {
    const now = this.now();
    const until = input.until === undefined ? null : Date.parse(input.until);
    if (until !== null && until <= now)
      throw badRequest(`until: ${input.until} is not in the future (the server's time is ${isoTime(now)})`);
    if (until !== null && until > now + MAX_QUARANTINE_MS)
      throw badRequest(`until: ${input.until} is more than 10 years ahead`);
    const repository = await requireRepository(this.store, org, input.repo);
    const row = await this.store.cases.findCase(repository.id, input.test_id);
    if (!row) throw notFound(`test_id: no test ${input.test_id} in ${repoKey(input.repo)}`);
    const override = input.setting === 'AUTO' ? null : input.setting;
    const about = {
      until,
      owner: override ? actor || null : null,
      reason: override ? (input.reason ?? null) : null,
    };
    const status = statusOf(row, now);
    const previous = overrideAt(row, now);
    const event = quarantineEvent(
      this.links,
      repository,
      row,
      { value: status.value, reason: status.reason, at: status.since },
      previous ?? 'UNSPECIFIED',
      override ?? 'UNSPECIFIED',
      now,
      { actor, reason: about.reason },
    );
    const changed =
      previous !== override ||
      (override !== null && (row.override_until !== about.until || row.override_reason !== about.reason));
    // The override and its webhook event are stored together. An override that ended and was not
    // announced yet (the sweeper had not come by) is announced first: the new one clears the mark.
    const lapsed = lapsedUnannounced(row, now);
    await this.store.transaction(async (tx) => {
      if (lapsed) await announceLapses(tx, this.links, [{ test: row, repository }], now);
      await tx.cases.setOverride(row.id, override, override ? now : null, about);
      if (changed) await tx.writeWebhookEvents(org, [event]);
    });
    const stored = {
      ...row,
      override,
      override_at: override ? now : null,
      override_until: about.until,
      override_owner: about.owner,
      override_reason: about.reason,
      override_lapse_sent: null,
    };
    const answer: SetTestQuarantineResponse = {
      quarantined: isQuarantined(repository.quarantine, overrideAt(stored, now), status.value),
      quarantine_override: overrideInfo(stored, now),
    };
    if (override === 'ALWAYS_QUARANTINE' && !repository.settings.quarantining_enabled)
      answer.warning = quarantiningOffWarning(repoKey(input.repo));
    return answer;
  }

  /**
   * What the flaky-test data says of some tests of a repository now (the flake-aware merge queue):
   * quarantined under the repository's settings, and flake history (flaky now, or quarantined).
   * A test never seen is neither.
   */
  async knownFlakes(
    org: string,
    repo: Repo,
    ids: readonly string[],
  ): Promise<Map<string, { quarantined: boolean; flaky: boolean }>> {
    const out = new Map<string, { quarantined: boolean; flaky: boolean }>();
    const repository = await findRepository(this.store, org, repo);
    const now = this.now();
    for (const id of ids) {
      const row = repository ? await this.store.cases.findCase(repository.id, id) : null;
      if (!repository || !row) {
        out.set(id, { quarantined: false, flaky: false });
        continue;
      }
      const status = statusOf(row, now).value;
      const quarantined = isQuarantined(repository.quarantine, overrideAt(row, now), status);
      out.set(id, { quarantined, flaky: quarantined || status === 'flaky' });
    }
    return out;
  }

  async checkQuarantine(org: string, input: CheckQuarantineRequest): Promise<CheckQuarantineResponse> {
    const repository = await findRepository(this.store, org, input.repo);
    if (!repository || !repository.settings.quarantining_enabled) {
      return {
        quarantining_enabled: Boolean(repository?.settings.quarantining_enabled),
        quarantined_test_ids: [],
      };
    }
    const set = {
      kind: 'quarantined',
      repoId: repository.id,
      now: this.now(),
      matches: repository.quarantine,
    } as const;
    const ids = [...new Set(input.test_ids.map((id) => id.toLowerCase()))];
    return { quarantining_enabled: true, quarantined_test_ids: await this.store.cases.idsIn(set, ids) };
  }
}
