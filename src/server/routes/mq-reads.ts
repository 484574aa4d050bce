/**
 * Handlers of Trunk's newer v1 reads: several submitted pull requests in one call, a pull
 * request's timeline (includeTimeline), and the completed testing of a queue over a time range.
 */
import {
  isoTime,
  TESTING_RESULTS_MAX_DAYS,
  type ListTestingResultsResponse,
  type TestingResult,
  type TimelineItem,
} from '../../contract/index.js';
import { findEntry, type Entry } from '../../engine/index.js';
import { badRequest } from '../errors.js';
import type { QueueHandle } from '../queue/handle.js';
import type { QueueService } from '../queue/service.js';
import { RawAnswer, type Handlers } from './types.js';

const JSON_TYPE = 'application/json; charset=utf-8';
const DAY_MS = 86_400_000;

type ReadOps = 'getSubmittedPullRequest' | 'getSubmittedPullRequests' | 'listMergeQueueTestingResults';

/** The state changes of one submission (queue entry), newest first, in the shape of Trunk's v1 timeline. */
async function timelineOf(service: QueueService, queue: QueueHandle, entry: Entry): Promise<TimelineItem[]> {
  const rows = await service.history(queue, entry.prNumber);
  return rows
    .filter((t) => t.entryId === entry.id)
    .reverse()
    .map((t) => ({
      state: t.to,
      timestamp: isoTime(t.at),
      ...(t.reason === null ? {} : { reason: t.reason }),
      ...(t.testRunId === null ? {} : { testRunId: t.testRunId }),
      ...(t.detail === null ? {} : { detail: t.detail }),
    }));
}

/** A getSubmittedPullRequest body (a JSON object) with `timeline` added. */
function withTimeline(body: string, timeline: TimelineItem[]): string {
  return `${body.slice(0, -1)},"timeline":${JSON.stringify(timeline)}}`;
}

/** The results of one finished run: one per PR, with how the run ended. */
function resultsOf(
  run: QueueHandle['model']['runs'][number],
  runs: QueueHandle['model']['runs'],
): TestingResult[] {
  const finishedAt = run.finishedAt as number;
  return run.prNumbers.map((prNumber) => {
    // A failed batch whose PRs were then tested in halves started a bisection.
    const entered =
      !run.isBisection &&
      run.status === 'failed' &&
      runs.some((r) => r.isBisection && r.startedAt >= finishedAt && r.prNumbers.includes(prNumber));
    return {
      prNumber,
      testRunId: run.id,
      cycleConclusion: run.status as TestingResult['cycleConclusion'],
      ...(run.isBisection
        ? { bisection: 'in_bisection' as const }
        : entered
          ? { bisection: 'entered_bisection' as const }
          : {}),
      startedAt: isoTime(run.startedAt),
      finishedAt: isoTime(finishedAt),
      attempt: run.attempt ?? 1,
    };
  });
}

export function mqReadHandlers(service: QueueService, now: () => number): Pick<Handlers, ReadOps> {
  const { registry, replicaSync, answers } = service;
  return {
    async getSubmittedPullRequest(input, { org }) {
      const queue = await replicaSync.queue(org, input.repo, input.targetBranch);
      const pr =
        input.pr.number !== undefined ? { number: input.pr.number } : { branch: input.pr.branch as string };
      await service.refreshFacts(queue, pr); // the write half: a PR whose facts changed goes through the writer
      const { body, entry } = answers.submittedAnswer(registry.current(queue), pr);
      if (!input.includeTimeline) return new RawAnswer(body, JSON_TYPE);
      return new RawAnswer(withTimeline(body, await timelineOf(service, queue, entry)), JSON_TYPE);
    },
    async getSubmittedPullRequests(input, { org }) {
      const queue = await replicaSync.queue(org, input.repo, input.targetBranch);
      const numbers = [...new Set(input.prs.map((p) => p.number))];
      const found = numbers.filter((n) => findEntry(registry.current(queue).model, n));
      const notFound = numbers.filter((n) => !found.includes(n)).map((number) => ({ number }));
      // Readiness from fresh forge facts, as getSubmittedPullRequest answers it.
      await Promise.all(found.map((number) => service.refreshFacts(queue, { number })));
      const handle = registry.current(queue);
      const bodies = await Promise.all(
        found.map(async (number) => {
          const { body, entry } = answers.submittedAnswer(handle, { number });
          return input.includeTimeline ? withTimeline(body, await timelineOf(service, queue, entry)) : body;
        }),
      );
      return new RawAnswer(
        `{"pullRequests":[${bodies.join(',')}],"notFound":${JSON.stringify(notFound)}}`,
        JSON_TYPE,
      );
    },
    async listMergeQueueTestingResults(input, { org }) {
      const until = input.until === undefined ? now() : Date.parse(input.until);
      const since = Date.parse(input.since);
      if (since > until) throw badRequest('since: must not be after until');
      if (until - since > TESTING_RESULTS_MAX_DAYS * DAY_MS)
        throw badRequest(
          `since: at most ${TESTING_RESULTS_MAX_DAYS} days before until (ask for longer ranges in several requests)`,
        );
      const queue = await replicaSync.queue(org, input.repo, input.targetBranch);
      const runs = registry.current(queue).model.runs;
      const finished = runs
        .filter(
          (r) =>
            r.status !== 'in_progress' &&
            r.finishedAt !== null &&
            r.finishedAt >= since &&
            r.finishedAt <= until,
        )
        .sort((a, b) => (b.finishedAt as number) - (a.finishedAt as number) || b.seq - a.seq);
      const all = finished.flatMap((r) => resultsOf(r, runs));
      const offset = input.offset ?? 0;
      const answer: ListTestingResultsResponse = {
        testingResults: all.slice(offset, offset + (input.take ?? 50)),
        totalItems: all.length,
      };
      return answer;
    },
  };
}
