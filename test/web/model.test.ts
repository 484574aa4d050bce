import { describe, expect, it } from 'vitest';
import type { QueueListItem, TestingDetailsResponse } from '../../src/contract/index.js';
import { explainReason } from '../../src/contract/reasons.js';
import type { PullRequestHistoryResponse } from '../../src/contract/index.js';
import { lastLines, layout, transitionsOf } from '../../web/src/model.js';
import { safeHref } from '../../web/src/format.js';

const pr = (
  prNumber: number,
  state: QueueListItem['state'],
  testRunId?: string,
  stateReason?: string,
): QueueListItem => ({
  prNumber,
  state,
  testRunId,
  stateReason,
  stateChangedAt: '2026-11-23T12:00:00.000Z',
  priorityValue: 100,
  priorityName: 'medium',
  skipTheLine: false,
  prTitle: `PR ${prNumber}`,
  prSha: 'abc',
  prBaseBranch: 'main',
  prAuthor: 'a',
  noBatch: false,
});
const run = (dependentPrs: number[]): TestingDetailsResponse =>
  ({
    dependentPrs,
    testedPullRequests: [],
    requiredStatuses: [],
    testBranch: '',
    testBranchSha: '',
    status: 'in_progress',
    checkSuites: [],
    statusChecks: [],
  }) as unknown as TestingDetailsResponse;

describe('the queue graph layout', () => {
  it('stacks a run on the run holding its base, starts a lane per independent line, draws bisection apart and lists untested PRs', () => {
    const prs = [
      pr(1, 'testing', 'a'),
      pr(2, 'testing', 'a'),
      pr(3, 'testing', 'b'),
      pr(4, 'testing', 'c'),
      pr(5, 'testing', 'd', 'BISECTION_REQUIRED'),
      pr(6, 'pending'),
      pr(7, 'not_ready'),
    ];
    const details: Record<string, TestingDetailsResponse> = {
      a: run([]),
      b: run([1, 2]),
      c: run([]),
      d: run([]),
    };
    const { lanes, bisection, waiting } = layout(prs, (id) => details[id]);
    expect(lanes.map((lane) => lane.map((r) => r.id))).toEqual([['a', 'b'], ['c']]);
    expect(lanes[0][0].prs.map((p) => p.prNumber)).toEqual([1, 2]);
    expect(lanes[0][1].baseRuns).toEqual(['a']);
    expect(bisection.map((r) => r.id)).toEqual(['d']);
    expect(waiting.map((p) => p.prNumber)).toEqual([6, 7]);
  });

  it('draws a run whose details are not read yet on the run before it', () => {
    const { lanes } = layout([pr(1, 'testing', 'a'), pr(2, 'testing', 'b')], () => null);
    expect(lanes.map((lane) => lane.map((r) => r.id))).toEqual([['a', 'b']]);
  });
});

describe("a PR's history, read leniently for the timeline", () => {
  it('finds the transitions under any list key and the usual field names, skipping entries without a state', () => {
    const history = {
      transitions: [
        { to: 'pending', reason: 'API_REQUESTED', at: '2026-11-23T12:00:00Z' },
        { state: 'testing', stateChangedAt: '2026-11-23T12:00:01Z', testRunId: 'r1' },
        { reason: 'no state here' },
        { newState: 'failed', stateReason: 'TEST_RUN_REQUIRED_STATUS_FAILED', time: '2026-11-23T12:05:00Z' },
      ],
    };
    const none = { previousState: null, detail: null, queueEntryId: null };
    expect(transitionsOf(history)).toEqual([
      { state: 'pending', reason: 'API_REQUESTED', at: '2026-11-23T12:00:00Z', testRunId: null, ...none },
      { state: 'testing', reason: null, at: '2026-11-23T12:00:01Z', testRunId: 'r1', ...none },
      {
        state: 'failed',
        reason: 'TEST_RUN_REQUIRED_STATUS_FAILED',
        at: '2026-11-23T12:05:00Z',
        testRunId: null,
        ...none,
      },
    ]);
    expect(transitionsOf([{ state: 'merged' }])).toHaveLength(1);
    expect(transitionsOf(null)).toEqual([]);
  });

  it("reads getPullRequestHistory's own shape: previous state, reason, detail, test run and submission", () => {
    const answer: PullRequestHistoryResponse = {
      prNumber: 3,
      transitions: [
        { queueEntryId: 'e1', state: 'pending', reason: 'API_REQUESTED', at: '2026-11-23T12:00:00.000Z' },
        {
          queueEntryId: 'e1',
          state: 'failed',
          previousState: 'pending',
          reason: 'START_TEST_RUN_MERGE_CONFLICT',
          at: '2026-11-23T12:00:02.000Z',
          testRunId: 'r9',
          detail: 'PR #3 conflicts with PR #2 (ahead of it in the queue) in app.txt',
        },
      ],
    };
    expect(transitionsOf(answer)).toEqual([
      {
        queueEntryId: 'e1',
        state: 'pending',
        previousState: null,
        reason: 'API_REQUESTED',
        at: '2026-11-23T12:00:00.000Z',
        testRunId: null,
        detail: null,
      },
      {
        queueEntryId: 'e1',
        state: 'failed',
        previousState: 'pending',
        reason: 'START_TEST_RUN_MERGE_CONFLICT',
        at: '2026-11-23T12:00:02.000Z',
        testRunId: 'r9',
        detail: 'PR #3 conflicts with PR #2 (ahead of it in the queue) in app.txt',
      },
    ]);
  });

  it("keeps the last lines of a check's output and counts the rest", () => {
    expect(lastLines('a\nb\nc\n', 2)).toEqual({ shown: 'b\nc\n', hidden: 1 });
    expect(lastLines('a\nb\n', 2)).toEqual({ shown: 'a\nb\n', hidden: 0 });
    expect(lastLines('a\nb\nc', 1)).toEqual({ shown: 'c\n', hidden: 2 });
  });

  it('has a sentence for every reason code the demo can end with', () => {
    for (const code of [
      'TEST_RUN_REQUIRED_STATUS_FAILED',
      'START_TEST_RUN_MERGE_CONFLICT',
      'TEST_RUN_TIMEOUT',
    ])
      expect(explainReason(code)).not.toBe(code);
    expect(explainReason('SOMETHING_NEW')).toBe('SOMETHING_NEW');
  });
});

describe('safeHref', () => {
  it('lets http(s) links through and refuses every other scheme (a stored javascript: ticket link is never a link)', () => {
    expect(safeHref('https://jira.example.com/browse/KAN-1')).toBe('https://jira.example.com/browse/KAN-1');
    expect(safeHref('http://tracker.intranet/1')).toBe('http://tracker.intranet/1');
    for (const bad of ['javascript:alert(1)//KAN-1', ' JavaScript:alert(1)', 'data:text/html,x', 'vbscript:x', '/relative', '', null, undefined]) {
      expect(safeHref(bad), String(bad)).toBeNull();
    }
  });
});
