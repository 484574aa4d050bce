import { randomUUID } from 'node:crypto';
import { sql, type ExpressionBuilder, type Expression, type SqlBool, type Transaction } from 'kysely';
import {
  isoTime,
  type CheckQuarantineRequest,
  type CheckQuarantineResponse,
  type DetailedTestCase,
  type GetTestDetailsRequest,
  type LinkTicketRequest,
  type ListFailingTestsRequest,
  type ListQuarantinedTestsRequest,
  type ListUnhealthyTestsRequest,
  type Page,
  type PageQuery,
  type QuarantinedTest,
  type Repo,
  type RepositorySettings,
  type SetTestQuarantineRequest,
  type TestStatus,
  type UnhealthyTestCase,
  type UpdateRepositorySettingsRequest,
  type UploadTestResultsRequest,
  type UploadTestResultsResponse,
} from '../contract/index.js';
import { CodeOwners } from '../flaky/codeowners.js';
import {
  branchMatcher,
  DEFAULT_SETTINGS,
  effectiveStatus,
  passOnRetryReason,
  rateReason,
  rateStatus,
  type EffectiveStatus,
} from '../flaky/detect.js';
import { repoKey } from '../flaky/identity.js';
import { readReports, type IngestOutcome, type IngestResult, type IngestTask } from '../flaky/ingest.js';
import { countResults } from '../flaky/results.js';
import type { SchemaTables } from '../store/schema.js';
import type { Store } from '../store/index.js';
import { badRequest, notFound } from './errors.js';

const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;
/** Rows per multi-row statement: well under every database's bound-parameter limit. */
const CHUNK = 500;
const TOP_FAILURES = 5;
/**
 * Tests a monitor ever marked: the condition of the partial index test_cases_marked, written out
 * literally (not as bound values) so that the database can see that a query implies it.
 */
const MARKED = sql<SqlBool>`(rate_status <> 'healthy' OR por_until IS NOT NULL)`;
/** Test seqs kept in memory (~100 bytes each). */
const SEQ_CACHE = 250_000;

type Db = Store['db'];
type Trx = Transaction<SchemaTables>;
interface Repository {
  id: string;
  org: string;
  repo: Repo;
  settings: RepositorySettings;
  codeowners: CodeOwners | null;
}
/** What an upload needs to know of each of its tests: where its results go, and what detection had decided. */
type KnownCase = Pick<CaseRow, 'seq' | 'rate_status' | 'por_until'>;

/** Reads an upload's reports somewhere else (a worker thread); the service reads them itself without one. */
export type ReportReader = (task: IngestTask) => Promise<IngestOutcome>;

interface CaseRow {
  id: string;
  seq: number;
  repo_id: string;
  name: string;
  file: string | null;
  classname: string | null;
  parent: string | null;
  variant: string;
  first_seen_at: number;
  rate_status: string;
  rate_reason: string | null;
  rate_changed_at: number | null;
  por_since: number | null;
  por_until: number | null;
  por_reason: string | null;
  override: string | null;
  override_at: number | null;
  ticket: string | null;
}

function chunks<T>(items: readonly T[], size = CHUNK): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

const num = (value: unknown): number => Number(value);
const numOrNull = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));

/** Stored settings over the defaults, so settings added later get their default. */
function mergeSettings(base: RepositorySettings, patch: UpdateRepositorySettingsRequest['settings'] | Partial<RepositorySettings>): RepositorySettings {
  return {
    ...base,
    ...patch,
    pass_on_retry: { ...base.pass_on_retry, ...(patch.pass_on_retry ?? {}) },
    failure_rate: { ...base.failure_rate, ...(patch.failure_rate ?? {}) },
  } as RepositorySettings;
}

function toCaseRow(row: Record<string, unknown>): CaseRow {
  return {
    ...(row as unknown as CaseRow),
    seq: num(row.seq),
    first_seen_at: num(row.first_seen_at),
    rate_changed_at: numOrNull(row.rate_changed_at),
    por_since: numOrNull(row.por_since),
    por_until: numOrNull(row.por_until),
    override_at: numOrNull(row.override_at),
  };
}

function statusOf(row: CaseRow, now: number): EffectiveStatus {
  return effectiveStatus(
    {
      rateStatus: row.rate_status as TestStatus,
      rateReason: row.rate_reason,
      rateChangedAt: row.rate_changed_at,
      porUntil: row.por_until,
      porReason: row.por_reason,
      porSince: row.por_since,
      firstSeenAt: row.first_seen_at,
    },
    now,
  );
}

// ------------------------------------------------------------------------------------ paging

/** Opaque keyset page tokens over tests in arrival order: stable while uploads add tests (no offsets). */
interface Cursor {
  /** The page index the token leads to. */
  i: number;
  /** After this test seq (forwards) … */
  a?: number;
  /** … or before this test seq (backwards) … */
  b?: number;
  /** … or the last page. */
  l?: 1;
}

function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify(cursor), 'utf8').toString('base64url');
}

function decodeCursor(token: string | undefined): Cursor {
  if (!token) return { i: 0 };
  try {
    const c = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as Cursor;
    const valid =
      Number.isInteger(c.i) &&
      c.i >= 0 &&
      (c.a === undefined || Number.isSafeInteger(c.a)) &&
      (c.b === undefined || Number.isSafeInteger(c.b)) &&
      (c.l === undefined || c.l === 1);
    if (valid) return c;
  } catch {
    // fall through
  }
  throw badRequest('page_query.page_token: not a token this server gave out');
}

type CaseFilter = (eb: ExpressionBuilder<SchemaTables, 'test_cases'>) => Expression<SqlBool>;

async function pageOfCases(db: Db, filter: CaseFilter, query: PageQuery): Promise<{ rows: CaseRow[]; page: Page }> {
  const size = query.page_size;
  const cursor = decodeCursor(query.page_token);
  const countRow = await db
    .selectFrom('test_cases')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where(filter)
    .executeTakeFirstOrThrow();
  const total = num(countRow.n);
  const pages = Math.ceil(total / size);
  const base = db.selectFrom('test_cases').selectAll().where(filter);
  let rows: Record<string, unknown>[];
  let index = cursor.i;
  let more: boolean;
  if (cursor.l) {
    index = Math.max(pages - 1, 0);
    const lastSize = total - index * size;
    rows = (await base.orderBy('seq', 'desc').limit(Math.max(lastSize, 0)).execute()).reverse();
    more = false;
  } else if (cursor.b !== undefined) {
    rows = (await base.where('seq', '<', cursor.b).orderBy('seq', 'desc').limit(size).execute()).reverse();
    more = true;
  } else {
    const q = cursor.a !== undefined ? base.where('seq', '>', cursor.a) : base;
    rows = await q.orderBy('seq', 'asc').limit(size + 1).execute();
    more = rows.length > size;
    rows = rows.slice(0, size);
  }
  const cases = rows.map(toCaseRow);
  const first = cases[0]?.seq;
  const last = cases[cases.length - 1]?.seq;
  return {
    rows: cases,
    page: {
      total_rows: total,
      total_pages: pages,
      next_page_token: more && last !== undefined ? encodeCursor({ i: index + 1, a: last }) : '',
      prev_page_token: index > 0 && first !== undefined ? encodeCursor({ i: index - 1, b: first }) : '',
      last_page_token: pages > 0 ? encodeCursor({ i: pages - 1, l: 1 }) : '',
      page_index: index,
    },
  };
}

// ------------------------------------------------------------------------------------ service

/**
 * The flaky-test service: ingests uploads (parse, fold retries, store, detect — one transaction
 * per upload) and answers the v1 flaky-test operations from the stored results.
 */
export class FlakyService {
  private readonly db: Db;
  /** Test id → seq of stored tests: the pair never changes once committed, so uploads need not look it up. */
  private readonly seqOfId = new Map<string, number>();

  constructor(
    store: Store,
    private readonly now: () => number = Date.now,
    private readonly reader?: ReportReader,
  ) {
    this.db = store.db;
  }

  // -------------------------------------------------------------------------- repositories

  private toRepository(row: Record<string, unknown>): Repository {
    const stored = JSON.parse(String(row.settings)) as Partial<RepositorySettings>;
    return {
      id: String(row.id),
      org: String(row.org_slug),
      repo: { host: String(row.host), owner: String(row.owner), name: String(row.name) },
      settings: mergeSettings(DEFAULT_SETTINGS, stored),
      codeowners: typeof row.codeowners === 'string' && row.codeowners ? new CodeOwners(row.codeowners) : null,
    };
  }

  private async findRepository(db: Db | Trx, org: string, repo: Repo): Promise<Repository | null> {
    const row = await db
      .selectFrom('flaky_repositories')
      .selectAll()
      .where('org_slug', '=', org)
      .where('repo_key', '=', repoKey(repo))
      .executeTakeFirst();
    return row ? this.toRepository(row as unknown as Record<string, unknown>) : null;
  }

  private async requireRepository(org: string, repo: Repo): Promise<Repository> {
    const found = await this.findRepository(this.db, org, repo);
    if (!found) throw notFound(`repo: no test results for ${repoKey(repo)} in this organisation`);
    return found;
  }

  /** The repository's row, created with default settings on first use. */
  private async ensureRepository(trx: Trx, org: string, repo: Repo, at: number): Promise<Repository> {
    await trx
      .insertInto('organisations')
      .values({ slug: org, created_at: at })
      .onConflict((oc) => oc.column('slug').doNothing())
      .execute();
    await trx
      .insertInto('flaky_repositories')
      .values({
        id: randomUUID(),
        org_slug: org,
        repo_key: repoKey(repo),
        host: repo.host.toLowerCase(),
        owner: repo.owner,
        name: repo.name,
        settings: '{}',
        codeowners: null,
        created_at: at,
        updated_at: at,
      })
      .onConflict((oc) => oc.columns(['org_slug', 'repo_key']).doNothing())
      .execute();
    return (await this.findRepository(trx, org, repo))!;
  }

  async getSettings(org: string, repo: Repo): Promise<RepositorySettings> {
    return (await this.findRepository(this.db, org, repo))?.settings ?? DEFAULT_SETTINGS;
  }

  async updateSettings(org: string, input: UpdateRepositorySettingsRequest): Promise<RepositorySettings> {
    const at = this.now();
    return this.db.transaction().execute(async (trx) => {
      const repository = await this.ensureRepository(trx, org, input.repo, at);
      const next = mergeSettings(repository.settings, input.settings);
      const fr = next.failure_rate;
      if (fr.flaky_resolution > fr.flaky_activation) {
        throw badRequest('settings.failure_rate.flaky_resolution: must not be above flaky_activation');
      }
      if (fr.broken_threshold < fr.flaky_activation) {
        throw badRequest('settings.failure_rate.broken_threshold: must not be below flaky_activation');
      }
      await trx
        .updateTable('flaky_repositories')
        .set({ settings: JSON.stringify(next), updated_at: at })
        .where('id', '=', repository.id)
        .execute();
      return next;
    });
  }

  // -------------------------------------------------------------------------------- upload

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

  /** The first of `n` new sequence numbers of `name` (tests or uploads), in arrival order. */
  private async nextSeqs(trx: Trx, name: 'test' | 'upload', n: number): Promise<number> {
    const row = await trx
      .updateTable('flaky_counters')
      .set((eb) => ({ value: eb('value', '+', n) }))
      .where('name', '=', name)
      .returning('value')
      .executeTakeFirstOrThrow();
    return num(row.value) - n + 1;
  }

  async upload(org: string, input: UploadTestResultsRequest): Promise<UploadTestResultsResponse> {
    const results = await this.readReports(org, input);
    const variant = input.variant ?? '';
    const now = this.now();
    let earliest = Infinity;
    for (const r of results) if (r.timestamp !== null && r.timestamp <= now + HOUR && r.timestamp < earliest) earliest = r.timestamp;
    const startedAt = input.started_at ? Date.parse(input.started_at) : earliest !== Infinity ? earliest : now;
    const atOf = (r: IngestResult) => (input.started_at ? startedAt : (r.timestamp ?? startedAt));
    const counts = countResults(results);
    const uploadId = randomUUID();
    const sha = input.sha.toLowerCase();
    const prNumber = input.pr_number ?? null;

    const { response, added } = await this.db.transaction().execute(async (trx) => {
      const repository = (await this.findRepository(trx, org, input.repo)) ?? (await this.ensureRepository(trx, org, input.repo, now));
      const { settings } = repository;
      if (input.codeowners !== undefined) {
        await trx
          .updateTable('flaky_repositories')
          .set({ codeowners: input.codeowners, updated_at: now })
          .where('id', '=', repository.id)
          .execute();
      }
      const ran = counts.tests - counts.skipped;
      const excluded =
        ran >= settings.infra_failure_min_tests && counts.failed / Math.max(ran, 1) >= settings.infra_failure_threshold;
      const stable = branchMatcher(settings.failure_rate.branches)(input.branch);

      const known = await this.knownCases(trx, results);
      const fresh = results.filter((r) => !known.has(r.id));
      if (fresh.length) {
        let seq = await this.nextSeqs(trx, 'test', fresh.length);
        for (const r of fresh) known.set(r.id, { seq: seq++, rate_status: 'healthy', por_until: null });
      }
      for (const batch of chunks(fresh)) {
        await trx
          .insertInto('test_cases')
          .values(
            batch.map((r) => ({
              id: r.id,
              seq: known.get(r.id)!.seq,
              repo_id: repository.id,
              name: r.name,
              file: r.file,
              classname: r.classname,
              parent: r.parent,
              variant: r.variant,
              first_seen_at: atOf(r),
              rate_status: 'healthy',
            })),
          )
          .execute();
      }

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
        excluded || !settings.pass_on_retry.enabled
          ? []
          : await trx
              .selectFrom('test_uploads')
              .select(['seq', 'first_at', 'last_at'])
              .where('repo_id', '=', repository.id)
              .where('sha', '=', sha)
              .where('excluded', '=', 0)
              .execute();
      const uploadSeq = await this.nextSeqs(trx, 'upload', 1);
      await trx
        .insertInto('test_uploads')
        .values({
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
          excluded: excluded ? 1 : 0,
        })
        .execute();
      for (const batch of chunks(tested)) {
        await trx
          .insertInto('flaky_results')
          .values(
            batch.map((r) => ({
              test_seq: known.get(r.id)!.seq,
              at: atOf(r),
              upload_seq: uploadSeq,
              outcome: r.outcome,
              stable: stable ? 1 : 0,
              excluded: excluded ? 1 : 0,
              duration_ms: r.durationMs,
              attempts: r.attempts,
            })),
          )
          .execute();
      }
      for (const batch of chunks(tested.filter((r) => r.outcome !== 'passed'))) {
        await trx
          .insertInto('flaky_failures')
          .values(
            batch.map((r) => ({
              test_seq: known.get(r.id)!.seq,
              at: atOf(r),
              upload_seq: uploadSeq,
              repo_id: repository.id,
              pr_number: prNumber,
              failure_key: r.failureKey,
              failure_line: r.failureLine,
            })),
          )
          .execute();
      }
      if (!excluded) await this.detect(trx, repository, input, tested, stable, atOf, known, sameCommit);
      return { response, added: fresh.map((r) => [r.id, known.get(r.id)!.seq] as const) };
    });
    for (const [id, seq] of added) this.rememberSeq(id, seq);
    return response;
  }

  /** Keeps the seq of a stored test (the oldest go first past SEQ_CACHE tests). */
  private rememberSeq(id: string, seq: number): void {
    this.seqOfId.set(id, seq);
    if (this.seqOfId.size > SEQ_CACHE) this.seqOfId.delete(this.seqOfId.keys().next().value!);
  }

  /**
   * The stored tests among an upload's, with their seq and what detection decided so far. Tests
   * whose seq is known need only be read if a monitor ever marked them (the partial index
   * test_cases_marked holds those); the others are read by id.
   */
  private async knownCases(trx: Trx, results: readonly IngestResult[]): Promise<Map<string, KnownCase>> {
    const known = new Map<string, KnownCase>();
    const idOfSeq = new Map<number, string>();
    for (const r of results) {
      const seq = this.seqOfId.get(r.id);
      if (seq === undefined) continue;
      idOfSeq.set(seq, r.id);
      known.set(r.id, { seq, rate_status: 'healthy', por_until: null });
    }
    for (const seqs of chunks([...idOfSeq.keys()])) {
      const rows = await trx
        .selectFrom('test_cases')
        .select(['seq', 'rate_status', 'por_until'])
        .where('seq', 'in', seqs)
        .where(MARKED)
        .execute();
      for (const row of rows) {
        const seq = num(row.seq);
        known.set(idOfSeq.get(seq)!, { seq, rate_status: row.rate_status, por_until: numOrNull(row.por_until) });
      }
    }
    for (const ids of chunks(results.filter((r) => !known.has(r.id)).map((r) => r.id))) {
      const rows = await trx.selectFrom('test_cases').select(['id', 'seq', 'rate_status', 'por_until']).where('id', 'in', ids).execute();
      for (const row of rows) {
        known.set(row.id, { seq: num(row.seq), rate_status: row.rate_status, por_until: numOrNull(row.por_until) });
        this.rememberSeq(row.id, num(row.seq));
      }
    }
    return known;
  }

  /** Runs the monitors for the tests of one upload and stores what changed. */
  private async detect(
    trx: Trx,
    repository: Repository,
    input: UploadTestResultsRequest,
    tested: readonly IngestResult[],
    stable: boolean,
    atOf: (r: IngestResult) => number,
    known: ReadonlyMap<string, KnownCase>,
    sameCommit: ReadonlyArray<{ seq: number; first_at: number; last_at: number }>,
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
        for (const seqs of chunks(seen)) {
          const others = await trx
            .selectFrom('flaky_results')
            .select(['test_seq', 'outcome'])
            .where('test_seq', 'in', seqs)
            .where('at', '>=', earlier.first_at)
            .where('at', '<=', earlier.last_at)
            .where('upload_seq', '=', earlier.seq)
            .execute();
          for (const o of others) {
            const seq = num(o.test_seq);
            if (o.outcome === 'flaky' || passedHere.get(seq) !== (o.outcome === 'passed')) evidence.add(seq);
          }
        }
      }
    }

    // Failure rate on stable branches over the window ending at this upload.
    const rates = new Map<number, { runs: number; fails: number }>();
    const fr = settings.failure_rate;
    if (stable && fr.enabled && tested.length) {
      let until = -Infinity;
      for (const r of tested) until = Math.max(until, atOf(r));
      const since = until - fr.window_hours * HOUR;
      // A healthy test with no failure in the window stays healthy (a 0 % rate is below any
      // activation above 0): only the tests that failed in it, or are flaky or broken, are counted.
      let counted = tested;
      if (fr.flaky_activation > 0) {
        const failed = new Set<number>();
        for (const seqs of chunks(tested.map(seqOf))) {
          const rows = await trx
            .selectFrom('flaky_failures')
            .select('test_seq')
            .distinct()
            .where('test_seq', 'in', seqs)
            .where('at', '>', since)
            .where('at', '<=', until)
            .execute();
          for (const row of rows) failed.add(num(row.test_seq));
        }
        counted = tested.filter((r) => failed.has(seqOf(r)) || known.get(r.id)!.rate_status !== 'healthy');
      }
      for (const batch of chunks(counted)) {
        const rows = await trx
          .selectFrom('flaky_results')
          .select((eb) => [
            'test_seq',
            eb.fn.countAll<number>().as('runs'),
            eb.fn.sum<number>(eb.case().when('outcome', '!=', 'passed').then(1).else(0).end()).as('fails'),
          ])
          .where('test_seq', 'in', batch.map(seqOf))
          .where('at', '>', since)
          .where('at', '<=', until)
          .where('stable', '=', 1)
          .where('excluded', '=', 0)
          .groupBy('test_seq')
          .execute();
        for (const row of rows) rates.set(num(row.test_seq), { runs: num(row.runs), fails: num(row.fails) });
      }
    }

    for (const r of tested) {
      const before = known.get(r.id)!;
      const at = atOf(r);
      const patch: Partial<Pick<CaseRow, 'por_since' | 'por_until' | 'por_reason' | 'rate_status' | 'rate_changed_at' | 'rate_reason'>> = {};
      if (evidence.has(before.seq)) {
        const until = at + settings.pass_on_retry.recovery_days * DAY;
        const active = before.por_until !== null && before.por_until > at;
        if (!active) {
          patch.por_since = at;
          patch.por_reason = passOnRetryReason(sha, input.branch);
        }
        if (before.por_until === null || before.por_until < until) patch.por_until = until;
      }
      const rate = rates.get(before.seq);
      if (rate) {
        const current = before.rate_status as TestStatus;
        const next = rateStatus(current, rate.runs, rate.fails, settings.failure_rate);
        if (next !== current) {
          patch.rate_status = next;
          patch.rate_changed_at = at;
          patch.rate_reason = rateReason(next, rate.runs, rate.fails, settings.failure_rate);
        } else if (next !== 'healthy' && rate.runs >= settings.failure_rate.min_sample) {
          // Keep the figures of an active monitor current.
          patch.rate_reason = rateReason(next, rate.runs, rate.fails, settings.failure_rate);
        }
      }
      if (Object.keys(patch).length) {
        await trx.updateTable('test_cases').set(patch).where('id', '=', r.id).execute();
      }
    }
  }

  // ------------------------------------------------------------------------------- reading

  /**
   * The repository's tests in any of `parts`, as `repo_id = ? AND id IN (part₁ UNION ALL part₂ …)`:
   * each part reads its own index, where one OR over the repository's tests would scan them all.
   */
  private testsIn(repoId: string, parts: CaseFilter[]): CaseFilter {
    return (eb) => {
      const part = (filter: CaseFilter) => eb.selectFrom('test_cases').select('seq').where('repo_id', '=', repoId).where(filter);
      const [first, ...rest] = parts.map(part);
      return eb.and([eb('repo_id', '=', repoId), eb('seq', 'in', rest.reduce((union, p) => union.unionAll(p), first))]);
    };
  }

  /** Flaky now: the failure-rate monitor says flaky, or it says healthy and pass-on-retry is active. */
  private flakyParts(now: number, extra: CaseFilter = (eb) => eb.lit(true)): CaseFilter[] {
    return [
      (eb) => eb.and([extra(eb), eb('rate_status', '=', 'flaky')]),
      (eb) => eb.and([extra(eb), eb('rate_status', '=', 'healthy'), eb('por_until', '>', now)]),
    ];
  }

  private isQuarantined(repository: Repository, row: CaseRow, status: TestStatus): boolean {
    const { settings } = repository;
    if (!settings.quarantining_enabled) return false;
    if (row.override === 'ALWAYS_QUARANTINE') return true;
    if (row.override === 'NEVER_QUARANTINE') return false;
    return settings.auto_quarantine_flaky && status === 'flaky';
  }

  private quarantineFilter(repository: Repository, now: number): CaseFilter {
    const { settings } = repository;
    if (!settings.quarantining_enabled) return () => sql<SqlBool>`1 = 0`;
    const always: CaseFilter = (eb) => eb('override', '=', 'ALWAYS_QUARANTINE');
    const auto = settings.auto_quarantine_flaky ? this.flakyParts(now, (eb) => eb('override', 'is', null)) : [];
    return this.testsIn(repository.id, [always, ...auto]);
  }

  private htmlUrls(repository: Repository, row: CaseRow): { repository: { html_url: string }; html_url: string } {
    const { host, owner, name } = repository.repo;
    const repoUrl = `https://${host}/${owner}/${name}`;
    const file = row.file?.replace(/^\.?\/+/, '');
    return { repository: { html_url: repoUrl }, html_url: file && !file.startsWith('../') ? `${repoUrl}/blob/HEAD/${file}` : repoUrl };
  }

  private ticketUrl(repository: Repository, ticket: string): string {
    const { host, owner, name } = repository.repo;
    return repository.settings.ticket_url_template
      .replaceAll('{host}', host)
      .replaceAll('{owner}', owner)
      .replaceAll('{name}', name)
      .replaceAll('{id}', encodeURIComponent(ticket));
  }

  /** Distinct pull requests each test failed on in the last 7 days, by test seq. */
  private async impactedPullRequests(seqs: number[], now: number): Promise<Map<number, number>> {
    const out = new Map<number, number>();
    if (!seqs.length) return out;
    const rows = await this.db
      .selectFrom('flaky_failures')
      .select((eb) => ['test_seq', eb.fn.count<number>('pr_number').distinct().as('prs')])
      .where('test_seq', 'in', seqs)
      .where('at', '>=', now - 7 * DAY)
      .where('at', '<=', now)
      .where('pr_number', 'is not', null)
      .groupBy('test_seq')
      .execute();
    for (const row of rows) out.set(num(row.test_seq), num(row.prs));
    return out;
  }

  private unhealthyCase(repository: Repository, row: CaseRow, prs: Map<number, number>, now: number): UnhealthyTestCase {
    const status = statusOf(row, now);
    const test: UnhealthyTestCase = {
      id: row.id,
      ...this.htmlUrls(repository, row),
      name: row.name,
      variant: row.variant,
      status: { value: status.value, reason: status.reason, timestamp: isoTime(status.since) },
      codeowners: repository.codeowners?.ownersOf(row.file) ?? [],
      pull_requests_impacted_last_7d: prs.get(row.seq) ?? 0,
      quarantined: this.isQuarantined(repository, row, status.value),
    };
    if (row.file) test.file_path = row.file;
    if (row.parent) test.parent = row.parent;
    if (row.classname) test.classname = row.classname;
    if (row.ticket) test.ticket = { html_url: this.ticketUrl(repository, row.ticket) };
    return test;
  }

  private async unhealthyCases(repository: Repository, rows: CaseRow[], now: number): Promise<UnhealthyTestCase[]> {
    const prs = await this.impactedPullRequests(rows.map((r) => r.seq), now);
    return rows.map((row) => this.unhealthyCase(repository, row, prs, now));
  }

  private async detailedCases(repository: Repository, rows: CaseRow[], now: number): Promise<DetailedTestCase[]> {
    const seqs = rows.map((r) => r.seq);
    const base = await this.unhealthyCases(repository, rows, now);
    const rates = new Map<number, { runs7: number; fails7: number; runs1: number; fails1: number }>();
    const failures = new Map<number, DetailedTestCase['most_common_failures']>();
    if (seqs.length) {
      const day = now - DAY;
      const rateRows = await this.db
        .selectFrom('flaky_results')
        .select((eb) => {
          const failed = eb.case().when('outcome', '!=', 'passed').then(1).else(0).end();
          return [
            'test_seq',
            eb.fn.countAll<number>().as('runs7'),
            eb.fn.sum<number>(failed).as('fails7'),
            eb.fn.sum<number>(eb.case().when('at', '>=', day).then(1).else(0).end()).as('runs1'),
            eb.fn
              .sum<number>(eb.case().when(eb.and([eb('at', '>=', day), eb('outcome', '!=', 'passed')])).then(1).else(0).end())
              .as('fails1'),
          ];
        })
        .where('test_seq', 'in', seqs)
        .where('at', '>=', now - 7 * DAY)
        .where('at', '<=', now)
        .where('excluded', '=', 0)
        .groupBy('test_seq')
        .execute();
      for (const r of rateRows) {
        rates.set(num(r.test_seq), { runs7: num(r.runs7), fails7: num(r.fails7), runs1: num(r.runs1), fails1: num(r.fails1) });
      }
      const failureRows = await this.db
        .selectFrom('flaky_failures')
        .select((eb) => ['test_seq', 'failure_key', eb.fn.countAll<number>().as('n'), eb.fn.max('at').as('last')])
        .where('test_seq', 'in', seqs)
        .where('at', '>=', now - 7 * DAY)
        .where('at', '<=', now)
        .where('failure_key', 'is not', null)
        .groupBy(['test_seq', 'failure_key'])
        .execute();
      for (const r of failureRows) {
        const seq = num(r.test_seq);
        const list = failures.get(seq) ?? [];
        list.push({ summary: String(r.failure_key), occurrence_count: num(r.n), last_occurrence: isoTime(num(r.last)) });
        failures.set(seq, list);
      }
    }
    const rate = (fails: number, runs: number) => (runs ? Math.round((fails / runs) * 10_000) / 10_000 : 0);
    return base.map((test, i) => {
      const seq = rows[i].seq;
      const r = rates.get(seq) ?? { runs7: 0, fails7: 0, runs1: 0, fails1: 0 };
      const top = (failures.get(seq) ?? [])
        .sort((a, b) => b.occurrence_count - a.occurrence_count || (b.last_occurrence ?? '').localeCompare(a.last_occurrence ?? ''))
        .slice(0, TOP_FAILURES);
      return {
        ...test,
        most_common_failures: top,
        failure_rate_last_7d: rate(r.fails7, r.runs7),
        failure_rate_last_24h: rate(r.fails1, r.runs1),
      };
    });
  }

  async listFailing(org: string, input: ListFailingTestsRequest) {
    const repository = await this.findRepository(this.db, org, input.repo);
    const start = Date.parse(input.start_time);
    const end = Date.parse(input.end_time);
    if (!repository) return { tests: [], page: emptyPage() };
    const failedInWindow = this.db
      .selectFrom('flaky_failures')
      .select('test_seq')
      .where('repo_id', '=', repository.id)
      .where('at', '>=', start)
      .where('at', '<', end);
    const { rows, page } = await pageOfCases(
      this.db,
      (eb) => eb.and([eb('repo_id', '=', repository.id), eb('seq', 'in', failedInWindow)]),
      input.page_query,
    );
    return { tests: await this.detailedCases(repository, rows, this.now()), page };
  }

  async listUnhealthy(org: string, input: ListUnhealthyTestsRequest) {
    const repository = await this.findRepository(this.db, org, input.repo);
    if (!repository) return { tests: [], page: emptyPage() };
    const now = this.now();
    const { rows, page } = await pageOfCases(
      this.db,
      input.status === 'BROKEN'
        ? (eb) => eb.and([eb('repo_id', '=', repository.id), eb('rate_status', '=', 'broken')])
        : this.testsIn(repository.id, this.flakyParts(now)),
      input.page_query,
    );
    return { tests: await this.unhealthyCases(repository, rows, now), page };
  }

  private async findCase(repository: Repository, id: string): Promise<CaseRow | null> {
    const row = await this.db
      .selectFrom('test_cases')
      .selectAll()
      .where('id', '=', id)
      .where('repo_id', '=', repository.id)
      .executeTakeFirst();
    return row ? toCaseRow(row as unknown as Record<string, unknown>) : null;
  }

  async details(org: string, input: GetTestDetailsRequest) {
    const repository = await this.findRepository(this.db, org, input.repo);
    const row = repository && (await this.findCase(repository, input.test_id));
    if (!repository || !row) throw notFound(`test_id: no test ${input.test_id} in ${repoKey(input.repo)}`);
    const [test] = await this.detailedCases(repository, [row], this.now());
    return { test };
  }

  async listQuarantined(org: string, input: ListQuarantinedTestsRequest) {
    const repository = await this.findRepository(this.db, org, input.repo);
    if (!repository) return { quarantined_tests: [], page: emptyPage() };
    const now = this.now();
    const { rows, page } = await pageOfCases(this.db, this.quarantineFilter(repository, now), input.page_query);
    const quarantined_tests: QuarantinedTest[] = rows.map((row) => {
      const status = statusOf(row, now);
      const always = row.override === 'ALWAYS_QUARANTINE';
      return {
        name: row.name,
        parent: row.parent,
        file: row.file,
        classname: row.classname,
        status: status.value.toUpperCase() as QuarantinedTest['status'],
        codeowners: repository.codeowners?.ownersOf(row.file) ?? [],
        quarantine_setting: always ? 'ALWAYS_QUARANTINE' : 'AUTO_QUARANTINE',
        quarantined_at: isoTime(always && row.override_at !== null ? row.override_at : status.since),
        status_last_updated_at: isoTime(status.since),
        test_case_id: row.id,
        variant: row.variant,
      };
    });
    return { quarantined_tests, page };
  }

  async linkTicket(org: string, input: LinkTicketRequest): Promise<Record<string, never>> {
    const repository = await this.findRepository(this.db, org, input.repo);
    const row = repository && (await this.findCase(repository, input.test_case_id));
    if (!repository || !row) throw notFound(`test_case_id: no test ${input.test_case_id} in ${repoKey(input.repo)}`);
    await this.db.updateTable('test_cases').set({ ticket: input.external_ticket_id }).where('id', '=', row.id).execute();
    return {};
  }

  async setQuarantine(org: string, input: SetTestQuarantineRequest): Promise<Record<string, never>> {
    const repository = await this.requireRepository(org, input.repo);
    const row = await this.findCase(repository, input.test_id);
    if (!row) throw notFound(`test_id: no test ${input.test_id} in ${repoKey(input.repo)}`);
    const override = input.setting === 'AUTO' ? null : input.setting;
    await this.db
      .updateTable('test_cases')
      .set({ override, override_at: override ? this.now() : null })
      .where('id', '=', row.id)
      .execute();
    return {};
  }

  async checkQuarantine(org: string, input: CheckQuarantineRequest): Promise<CheckQuarantineResponse> {
    const repository = await this.findRepository(this.db, org, input.repo);
    if (!repository || !repository.settings.quarantining_enabled) {
      return { quarantining_enabled: Boolean(repository?.settings.quarantining_enabled), quarantined_test_ids: [] };
    }
    const now = this.now();
    const quarantined: string[] = [];
    const filter = this.quarantineFilter(repository, now);
    for (const ids of chunks([...new Set(input.test_ids.map((id) => id.toLowerCase()))])) {
      const rows = await this.db
        .selectFrom('test_cases')
        .select('id')
        .where((eb) => eb.and([filter(eb), eb('id', 'in', ids)]))
        .execute();
      quarantined.push(...rows.map((r) => r.id));
    }
    return { quarantining_enabled: true, quarantined_test_ids: quarantined };
  }
}

export function emptyPage(): Page {
  return { total_rows: 0, total_pages: 0, next_page_token: '', prev_page_token: '', last_page_token: '', page_index: 0 };
}
