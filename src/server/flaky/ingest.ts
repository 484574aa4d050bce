import { randomUUID } from 'node:crypto';
import type { UploadTestResultsRequest, UploadTestResultsResponse } from '../../contract/index.js';
import { branchMatcher, decideMonitors } from '../../flaky/detect.js';
import { readReports, type IngestOutcome, type IngestResult, type IngestTask } from '../../flaky/ingest.js';
import { countResults } from '../../flaky/results.js';
import type { EarlierUpload, FlakyStore, KnownCase, MonitorChange } from '../../store/flaky.js';
import { badRequest } from '../errors.js';
import { lockRepository, type Repository } from './repositories.js';

const HOUR = 60 * 60 * 1000;
/** Test seqs kept in memory (~100 bytes each). */
const SEQ_CACHE = 250_000;

/**
 * The seqs of the most recently stored tests (between SEQ_CACHE / 2 and SEQ_CACHE of them), in two
 * generations: when the young one is full it becomes the old one and the old one is dropped whole.
 * (Evicting the oldest entry one at a time, `map.delete(map.keys().next().value)`, is quadratic
 * in V8: each call walks past every entry deleted before it. Past 250,000 tests an upload of
 * 200,000 new ones spent 17 s there, on the event loop.)
 */
class SeqCache {
  private young = new Map<string, number>();
  private old = new Map<string, number>();

  get(id: string): number | undefined {
    return this.young.get(id) ?? this.old.get(id);
  }

  set(id: string, seq: number): void {
    this.young.set(id, seq);
    if (this.young.size >= SEQ_CACHE / 2) {
      this.old = this.young;
      this.young = new Map();
    }
  }
}

/** Reads an upload's reports somewhere else (a worker thread); the service reads them itself without one. */
export type ReportReader = (task: IngestTask) => Promise<IngestOutcome>;

/**
 * Ingest of one upload: parse, fold retries, store, detect — one transaction per upload, so an
 * upload is stored whole or not at all.
 */
export class Ingest {
  /** Test id → seq of stored tests: the pair never changes once committed, so uploads need not look it up. */
  private readonly seqOfId = new SeqCache();

  constructor(
    private readonly store: FlakyStore,
    private readonly now: () => number,
    private readonly reader?: ReportReader,
  ) {}

  /**
   * Parses every report first (on a worker thread when the server has one): one malformed file
   * rejects the whole upload before anything is stored.
   */
  private async readReports(org: string, input: UploadTestResultsRequest): Promise<IngestResult[]> {
    const task = { org, repo: input.repo, variant: input.variant ?? '', reports: input.reports };
    const outcome = this.reader ? await this.reader(task) : readReports(task);
    if (!outcome.ok) throw badRequest(`reports: ${outcome.error}`);
    return outcome.results;
  }

  async upload(org: string, input: UploadTestResultsRequest): Promise<UploadTestResultsResponse> {
    const results = await this.readReports(org, input);
    const variant = input.variant ?? '';
    const now = this.now();
    let earliest = Infinity;
    for (const r of results)
      if (r.timestamp !== null && r.timestamp <= now + HOUR && r.timestamp < earliest) earliest = r.timestamp;
    const startedAt = input.started_at
      ? Date.parse(input.started_at)
      : earliest !== Infinity
        ? earliest
        : now;
    const atOf = (r: IngestResult) => (input.started_at ? startedAt : (r.timestamp ?? startedAt));
    const counts = countResults(results);
    const uploadId = randomUUID();
    const sha = input.sha.toLowerCase();
    const prNumber = input.pr_number ?? null;

    const { response, added } = await this.store.transaction(async (tx) => {
      const repository = await lockRepository(tx, org, input.repo, now);
      const { settings } = repository;
      if (input.codeowners !== undefined) await tx.setCodeowners(repository.id, input.codeowners, now);
      const ran = counts.tests - counts.skipped;
      const excluded =
        ran >= settings.infra_failure_min_tests &&
        counts.failed / Math.max(ran, 1) >= settings.infra_failure_threshold;
      const stable = branchMatcher(settings.failure_rate.branches)(input.branch);

      const known = await this.knownCases(tx, results);
      const fresh = results.filter((r) => !known.has(r.id));
      if (fresh.length) {
        let seq = await tx.nextSeqs('test', fresh.length);
        for (const r of fresh) known.set(r.id, { seq: seq++, rate_status: 'healthy', por_until: null });
      }
      const seqOf = (r: IngestResult) => known.get(r.id)!.seq;
      await tx.insertCases(fresh, (r) => ({
        id: r.id,
        seq: seqOf(r),
        repo_id: repository.id,
        name: r.name,
        file: r.file,
        classname: r.classname,
        parent: r.parent,
        variant: r.variant,
        first_seen_at: atOf(r),
      }));

      const response: UploadTestResultsResponse = {
        upload_id: uploadId,
        files: input.reports.length,
        ...counts,
        new_tests: fresh.length,
        excluded_from_detection: excluded,
      };
      const tested = results.filter((r) => r.outcome !== 'skipped');
      let firstAt = startedAt;
      let lastAt = startedAt;
      for (const r of tested) {
        const at = atOf(r);
        if (at < firstAt) firstAt = at;
        if (at > lastAt) lastAt = at;
      }
      // Earlier uploads of this commit, for pass-on-retry: read before this one is stored.
      const sameCommit =
        excluded || !settings.pass_on_retry.enabled ? [] : await tx.uploadsOfCommit(repository.id, sha);
      await tx.storeUpload({
        upload: {
          id: uploadId,
          repo_id: repository.id,
          branch: input.branch,
          sha,
          pr_number: prNumber,
          job: input.job ?? null,
          attempt: input.attempt ?? 1,
          variant,
          started_at: startedAt,
          first_at: firstAt,
          last_at: lastAt,
          created_at: now,
          counts: JSON.stringify(response),
          excluded,
        },
        results: tested,
        result: (r) => ({
          test_seq: seqOf(r),
          at: atOf(r),
          outcome: r.outcome,
          stable,
          excluded,
          duration_ms: r.durationMs,
          attempts: r.attempts,
        }),
        failures: tested.filter((r) => r.outcome !== 'passed'),
        failure: (r) => ({
          test_seq: seqOf(r),
          at: atOf(r),
          repo_id: repository.id,
          pr_number: prNumber,
          failure_key: r.failureKey,
          failure_line: r.failureLine,
        }),
      });
      if (!excluded) await this.detect(tx, repository, input, tested, stable, atOf, known, sameCommit);
      return { response, added: fresh.map((r) => [r.id, seqOf(r)] as const) };
    });
    for (const [id, seq] of added) this.rememberSeq(id, seq);
    return response;
  }

  private rememberSeq(id: string, seq: number): void {
    this.seqOfId.set(id, seq);
  }

  /**
   * The stored tests among an upload's, with their seq and what detection decided so far. Tests
   * whose seq is known need only be read if a monitor ever marked them; the others are read by id.
   */
  private async knownCases(
    tx: FlakyStore,
    results: readonly IngestResult[],
  ): Promise<Map<string, KnownCase>> {
    const known = new Map<string, KnownCase>();
    const idOfSeq = new Map<number, string>();
    for (const r of results) {
      const seq = this.seqOfId.get(r.id);
      if (seq === undefined) continue;
      idOfSeq.set(seq, r.id);
      known.set(r.id, { seq, rate_status: 'healthy', por_until: null });
    }
    for (const marked of await tx.markedCases([...idOfSeq.keys()]))
      known.set(idOfSeq.get(marked.seq)!, marked);
    const stored = await tx.casesById(results.filter((r) => !known.has(r.id)).map((r) => r.id));
    for (const [id, found] of stored) {
      known.set(id, found);
      this.rememberSeq(id, found.seq);
    }
    return known;
  }

  /** Runs the monitors for the tests of one upload and stores what changed. */
  private async detect(
    tx: FlakyStore,
    repository: Repository,
    input: UploadTestResultsRequest,
    tested: readonly IngestResult[],
    stable: boolean,
    atOf: (r: IngestResult) => number,
    known: ReadonlyMap<string, KnownCase>,
    sameCommit: readonly EarlierUpload[],
  ): Promise<void> {
    const { settings } = repository;
    const sha = input.sha.toLowerCase();
    const seqOf = (r: IngestResult) => known.get(r.id)!.seq;

    // Pass-on-retry: passed and failed on this commit, in this upload or together with earlier ones.
    const evidence = new Set<number>();
    if (settings.pass_on_retry.enabled) {
      const passedHere = new Map<number, boolean>();
      for (const r of tested) {
        if (r.outcome === 'flaky') evidence.add(seqOf(r));
        else passedHere.set(seqOf(r), r.outcome === 'passed');
      }
      const seen = [...passedHere.keys()];
      for (const earlier of sameCommit) {
        for (const o of await tx.outcomesIn(earlier, seen)) {
          if (o.outcome === 'flaky' || passedHere.get(o.seq) !== (o.outcome === 'passed'))
            evidence.add(o.seq);
        }
      }
    }

    // Failure rate on stable branches over the window ending at this upload.
    let rates = new Map<number, { runs: number; fails: number }>();
    const fr = settings.failure_rate;
    if (stable && fr.enabled && tested.length) {
      let until = -Infinity;
      for (const r of tested) until = Math.max(until, atOf(r));
      const since = until - fr.window_hours * HOUR;
      // A healthy test with no failure in the window stays healthy (a 0 % rate is below any
      // activation above 0): only the tests that failed in it, or are flaky or broken, are counted.
      let counted = tested;
      if (fr.flaky_activation > 0) {
        const failed = await tx.failedIn(tested.map(seqOf), since, until);
        counted = tested.filter((r) => failed.has(seqOf(r)) || known.get(r.id)!.rate_status !== 'healthy');
      }
      rates = await tx.stableRates(counted.map(seqOf), since, until);
    }

    const changes: Array<{ id: string; change: MonitorChange }> = [];
    for (const r of tested) {
      const before = known.get(r.id)!;
      const change = decideMonitors(
        { rateStatus: before.rate_status, porUntil: before.por_until },
        {
          at: atOf(r),
          passedAndFailed: evidence.has(before.seq),
          rate: rates.get(before.seq),
          sha,
          branch: input.branch,
        },
        settings,
      );
      if (Object.keys(change).length) changes.push({ id: r.id, change });
    }
    await tx.updateMonitors(changes);
  }
}
