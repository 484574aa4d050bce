/**
 * The history of a queue's pull requests and its event log: the transition rows one engine step
 * adds (with the words for failures people read) and the log lines of each committed change.
 */
import type { PullRequestState } from '../../contract/index.js';
import {
  changedItems,
  findEntry,
  stackOf,
  stackSentence,
  type Effect,
  type EngineEvent,
  type FailedTest,
  type QueueModel,
} from '../../engine/index.js';
import type { PrTransition } from '../../store/index.js';
import type { QueueHandle } from './handle.js';
import { describeRepo } from './keys.js';

/** The part of a pino logger the service writes its events to. */
export interface EventLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/** States in which an entry's testRunId names the run that tests (or tested) it in this change. */
/** The history's mark on the state changes of a `direct` submission. */
export const DIRECT_DETAIL =
  "direct: submitted past the forge's pull-request requirements (mergeability, branch rules); still tested";

const TESTED_STATES = new Set<PullRequestState>([
  'testing',
  'tests_passed',
  'merged',
  'failed',
  'pending_failure',
]);

/** The history row of one stateChanged effect, read against the model right after its step. */
function transitionOf(
  model: QueueModel,
  effect: Extract<Effect, { type: 'stateChanged' }>,
  at: number,
): PrTransition {
  let testRunId: string | null = null;
  if (TESTED_STATES.has(effect.to)) {
    const entry = findEntry(model, effect.prNumber);
    testRunId = entry?.id === effect.entryId ? entry.testRunId : null;
  }
  return {
    entryId: effect.entryId,
    prNumber: effect.prNumber,
    from: effect.from,
    to: effect.to,
    reason: effect.reason,
    testRunId,
    detail: null,
    at,
  };
}

/** The history rows of one engine step: its stateChanged effects, with what went wrong for people. */
export function transitionsOfStep(
  model: QueueModel,
  event: EngineEvent,
  effects: readonly Effect[],
  at: number,
): PrTransition[] {
  const transitions: PrTransition[] = [];
  const detail =
    (event.type === 'testRunStartFailed' ||
      event.type === 'testRunFinished' ||
      event.type === 'mergeFailed') &&
    event.detail
      ? event.detail
      : null;
  for (const effect of effects) {
    if (effect.type !== 'stateChanged') continue;
    const t = transitionOf(model, effect, at);
    if (detail !== null && (t.to === 'failed' || t.to === 'pending_failure')) t.detail = detail;
    if (event.type === 'submit' && event.direct === true && t.prNumber === event.prNumber)
      t.detail = DIRECT_DETAIL;
    // A PR of a stack: its test and its landing name the stack (tested and landed as one unit).
    if (t.to === 'testing' || t.to === 'merged') {
      const entry = findEntry(model, effect.prNumber);
      const stack = entry?.id === effect.entryId ? stackOf(model, entry) : [];
      if (stack.length) t.detail = stackSentence(stack);
    }
    if (event.type === 'testRunFinished') {
      t.detail ??= flakyDetail(model, event.runId, t.reason);
      if (!event.passed && event.failures?.length && (t.to === 'failed' || t.to === 'pending_failure'))
        t.detail = [t.detail, failingTestsDetail(event.failures)].filter(Boolean).join('; ');
    }
    transitions.push(t);
  }
  return transitions;
}

/** The history's words for a flake-aware verdict: the tests a run's failure was ignored or retried for. */
function flakyDetail(model: QueueModel, runId: string, reason: string | null | undefined): string | null {
  const run = model.runs.find((r) => r.id === runId);
  const names = (list: string[]) =>
    list.slice(0, 10).join(', ') + (list.length > 10 ? ` and ${list.length - 10} more` : '');
  if (reason === 'FLAKY_FAILURES_IGNORED' && run?.flakyIgnored?.length)
    return `failed only on ignored tests (flakyPolicy ${model.config.flakyPolicy}): ${names(run.flakyIgnored)}`;
  if (reason === 'FLAKY_FAILURE_RETRIED' && run?.failures?.length)
    return `run ${runId} failed only on tests with flake history, retried (attempt ${(run.attempt ?? 1) + 1} of ${model.config.flakyRetries + 1}): ${names(run.failures.map((f) => f.name))}`;
  return null;
}

/** The history's words for the failing tests of a failed run: `failing tests: a (quarantined), b`. */
function failingTestsDetail(failures: readonly FailedTest[]): string {
  const shown = failures.slice(0, 10).map((t) => {
    const notes = [
      t.quarantined ? 'quarantined' : t.flaky ? 'flaky' : '',
      t.changedByPr ? 'file changed by the PR' : '',
    ].filter(Boolean);
    return notes.length ? `${t.name} (${notes.join(', ')})` : t.name;
  });
  return `failing tests: ${shown.join(', ')}${failures.length > 10 ? ` and ${failures.length - 10} more` : ''}`;
}

/** One log line per PR state change (with its reason), test run started / finished, and merge. */
export function logQueueEvents(
  log: EventLog,
  now: () => number,
  handle: QueueHandle,
  before: QueueModel,
  after: QueueModel,
  transitions: PrTransition[],
  events: EngineEvent[],
): void {
  const queue = { org: handle.org, repo: describeRepo(handle.repo), branch: after.branch };
  for (const t of transitions) {
    log.info(
      {
        ...queue,
        pr: t.prNumber,
        from: t.from,
        to: t.to,
        reason: t.reason,
        testRunId: t.testRunId ?? undefined,
        detail: t.detail ?? undefined,
      },
      'pull request state changed',
    );
  }
  if (before.runs !== after.runs) {
    // The runs the step changed or started (by position: not a pass over every run the queue had).
    const changed = changedItems(before.runs, after.runs);
    for (const [i, run] of changed.upsert.entries()) {
      const was = changed.previous[i];
      if (!was)
        log.info(
          {
            ...queue,
            testRunId: run.id,
            prs: run.prNumbers,
            basePrs: run.basePrNumbers,
            bisection: run.isBisection,
          },
          'test run started',
        );
      else if (was.status === 'in_progress' && run.status !== 'in_progress') {
        log.info(
          {
            ...queue,
            testRunId: run.id,
            prs: run.prNumbers,
            status: run.status,
            reason: run.failureReason ?? undefined,
            durationMs: (run.finishedAt ?? now()) - run.startedAt,
          },
          'test run finished',
        );
      }
    }
  }
  for (const event of events) {
    if (event.type === 'mergeSucceeded') {
      const run = after.runs.find((r) => r.id === event.runId);
      log.info({ ...queue, testRunId: event.runId, prs: run?.mergePrNumbers ?? run?.prNumbers }, 'merged');
    } else if (event.type === 'mergeFailed') {
      log.warn({ ...queue, testRunId: event.runId, reason: event.reason }, 'merge failed');
    }
  }
}
