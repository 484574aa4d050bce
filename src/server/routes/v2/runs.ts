/**
 * The v2 reads of what a queue is doing and did: its order and dependency graph, its verification
 * (test) runs, one run, a PR's runs, and the testing results, read from the queue's model in memory.
 */
import { isoTime } from '../../../contract/index.js';
import { V2_ENTRY_STATES, V2_MODES, V2_QUEUE_STATES, V2_RUN_STATUSES } from '../../../contract/v2/schemas.js';
import type { V2OperationId } from '../../../contract/v2/routes.js';
import {
  activeEntries,
  findEntry,
  isTerminal,
  targetsOverlap,
  type Entry,
  type TestRun,
} from '../../../engine/index.js';
import type { QueueHandle } from '../../queue/handle.js';
import type { V2Context } from './context.js';
import { V2Error, validationFailed } from './errors.js';
import { pullRequestId } from './ids.js';
import { pageOf } from './paging.js';
import { jsonText, PerModelCache, type V2Handler } from './types.js';

const DAY_MS = 86_400_000;
const IN_RUN = new Set(['testing', 'tests_passed', 'pending_failure']);

/** A PR as the order, runs and graph name it (Trunk's QueuedPullRequest / TestedPullRequest). */
function queuedPr(ctx: V2Context, queue: QueueHandle, entry: Entry) {
  return {
    id: pullRequestId(queue.org, queue.repo, entry.prNumber),
    number: entry.prNumber,
    title: entry.pr.title,
    sha: entry.pr.headSha,
    url: ctx.links.pr(queue.repo, queue.model.branch, entry.prNumber),
  };
}

/** The entry a run tested PR `n` with: the one pointing at the run, else the PR's current one. */
function entryOfRun(queue: QueueHandle, run: TestRun, n: number): Entry | undefined {
  return (
    queue.model.entries.find((e) => e.prNumber === n && e.testRunId === run.id) ?? findEntry(queue.model, n)
  );
}

const CHECK_CONCLUSIONS = { success: 'success', failure: 'failure', pending: 'neutral' } as const;

export function presentRun(ctx: V2Context, queue: QueueHandle, run: TestRun) {
  const prs = (numbers: readonly number[]) =>
    numbers.flatMap((n) => {
      const entry = entryOfRun(queue, run, n);
      return entry ? [queuedPr(ctx, queue, entry)] : [];
    });
  const checks = Object.entries(run.checks);
  return {
    id: run.id,
    isBisection: run.isBisection,
    testBranch: run.branch ?? '',
    testBranchSha: run.sha ?? '',
    createdAt: isoTime(run.startedAt),
    updatedAt: isoTime(run.finishedAt ?? run.startedAt),
    status: V2_RUN_STATUSES[run.status],
    ...(run.requiredStatuses ? { requiredStatusesSource: 'mergeInstance' as const } : {}),
    requiredStatuses: run.requiredStatuses ?? checks.map(([name]) => name),
    checks: checks.map(([name, state]) => ({
      id: name,
      name,
      kind: 'checkRun' as const,
      status: state === 'pending' ? ('inProgress' as const) : ('completed' as const),
      conclusion: CHECK_CONCLUSIONS[state],
      url: null,
      provider: 'github' as const,
    })),
    testedPullRequests: prs(run.prNumbers),
    dependentPullRequests: prs(run.basePrNumbers),
  };
}

/** The order the engine considers the queue's PRs in (Trunk's MergeQueueOrder). */
function orderOf(ctx: V2Context, queue: QueueHandle) {
  const { config } = queue.model;
  const active = activeEntries(queue.model);
  const batches = new Map<string, Entry[]>();
  for (const e of active) {
    if (!IN_RUN.has(e.state) || e.testRunId === null) continue;
    const list = batches.get(e.testRunId) ?? [];
    list.push(e);
    batches.set(e.testRunId, list);
  }
  const runs = new Map(queue.model.runs.map((r) => [r.id, r] as const));
  const pending = active.filter((e) => e.state === 'pending');
  const size = config.batch ? Math.max(1, config.batchingMinSize) : 1;
  return {
    mode: V2_MODES[config.mode],
    queueState: V2_QUEUE_STATES[config.state],
    batchingEnabled: config.batch,
    isolationResolved: true,
    hasCycle: false,
    batches: [...batches].map(([runId, entries]) => ({
      verificationRunId: runId,
      state: V2_ENTRY_STATES[entries[0]!.state],
      isBisection: runs.get(runId)?.isBisection ?? false,
      pullRequests: entries.map((e) => queuedPr(ctx, queue, e)),
    })),
    pending: pending.map((e, i) => ({
      pullRequest: queuedPr(ctx, queue, e),
      schedulability: 'schedulable' as const,
      predictedBatch: Math.floor(i / size) + 1,
      directlyAhead: [],
      heldBy: [],
    })),
    awaitingAdmission: [],
    awaitingAdmissionTotal: 0,
  };
}

/** Newest first: by start, then start order. */
const newestFirst = (a: TestRun, b: TestRun) => b.startedAt - a.startedAt || b.seq - a.seq;

export function runHandlers(ctx: V2Context): Partial<Record<V2OperationId, V2Handler>> {
  const orderCache = new PerModelCache(1);
  return {
    async 'mergeQueues.order'({ org, id }) {
      const queue = await ctx.queue(org, id);
      return orderCache.get(queue.model, 'order', () => jsonText(orderOf(ctx, queue)));
    },
    async 'mergeQueues.graph'({ org, id, query }) {
      const queue = await ctx.queue(org, id);
      const line = activeEntries(queue.model).filter((e) => e.state !== 'not_ready');
      const withTargets = query.includeImpactedTargets === true;
      const targetsOf = (e: Entry) => (Array.isArray(e.impactedTargets) ? e.impactedTargets : []);
      const nodes = line.map((e) => ({
        pullRequestNumber: e.prNumber,
        title: e.pr.title,
        author: e.pr.author,
        state: V2_ENTRY_STATES[e.state],
        priorityValue: e.priority.value,
        priorityName: e.priority.name,
        skipsTheLine: e.priority.value === 0,
        allowsBatching: !e.noBatch,
        ...(e.testRunId !== null && e.state === 'testing' ? { verificationRunId: e.testRunId } : {}),
        isBisection: Boolean(e.bisectGroup),
        ...(withTargets ? { impactedTargets: targetsOf(e), totalImpactedTargets: targetsOf(e).length } : {}),
      }));
      const edges: {
        fromPullRequestNumber: number;
        toPullRequestNumber: number;
        commonImpactedTargets?: string[];
      }[] = [];
      if (queue.model.config.mode === 'single') {
        // One line: each PR builds on the one before it.
        for (let i = 1; i < line.length; i++)
          edges.push({
            fromPullRequestNumber: line[i - 1]!.prNumber,
            toPullRequestNumber: line[i]!.prNumber,
          });
      } else {
        for (let j = 0; j < line.length; j++)
          for (let i = 0; i < j; i++) {
            const [a, b] = [line[i]!, line[j]!];
            if (!targetsOverlap(a.impactedTargets, b.impactedTargets)) continue;
            const edge: (typeof edges)[number] = {
              fromPullRequestNumber: a.prNumber,
              toPullRequestNumber: b.prNumber,
            };
            if (withTargets)
              edge.commonImpactedTargets = targetsOf(a).filter((t) => targetsOf(b).includes(t));
            edges.push(edge);
          }
      }
      return { nodes, edges };
    },
    async 'mergeQueues.listVerificationRuns'({ org, id, query }) {
      const queue = await ctx.queue(org, id);
      const after = query.createdAfter === undefined ? -Infinity : Date.parse(query.createdAfter as string);
      const runs = queue.model.runs
        .filter((r) => query.status === undefined || V2_RUN_STATUSES[r.status] === query.status)
        .filter((r) => r.startedAt > after)
        .sort(newestFirst);
      return pageOf(
        runs,
        (r) => r.id,
        (r) => presentRun(ctx, queue, r),
        `runs:${queue.id}`,
        query,
      );
    },
    async 'pullRequests.listVerificationRuns'({ org, id, query }) {
      const found = await ctx.pullRequest(org, id);
      const runs = found.queue.model.runs
        .filter((r) => r.prNumbers.includes(found.prNumber))
        .filter((r) => query.status === undefined || V2_RUN_STATUSES[r.status] === query.status)
        .sort(newestFirst);
      return pageOf(
        runs,
        (r) => r.id,
        (r) => presentRun(ctx, found.queue, r),
        `prRuns:${id.toLowerCase()}`,
        query,
      );
    },
    async 'mergeQueueVerificationRuns.get'({ org, id }) {
      for (const queue of await ctx.queuesOf(org)) {
        const run = queue.model.runs.find((r) => r.id === id);
        if (run) return presentRun(ctx, queue, run);
      }
      throw new V2Error(404, 'VERIFICATION_RUN_NOT_FOUND', `no verification run with id ${id}`);
    },
    async 'mergeQueues.listTestingResults'({ org, id, query }) {
      const queue = await ctx.queue(org, id);
      const since = Date.parse(query.since as string);
      const until = query.until === undefined ? ctx.now() : Date.parse(query.until as string);
      if (until < since) throw validationFailed('until: must not be before since');
      if (until - since > 45 * DAY_MS) throw validationFailed('since/until: the window is at most 45 days');
      const results = queue.model.runs
        .filter((r) => r.finishedAt !== null && r.finishedAt >= since && r.finishedAt <= until)
        .sort((a, b) => (b.finishedAt ?? 0) - (a.finishedAt ?? 0) || b.seq - a.seq)
        .flatMap((run) =>
          run.prNumbers.map((n) => {
            const entry = entryOfRun(queue, run, n);
            const outcome =
              run.status === 'succeeded'
                ? 'passed'
                : run.status === 'failed'
                  ? 'failed'
                  : run.restartedAt
                    ? 'interrupted'
                    : 'cancelled';
            return {
              pullRequestNumber: n,
              endedAt: isoTime(run.finishedAt as number),
              testingDurationMs: Math.round(((run.finishedAt as number) - run.startedAt) / 1000) * 1000,
              outcome,
              ...(entry && isTerminal(entry.state) ? { entryConclusion: entry.state } : {}),
              isBisection: run.isBisection,
              startedBisection: false,
              verificationRunId: run.id,
            };
          }),
        );
      return pageOf(
        results,
        (r) => `${r.verificationRunId}:${r.pullRequestNumber}`,
        (r) => r,
        `testing:${queue.id}`,
        query,
      );
    },
  };
}
