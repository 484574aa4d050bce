/** An upload's ingest: tests and results stored in one transaction, detection run on what it changed. */
import { randomUUID } from 'node:crypto';
import type { UploadTestResultsRequest, UploadTestResultsResponse } from '../../contract/index.js';
import { CodeOwners } from '../../flaky/codeowners.js';
import { branchMatcher, decideMonitors } from '../../flaky/detect.js';
import { readReports, type IngestOutcome, type IngestResult, type IngestTask } from '../../flaky/ingest.js';
import { countResults } from '../../flaky/results.js';
import type { FlakyStore, KnownCase, MonitorChange } from '../../store/flaky.js';
import { badRequest } from '../errors.js';
import { Slices } from './slices.js';
import type { Links } from '../links.js';
import { monitorEvents } from '../webhooks/flaky-events.js';
import { ticketEvents } from '../tickets/events.js';
import { lockRepository, type Repository } from './repositories.js';

const HOUR = 60 * 60 * 1000;

/** A result with its test's seq (-1 until known) and whether this upload stored the test. */
type Numbered = IngestResult & { seq: number; isNew: boolean };
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

/** Upload seqs taken from the database at a time. */
const UPLOAD_SEQ_BLOCK = 64;

/**
 * Numbers from a database counter, taken a block at a time: one statement (and, on PostgreSQL, one
 * commit) per block instead of per upload. Numbers of a block unused when the server stops are
 * never used; uploads are numbered uniquely, not gaplessly or in arrival order across replicas.
 */
class SeqBlocks {
  private next = 0;
  private end = 0;
  private refill: Promise<void> | null = null;

  constructor(
    private readonly take: (n: number) => Promise<number>,
    private readonly size: number,
  ) {}

  async nextSeq(): Promise<number> {
    while (this.next >= this.end) {
      this.refill ??= this.take(this.size)
        .then((first) => {
          this.next = first;
          this.end = first + this.size;
        })
        .finally(() => {
          this.refill = null;
        });
      await this.refill;
    }
    return this.next++;
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
  private readonly uploadSeqs = new SeqBlocks((n) => this.store.ingest.nextSeqs('upload', n), UPLOAD_SEQ_BLOCK);

  constructor(
    private readonly store: FlakyStore,
    private readonly now: () => number,
    private readonly links: Links,
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
    // Every walk over the results below runs in slices: a big upload never holds the thread long.
    const slices = new Slices();
    const variant = input.variant ?? '';
    const now = this.now();
    let earliest = Infinity;
    await slices.each(results, (r) => {
      if (r.timestamp !== null && r.timestamp <= now + HOUR && r.timestamp < earliest) earliest = r.timestamp;
    });
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

    // Before the transaction: the seqs of the stored tests (a stored test keeps its seq for good)
    // and the upload's number. Outside it, taking the number waits for no lock the transaction
    // holds, and the transaction never holds a pooled connection while asking for another.
    const numbered = await this.numberStored(results, slices);
    const tested = await slices.filter(numbered, (r) => r.outcome !== 'skipped');
    const fresh = await slices.filter(numbered, (r) => r.seq < 0);
    const uploadSeq = await this.uploadSeqs.nextSeq();

    const { response, added } = await this.store.transaction(async (tx) => {
      const repository = await lockRepository(tx, org, input.repo, now);
      const { settings } = repository;
      const ran = counts.tests - counts.skipped;
      const excluded =
        ran >= settings.infra_failure_min_tests &&
        counts.failed / Math.max(ran, 1) >= settings.infra_failure_threshold;
      const stable = branchMatcher(settings.failure_rate.branches)(input.branch);

      // The new tests. One that another upload stored since the lookup above keeps that upload's seq.
      // They are numbered inside the transaction: the counter's row stays locked until this upload
      // commits, so new tests are committed in the order of their numbers, and a page token (a
      // keyset over them) never passes a test that appears later.
      const added: Array<readonly [string, number]> = [];
      if (fresh.length) {
        let nextTestSeq = await tx.ingest.nextSeqs('test', fresh.length);
        await slices.each(fresh, (r) => {
          r.seq = nextTestSeq++;
        });
        const stored = await tx.ingest.insertCases(fresh, (r) => ({
          id: r.id,
          seq: r.seq,
          repo_id: repository.id,
          name: r.name,
          file: r.file,
          classname: r.classname,
          parent: r.parent,
          variant: r.variant,
          first_seen_at: atOf(r),
        }));
        const late: Numbered[] = [];
        await slices.each(fresh, (r) => {
          if (!stored.has(r.id)) return void late.push(r);
          r.isNew = true;
          added.push([r.id, r.seq]);
        });
        const found = await tx.ingest.casesById(late.map((r) => r.id));
        for (const r of late) r.seq = found.get(r.id)!.seq;
      }
      const seqOf = (r: Numbered) => r.seq;

      const response: UploadTestResultsResponse = {
        upload_id: uploadId,
        files: input.reports.length,
        ...counts,
        new_tests: added.length,
        excluded_from_detection: excluded,
      };
      let firstAt = startedAt;
      let lastAt = startedAt;
      await slices.each(tested, (r) => {
        const at = atOf(r);
        if (at < firstAt) firstAt = at;
        if (at > lastAt) lastAt = at;
      });
      await tx.ingest.storeUpload({
        upload: {
          id: uploadId,
          seq: uploadSeq,
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
        failures: await slices.filter(tested, (r) => r.outcome !== 'passed'),
        failure: (r) => ({
          test_seq: seqOf(r),
          at: atOf(r),
          repo_id: repository.id,
          pr_number: prNumber,
          failure_key: r.failureKey,
          failure_line: r.failureLine,
        }),
      });
      if (!excluded) await this.detect(tx, repository, input, { tested, stable, atOf, uploadSeq }, slices);
      // Last: a change holds the repository's row until the upload commits, and an upload
      // holding it waits for nothing more, so uploads never wait for each other in a circle.
      if (input.codeowners !== undefined) await tx.repositories.setCodeowners(repository.id, input.codeowners, now);
      return { response, added };
    });
    await slices.each(added, ([id, seq]) => this.rememberSeq(id, seq));
    return response;
  }

  private rememberSeq(id: string, seq: number): void {
    this.seqOfId.set(id, seq);
  }

  /**
   * The upload's results with the seqs of the stored tests among them (from memory, else read by
   * id); -1 for the others. The seq goes on the result itself: looked up by id in a map of
   * 200,000 each time a row needed it, it cost ~300 ms of the request thread per upload.
   */
  private async numberStored(results: IngestResult[], slices: Slices): Promise<Numbered[]> {
    const numbered = results as Numbered[];
    const unknown: Numbered[] = [];
    await slices.each(numbered, (r) => {
      r.isNew = false;
      r.seq = this.seqOfId.get(r.id) ?? -1;
      if (r.seq < 0) unknown.push(r);
    });
    if (unknown.length === 0) return numbered;
    const found = await this.store.ingest.casesById(unknown.map((r) => r.id));
    await slices.each(unknown, (r) => {
      const known = found.get(r.id);
      if (!known) return;
      r.seq = known.seq;
      this.rememberSeq(r.id, known.seq);
    });
    return numbered;
  }

  /**
   * Runs the monitors for the tests of one upload and stores what changed. The tests are held
   * (FlakyIngest.holdCases) before anything detection depends on is read.
   */
  private async detect(
    tx: FlakyStore,
    repository: Repository,
    input: UploadTestResultsRequest,
    upload: {
      tested: readonly Numbered[];
      stable: boolean;
      atOf: (r: IngestResult) => number;
      uploadSeq: number;
    },
    slices: Slices,
  ): Promise<void> {
    const { settings } = repository;
    const { tested, stable, atOf } = upload;
    const seqOf = (r: Numbered) => r.seq;
    const sha = input.sha.toLowerCase();
    const state = new Map<number, KnownCase>();
    const held: number[] = [];
    await slices.each(tested, (r) => {
      // The tests this upload stored: nobody else can see them yet, and they are healthy.
      if (!r.isNew) held.push(r.seq);
    });
    await slices.each(await tx.ingest.holdCases(repository.id, held), (marked) => state.set(marked.seq, marked));
    const before = (r: Numbered): KnownCase =>
      state.get(seqOf(r)) ?? { seq: seqOf(r), rate_status: 'healthy', por_until: null };

    // Pass-on-retry: passed and failed on this commit, in this upload or together with earlier ones.
    const evidence = new Set<number>();
    if (settings.pass_on_retry.enabled) {
      const passedHere = new Map<number, boolean>();
      await slices.each(tested, (r) => {
        if (r.outcome === 'flaky') evidence.add(seqOf(r));
        else passedHere.set(seqOf(r), r.outcome === 'passed');
      });
      const seen = [...passedHere.keys()];
      for (const earlier of await tx.ingest.uploadsOfCommit(repository.id, sha, upload.uploadSeq)) {
        await slices.each(await tx.ingest.outcomesIn(earlier, seen), (o) => {
          if (o.outcome === 'flaky' || passedHere.get(o.seq) !== (o.outcome === 'passed')) evidence.add(o.seq);
        });
      }
    }

    // Failure rate on stable branches over the window ending at this upload.
    let rates = new Map<number, { runs: number; fails: number }>();
    const fr = settings.failure_rate;
    if (stable && fr.enabled && tested.length) {
      let until = -Infinity;
      await slices.each(tested, (r) => {
        until = Math.max(until, atOf(r));
      });
      const since = until - fr.window_hours * HOUR;
      // A healthy test with no failure in the window stays healthy (a 0 % rate is below any
      // activation above 0): only the tests that failed in it, or are flaky or broken, are counted.
      let counted = tested;
      if (fr.flaky_activation > 0) {
        const failed = await tx.ingest.failedIn(await slices.map(tested, seqOf), since, until);
        counted = await slices.filter(tested, (r) => failed.has(seqOf(r)) || before(r).rate_status !== 'healthy');
      }
      rates = await tx.ingest.stableRates(await slices.map(counted, seqOf), since, until);
    }

    const changes: Array<{ id: string; change: MonitorChange }> = [];
    await slices.each(tested, (r) => {
      const { seq, rate_status, por_until } = before(r);
      const change = decideMonitors(
        { rateStatus: rate_status, porUntil: por_until },
        {
          at: atOf(r),
          passedAndFailed: evidence.has(seq),
          rate: rates.get(seq),
          sha,
          branch: input.branch,
        },
        settings,
      );
      if (Object.keys(change).length) changes.push({ id: r.id, change });
    });
    await tx.ingest.updateMonitors(changes);
    // Webhook events of these changes, in this same transaction (docs/webhooks.md).
    if (changes.length) {
      const byId = new Map<string, Numbered>();
      await slices.each(tested, (r) => byId.set(r.id, r));
      const changed = changes.map(({ id, change }) => {
        const r = byId.get(id)!;
        return { test: r, before: before(r), change, at: atOf(r) };
      });
      // The owners the events name: this upload's CODEOWNERS when it brings one (stored at the end).
      const owned = input.codeowners !== undefined ? { ...repository, codeowners: input.codeowners ? new CodeOwners(input.codeowners) : null } : repository;
      // Tickets of tests turning unhealthy or healthy again go through the same outbox.
      await tx.writeWebhookEvents(repository.org, [...monitorEvents(this.links, owned, changed), ...ticketEvents(this.links, owned, changed)]);
    }
  }
}
