/**
 * Which test runs the doctor judges a required check by (src/server/queue/doctor.ts): those of the
 * last 7 days and at least the last 10 finished runs; only runs that tell something (a check
 * reported, a timeout, a missing check) are evidence; a check seen on any of them is not named.
 */
import { describe, expect, it } from 'vitest';
import { newQueueModel, type QueueModel, type TestRun } from '../../src/engine/index.js';
import { queueNotices } from '../../src/server/queue/doctor.js';
import { Harness } from '../engine/harness.js';

const NOW = Date.parse('2026-12-03T12:00:00Z');
const DAY = 86_400_000;

function run(i: number, startedAt: number, checks: TestRun['checks'], extra: Partial<TestRun> = {}): TestRun {
  return {
    id: `run-${i}`,
    prNumbers: [i],
    basePrNumbers: [],
    isBisection: false,
    status: 'succeeded',
    checks,
    startedAt,
    finishedAt: startedAt + 60_000,
    failureReason: null,
    branch: `railyard-merge/pr-${i}`,
    sha: 'a'.repeat(40),
    seq: i,
    mergeMethod: 'merge_commit',
    requiredStatuses: null,
    mergeRequested: false,
    mergePrNumbers: null,
    ...extra,
  };
}

function model(required: string[], runs: TestRun[]): QueueModel {
  const m = newQueueModel('main');
  return { ...m, config: { ...m.config, requiredStatuses: required }, runs };
}

const named = (m: QueueModel) => queueNotices(m, null, NOW).map((n) => n.check);

describe('the doctor on required checks', () => {
  it('names a check not seen in the last 7 days when more than 10 runs were in them', () => {
    // e2e reported 8 days ago; 12 runs since, all with ci only.
    const runs = [run(0, NOW - 8 * DAY, { ci: 'success', e2e: 'success' })];
    for (let i = 1; i <= 12; i++) runs.push(run(i, NOW - i * 3_600_000, { ci: 'success' }));
    expect(named(model(['ci', 'e2e'], runs))).toEqual(['e2e']);
  });

  it('looks back past 7 days to the last 10 runs on a quiet queue', () => {
    // Three runs this week without e2e, but e2e reported on one of the 10 before them.
    const runs = [run(0, NOW - 20 * DAY, { ci: 'success', e2e: 'success' })];
    for (let i = 1; i <= 3; i++) runs.push(run(i, NOW - i * DAY, { ci: 'success' }));
    expect(named(model(['ci', 'e2e'], runs))).toEqual([]);
    // Older than the last 10 and than 7 days: no longer counts.
    for (let i = 4; i <= 10; i++) runs.push(run(i, NOW - 10 * DAY + i, { ci: 'success' }));
    expect(named(model(['ci', 'e2e'], runs))).toEqual(['e2e']);
  });

  it('takes no evidence from runs cancelled before any check reported, nor from runs still testing', () => {
    const runs = [
      run(1, NOW - DAY, {}, { status: 'cancelled' }),
      run(2, NOW - 3_600_000, {}, { status: 'in_progress', finishedAt: null }),
    ];
    expect(named(model(['ci'], runs))).toEqual([]);
    // A run that timed out waiting is evidence, even with nothing reported.
    runs.push(run(3, NOW - 7_200_000, {}, { status: 'failed', failureReason: 'TEST_RUN_TIMEOUT' }));
    expect(named(model(['ci'], runs))).toEqual(['ci']);
  });

  it('says nothing without requiredStatuses (the queue then counts whatever reports)', () => {
    expect(named({ ...newQueueModel('main'), runs: [run(1, NOW - DAY, { ci: 'success' })] })).toEqual([]);
  });
});

describe('the doctor on freezes and the adaptive timeout', () => {
  const frozen = (hours: number, submit: boolean) => {
    const h = new Harness({
      freezes: [
        {
          start: '2026-01-05T08:00:00Z',
          end: new Date(h0 + hours * 3_600_000).toISOString(),
          reason: 'release 4.2',
        },
      ],
    });
    if (submit) h.submit(1);
    return queueNotices(h.model, null, h.now).filter((n) => n.kind === 'queue_frozen');
  };
  const h0 = Date.parse('2026-01-05T09:00:00Z');

  it('names a freeze holding PRs for more than an hour, with its end and reason', () => {
    const [notice] = frozen(3, true);
    expect(notice?.text).toContain('frozen for 3 h more (until 2026-01-05T12:00:00.000Z: release 4.2)');
    expect(notice?.text).toContain('railyard mq queue unfreeze');
  });

  it('says nothing of a short freeze, nor of one that holds no PR', () => {
    expect(frozen(0.5, true)).toEqual([]);
    expect(frozen(3, false)).toEqual([]);
  });

  it('gives the timeout in force when testingTimeoutMinutes is "auto"', () => {
    const m = model(
      ['ci', 'e2e'],
      [run(1, NOW - DAY, { ci: 'success' }, { status: 'failed', failureReason: 'TEST_RUN_TIMEOUT' })],
    );
    const [notice] = queueNotices(
      { ...m, config: { ...m.config, testingTimeoutMinutes: 'auto' } },
      null,
      NOW,
    );
    expect(notice?.text).toContain('up to testingTimeoutMinutes ("auto", now 60 min)');
  });
});
