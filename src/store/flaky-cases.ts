/**
 * The flaky-test store's tests as the API reads them (`store.flaky.cases`): lists and counts of a
 * set of tests, one test's rates and failure groups, a commit's results, and what a person sets
 * on a test (ticket, quarantine override).
 */
import { sql, type SqlBool } from 'kysely';
import type { QuarantineOverride } from '../flaky/quarantine.js';
import type { CaseRow, CaseSet, ExcludedUploadRow, FailureGroup, RecentRates } from './flaky-rows.js';
import {
  NOT_HEALTHY,
  num,
  numOrNull,
  POR_SET,
  toCaseRow,
  type CaseFilter,
  type FlakyHandle,
} from './flaky-sql.js';

export class FlakyCases {
  constructor(private readonly h: FlakyHandle) {}

  // ---------------------------------------------------------------------- reading

  /**
   * What CI uploaded for one commit (the flake-aware merge queue reads a test commit's
   * results): every upload's job, and every test that failed in an upload (failed for good, not
   * passed on a retry in it), with the job of that upload. Through `test_uploads (repo_id, sha)`,
   * the failures' `(repo_id, at, …)` index inside each upload's time span, and the results' index.
   */
  async resultsOfCommit(
    repoId: string,
    sha: string,
  ): Promise<{
    uploads: { seq: number; job: string | null }[];
    failed: {
      uploadSeq: number;
      id: string;
      name: string;
      parent: string | null;
      file: string | null;
      classname: string | null;
    }[];
  }> {
    const uploads = await this.h.db
      .selectFrom('test_uploads')
      .select(['seq', 'job'])
      .where('repo_id', '=', repoId)
      .where('sha', '=', sha)
      .orderBy('seq')
      .execute();
    if (uploads.length === 0) return { uploads: [], failed: [] };
    const failed = await this.h.db
      .selectFrom('test_uploads as u')
      .innerJoin('flaky_failures as f', (j) =>
        j
          .onRef('f.repo_id', '=', 'u.repo_id')
          .onRef('f.upload_seq', '=', 'u.seq')
          .onRef('f.at', '>=', 'u.first_at')
          .onRef('f.at', '<=', 'u.last_at'),
      )
      .innerJoin('flaky_results as r', (j) =>
        j
          .onRef('r.test_seq', '=', 'f.test_seq')
          .onRef('r.at', '=', 'f.at')
          .onRef('r.upload_seq', '=', 'u.seq')
          .on('r.outcome', '=', 'failed'),
      )
      .innerJoin('test_cases as c', (j) =>
        j.onRef('c.seq', '=', 'f.test_seq').onRef('c.repo_id', '=', 'u.repo_id'),
      )
      .select(['u.seq as upload_seq', 'c.id', 'c.name', 'c.parent', 'c.file', 'c.classname'])
      .where('u.repo_id', '=', repoId)
      .where('u.sha', '=', sha)
      .orderBy('u.seq')
      .orderBy('c.seq')
      .execute();
    return {
      uploads: uploads.map((u) => ({ seq: num(u.seq), job: u.job })),
      failed: failed.map((f) => ({
        uploadSeq: num(f.upload_seq),
        id: f.id,
        name: f.name,
        parent: f.parent,
        file: f.file,
        classname: f.classname,
      })),
    };
  }

  /**
   * The repository's tests in any of `parts`, as `repo_id = ? AND seq IN (part₁ UNION ALL part₂ …)`:
   * each part reads its own index, where one OR over the repository's tests would scan them all.
   */
  private testsIn(repoId: string, parts: CaseFilter[]): CaseFilter {
    return (eb) => {
      if (!parts.length) return sql<SqlBool>`1 = 0`;
      const part = (filter: CaseFilter) =>
        eb.selectFrom('test_cases').select('seq').where('repo_id', '=', repoId).where(filter);
      const [first, ...rest] = parts.map(part);
      return eb.and([
        eb('repo_id', '=', repoId),
        eb(
          'seq',
          'in',
          rest.reduce((union, p) => union.unionAll(p), first),
        ),
      ]);
    };
  }

  /** Flaky at `now` (effectiveStatus): the failure-rate monitor says flaky, or healthy with pass-on-retry active. */
  private flakyParts(now: number, extra: CaseFilter = (eb) => eb.lit(true)): CaseFilter[] {
    return [
      (eb) => eb.and([extra(eb), NOT_HEALTHY, eb('rate_status', '=', 'flaky')]),
      (eb) => eb.and([extra(eb), eb('rate_status', '=', 'healthy'), POR_SET, eb('por_until', '>', now)]),
    ];
  }

  private filterOf(set: CaseSet): CaseFilter {
    switch (set.kind) {
      case 'failedBetween': {
        const failed = this.h.db
          .selectFrom('flaky_failures')
          .select('test_seq')
          .where('repo_id', '=', set.repoId)
          .where('at', '>=', set.start)
          .where('at', '<', set.end);
        return (eb) => eb.and([eb('repo_id', '=', set.repoId), eb('seq', 'in', failed)]);
      }
      case 'broken':
        return (eb) =>
          eb.and([eb('repo_id', '=', set.repoId), NOT_HEALTHY, eb('rate_status', '=', 'broken')]);
      case 'flaky':
        return this.testsIn(set.repoId, this.flakyParts(set.now));
      case 'quarantined': {
        // An override lapses at its override_until (quarantine.ts, overrideAt): from then the
        // test counts as one without an override.
        const parts = set.matches.flatMap((m): CaseFilter[] => {
          const overridden: CaseFilter[] =
            m.override === null
              ? [
                  (eb) => eb('override', 'is', null),
                  (eb) => eb.and([eb('override', 'is not', null), eb('override_until', '<=', set.now)]),
                ]
              : [
                  (eb) =>
                    eb.and([
                      eb('override', '=', m.override),
                      eb.or([eb('override_until', 'is', null), eb('override_until', '>', set.now)]),
                    ]),
                ];
          return overridden.flatMap((o) => (m.flakyOnly ? this.flakyParts(set.now, o) : [o]));
        });
        return this.testsIn(set.repoId, parts);
      }
    }
  }

  async countCases(set: CaseSet): Promise<number> {
    const row = await this.h.db
      .selectFrom('test_cases')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where(this.filterOf(set))
      .executeTakeFirstOrThrow();
    return num(row.n);
  }

  /** Up to `limit` tests of the set in arrival order: after seq `after` (or from the start), or the last ones before seq `before` (or the very last). */
  async casesInOrder(
    set: CaseSet,
    range: { after?: number; before?: number; last?: boolean },
    limit: number,
  ): Promise<CaseRow[]> {
    const base = this.h.db.selectFrom('test_cases').selectAll().where(this.filterOf(set));
    if (range.last || range.before !== undefined) {
      const q = range.before !== undefined ? base.where('seq', '<', range.before) : base;
      return (await q.orderBy('seq', 'desc').limit(limit).execute()).reverse().map(toCaseRow);
    }
    const q = range.after !== undefined ? base.where('seq', '>', range.after) : base;
    return (await q.orderBy('seq', 'asc').limit(limit).execute()).map(toCaseRow);
  }

  /** Which of these test ids are in the set. */
  async idsIn(set: CaseSet, ids: readonly string[]): Promise<string[]> {
    const filter = this.filterOf(set);
    const out: string[] = [];
    await this.h.inChunks(ids, this.h.flavour.keysPerList, async (chunk) => {
      const rows = await this.h.db
        .selectFrom('test_cases')
        .select('id')
        .where((eb) => eb.and([filter(eb), eb('id', 'in', chunk)]))
        .execute();
      out.push(...rows.map((r) => r.id));
    });
    return out;
  }

  async findCase(repoId: string, id: string): Promise<CaseRow | null> {
    const row = await this.h.db
      .selectFrom('test_cases')
      .selectAll()
      .where('id', '=', id)
      .where('repo_id', '=', repoId)
      .executeTakeFirst();
    return row ? toCaseRow(row) : null;
  }

  async setTicket(id: string, ticket: string): Promise<void> {
    await this.h.db.updateTable('test_cases').set({ ticket }).where('id', '=', id).execute();
  }

  /** Sets (or, with null, removes) a test's override, with when, until when, by whom and why. */
  async setOverride(
    id: string,
    value: QuarantineOverride | null,
    at: number | null,
    about: { until: number | null; owner: string | null; reason: string | null } = {
      until: null,
      owner: null,
      reason: null,
    },
  ): Promise<void> {
    await this.h.db
      .updateTable('test_cases')
      .set({
        override: value,
        override_at: at,
        override_until: value ? about.until : null,
        override_owner: value ? about.owner : null,
        override_reason: value ? about.reason : null,
        // A new override: its end, when it comes, is announced anew (flaky-lapses.ts).
        override_lapse_sent: null,
      })
      .where('id', '=', id)
      .execute();
  }

  /** Distinct pull requests each test failed on in [since, until], by test seq. */
  async impactedPullRequests(
    seqs: readonly number[],
    since: number,
    until: number,
  ): Promise<Map<number, number>> {
    const out = new Map<number, number>();
    if (!seqs.length) return out;
    const rows = await this.h.db
      .selectFrom('flaky_failures')
      .select((eb) => ['test_seq', eb.fn.count<number>('pr_number').distinct().as('prs')])
      .where('test_seq', 'in', seqs)
      .where('at', '>=', since)
      .where('at', '<=', until)
      .where('pr_number', 'is not', null)
      .groupBy('test_seq')
      .execute();
    for (const row of rows) out.set(num(row.test_seq), num(row.prs));
    return out;
  }

  /** Runs and failures (not excluded) in [since, until] and in [day, until], by test seq. */
  async recentRates(
    seqs: readonly number[],
    since: number,
    day: number,
    until: number,
  ): Promise<Map<number, RecentRates>> {
    const out = new Map<number, RecentRates>();
    if (!seqs.length) return out;
    const rows = await this.h.db
      .selectFrom('flaky_results')
      .select((eb) => {
        const failed = eb.case().when('outcome', '!=', 'passed').then(1).else(0).end();
        return [
          'test_seq',
          eb.fn.countAll<number>().as('runs7'),
          eb.fn.sum<number>(failed).as('fails7'),
          eb.fn.sum<number>(eb.case().when('at', '>=', day).then(1).else(0).end()).as('runs1'),
          eb.fn
            .sum<number>(
              eb
                .case()
                .when(eb.and([eb('at', '>=', day), eb('outcome', '!=', 'passed')]))
                .then(1)
                .else(0)
                .end(),
            )
            .as('fails1'),
        ];
      })
      .where('test_seq', 'in', seqs)
      .where('at', '>=', since)
      .where('at', '<=', until)
      .where('excluded', '=', 0)
      .groupBy('test_seq')
      .execute();
    for (const r of rows)
      out.set(num(r.test_seq), {
        runs7: num(r.runs7),
        fails7: num(r.fails7),
        runs1: num(r.runs1),
        fails1: num(r.fails1),
      });
    return out;
  }

  /**
   * One test's runs and failures (not excluded) and its runs in excluded uploads, in [since, until],
   * by UTC day number (epoch ms / 86 400 000): integer division of the bigint `at`, the same on
   * SQLite and PostgreSQL. Days without runs are absent.
   */
  async dailyRates(
    seq: number,
    since: number,
    until: number,
  ): Promise<Map<number, { runs: number; fails: number; excluded: number }>> {
    const day = sql<number>`at / 86400000`;
    const rows = await this.h.db
      .selectFrom('flaky_results')
      .select((eb) => [
        day.as('day'),
        eb.fn.sum<number>(eb.case().when('excluded', '=', 0).then(1).else(0).end()).as('runs'),
        eb.fn
          .sum<number>(
            eb
              .case()
              .when(eb.and([eb('excluded', '=', 0), eb('outcome', '!=', 'passed')]))
              .then(1)
              .else(0)
              .end(),
          )
          .as('fails'),
        eb.fn.sum<number>(eb.case().when('excluded', '=', 0).then(0).else(1).end()).as('excluded'),
      ])
      .where('test_seq', '=', seq)
      .where('at', '>=', since)
      .where('at', '<=', until)
      .groupBy(day)
      .execute();
    const out = new Map<number, { runs: number; fails: number; excluded: number }>();
    for (const r of rows)
      out.set(num(r.day), { runs: num(r.runs), fails: num(r.fails), excluded: num(r.excluded) });
    return out;
  }

  /**
   * The uploads excluded from detection (infrastructure failure protection) that have a result of
   * this test in [since, until], newest first, at most `limit`, and how many there are: through the
   * results' (test, time) index, whose rows carry `excluded`, then each upload by its seq.
   */
  async excludedUploads(
    seq: number,
    since: number,
    until: number,
    limit: number,
  ): Promise<{ total: number; uploads: ExcludedUploadRow[] }> {
    const base = this.h.db
      .selectFrom('flaky_results as r')
      .where('r.test_seq', '=', seq)
      .where('r.at', '>=', since)
      .where('r.at', '<=', until)
      .where('r.excluded', '=', 1);
    const [count, rows] = await Promise.all([
      base.select((eb) => eb.fn.count<number>('r.upload_seq').distinct().as('n')).executeTakeFirstOrThrow(),
      base
        .innerJoin('test_uploads as u', 'u.seq', 'r.upload_seq')
        .select([
          'u.id',
          'u.branch',
          'u.sha',
          'u.job',
          'u.pr_number',
          'u.started_at',
          'u.counts',
          'r.outcome',
          'r.at',
        ])
        .orderBy('r.at', 'desc')
        .limit(limit)
        .execute(),
    ]);
    return {
      total: num(count.n),
      uploads: rows.map((r) => ({
        id: r.id,
        branch: r.branch,
        sha: r.sha,
        job: r.job,
        prNumber: numOrNull(r.pr_number),
        startedAt: num(r.started_at),
        counts: r.counts,
        outcome: r.outcome,
      })),
    };
  }

  /**
   * Of these tests' failures in [since, until] (not excluded), how many a pass of the same test on
   * the same commit followed: a result that failed and passed in one upload (retries), or a failure
   * with a later pass in an upload of the same SHA. Each later upload is found through
   * `test_uploads (repo_id, sha)` and its results through the results' (test, time) index.
   */
  async passedOnRetry(seqs: readonly number[], since: number, until: number): Promise<Map<number, number>> {
    const out = new Map<number, number>();
    if (!seqs.length) return out;
    const rows = await this.h.db
      .selectFrom('flaky_results as f')
      .innerJoin('test_uploads as uf', 'uf.seq', 'f.upload_seq')
      .select((eb) => ['f.test_seq', eb.fn.countAll<number>().as('n')])
      .where('f.test_seq', 'in', seqs)
      .where('f.at', '>=', since)
      .where('f.at', '<=', until)
      .where('f.excluded', '=', 0)
      .where((eb) =>
        eb.or([
          eb('f.outcome', '=', 'flaky'),
          eb.and([
            eb('f.outcome', '=', 'failed'),
            eb.exists(
              eb
                .selectFrom('test_uploads as up')
                .innerJoin('flaky_results as p', (j) =>
                  j
                    .onRef('p.upload_seq', '=', 'up.seq')
                    .onRef('p.test_seq', '=', 'f.test_seq')
                    .onRef('p.at', '>=', 'up.first_at')
                    .onRef('p.at', '<=', 'up.last_at')
                    .onRef('p.at', '>', 'f.at')
                    .on('p.outcome', '=', 'passed'),
                )
                .select(sql<number>`1`.as('one'))
                .whereRef('up.repo_id', '=', 'uf.repo_id')
                .whereRef('up.sha', '=', 'uf.sha'),
            ),
          ]),
        ]),
      )
      .groupBy('f.test_seq')
      .execute();
    for (const r of rows) out.set(num(r.test_seq), num(r.n));
    return out;
  }

  /** Failures of these tests in [since, until], grouped by failure key. */
  async failureGroups(seqs: readonly number[], since: number, until: number): Promise<FailureGroup[]> {
    if (!seqs.length) return [];
    const rows = await this.h.db
      .selectFrom('flaky_failures')
      .select((eb) => [
        'test_seq',
        'failure_key',
        eb.fn.countAll<number>().as('n'),
        eb.fn.max('at').as('last'),
      ])
      .where('test_seq', 'in', seqs)
      .where('at', '>=', since)
      .where('at', '<=', until)
      .where('failure_key', 'is not', null)
      .groupBy(['test_seq', 'failure_key'])
      .execute();
    return rows.map((r) => ({
      testSeq: num(r.test_seq),
      key: String(r.failure_key),
      count: num(r.n),
      last: num(r.last),
    }));
  }
}
