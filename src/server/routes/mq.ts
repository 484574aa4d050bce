/** The merge-queue operations' handlers: writes through the queue service, reads through its registry and answers. */
import { open } from 'node:fs/promises';
import {
  API_PREFIX,
  CHECK_LOG_MAX_BYTES,
  isoTime,
  routes,
  splitOwnerName,
  type PullRequestHistoryResponse,
  type TestingDetailsResponse,
} from '../../contract/index.js';
import { findEntry, isTerminal, type ConfigPatch, type TestRun } from '../../engine/index.js';
import { ALL_PERMISSIONS } from '../../contract/permissions.js';
import { hasPermission, requireSubmitPermissions } from '../access/permissions.js';
import { badRequest, notFound, ofTokenOrg } from '../errors.js';
import { METRICS_CONTENT_TYPE, renderMetrics } from '../queue/metrics.js';
import type { Links } from '../links.js';
import { summariseQueue } from '../queue/summary.js';
import type { QueueHandle } from '../queue/handle.js';
import { normaliseRepo } from '../queue/keys.js';
import type { QueueService } from '../queue/service.js';
import { mqReadHandlers } from './mq-reads.js';
import { RawAnswer, type Handlers, type OpsOfTag } from './types.js';

type MqOps = OpsOfTag<'merge-queue'>;

const JSON_TYPE = 'application/json; charset=utf-8';
const TEXT_TYPE = 'text/plain; charset=utf-8';

/** Where a check's output is kept (the executor's checkLogPath); absent when the executor keeps none. */
export type CheckLogPath = (queue: QueueHandle, run: TestRun, check: string) => string | null;
/** The checks the forge reported so far on a run still testing (the driver's ci.progress). */
export type CheckProgress = (
  queue: QueueHandle,
  run: TestRun,
) => Record<string, 'success' | 'failure' | 'pending'> | null;

/** The checks a testing run still waits for: the required ones (else those reported) not finished yet. */
function pendingChecks(
  required: readonly string[] | null,
  live: Record<string, 'success' | 'failure' | 'pending'>,
): Array<{ name: string; state: 'running' | 'not_reported' }> {
  const names = required ?? Object.keys(live);
  return names
    .filter((n) => live[n] === undefined || live[n] === 'pending')
    .map((name) => ({ name, state: live[name] === undefined ? 'not_reported' : 'running' }));
}

/** The last `max` bytes of a file (null when it does not exist), and how many bytes came before them. */
async function tail(path: string, max: number): Promise<{ text: Buffer; skipped: number } | null> {
  let file;
  try {
    file = await open(path, 'r');
  } catch {
    return null;
  }
  try {
    const { size } = await file.stat();
    const skipped = Math.max(0, size - max);
    const text = Buffer.alloc(size - skipped);
    await file.read(text, 0, text.length, skipped);
    return { text, skipped };
  } finally {
    await file.close();
  }
}

/** The merge-queue operations: writes through the queue service, reads through its registry and answers. */
export function mqHandlers(
  service: QueueService,
  now: () => number,
  checkLogPath: CheckLogPath | undefined,
  checkProgress: CheckProgress | undefined,
  links: Links,
): Pick<Handlers, Exclude<MqOps, 'getMergeQueueDoctor'>> {
  // A request's queue: brought up to date first (several replicas), or a 404 (replicaSync.queue).
  const { registry, replicaSync, answers } = service;
  return {
    ...mqReadHandlers(service, now),
    async submitPullRequest(input, { org, request }) {
      const queue = await replicaSync.queue(org, input.repo, input.targetBranch);
      const queued = findEntry(registry.current(queue).model, input.pr.number);
      const current = queued && !isTerminal(queued.state) ? queued.priority.value : null;
      requireSubmitPermissions(request, input, current);
      await service.submit(queue, input.pr.number, {
        priority: input.priority,
        noBatch: input.noBatch,
        direct: input.direct,
      });
      return {};
    },
    async cancelPullRequest(input, { org }) {
      await service.cancel(await replicaSync.queue(org, input.repo, input.targetBranch), input.pr.number);
      return {};
    },
    async restartTestsOnPullRequest(input, { org }) {
      await service.restart(await replicaSync.queue(org, input.repo, input.targetBranch), input.pr.number);
      return {};
    },
    async listPullRequests(input, { org }) {
      return answers.listPullRequests(
        registry.current(await replicaSync.queue(org, input.repo, input.targetBranch)),
        input,
      );
    },
    async setImpactedTargets(input, { org }) {
      const queue = await replicaSync.queue(org, input.repo, input.targetBranch);
      await service.setImpactedTargets(queue, input.pr.number, input.pr.sha, input.impactedTargets);
      return {};
    },
    async getPullRequestHistory(input, { org }) {
      const rows = await service.history(
        await replicaSync.queue(org, input.repo, input.targetBranch),
        input.pr.number,
      );
      const history: PullRequestHistoryResponse = {
        prNumber: input.pr.number,
        transitions: rows.map((t) => ({
          queueEntryId: t.entryId,
          state: t.to,
          ...(t.from === null ? {} : { previousState: t.from }),
          ...(t.reason === null ? {} : { reason: t.reason }),
          at: isoTime(t.at),
          ...(t.testRunId === null ? {} : { testRunId: t.testRunId }),
          ...(t.detail === null ? {} : { detail: t.detail }),
        })),
      };
      return history;
    },
    async getCheckRunLog(input, { org }) {
      const { owner, name } = splitOwnerName(input.repo);
      const queue = await replicaSync.queue(org, { host: input.repoHost, owner, name }, input.targetBranch);
      const run = queue.model.runs.find((r) => r.id === input.testRunId);
      if (!run)
        throw notFound(`testRunId: no test run ${input.testRunId} in the ${queue.model.branch} queue`);
      const path = checkLogPath?.(queue, run, input.check);
      if (path === undefined)
        throw notFound('check: this server keeps no check output (sandbox runs are simulated)');
      const names = Object.keys(run.checks);
      if (path === null)
        throw notFound(
          `check: run ${run.id} has no check "${input.check}" (checks: ${names.join(', ') || 'none'})`,
        );
      const log = await tail(path, CHECK_LOG_MAX_BYTES);
      if (!log) throw notFound(`check: no output of "${input.check}" in run ${run.id} yet`);
      const head = log.skipped
        ? Buffer.from(
            `[railyard] the first ${log.skipped} bytes are left out; the last ${CHECK_LOG_MAX_BYTES} follow\n`,
          )
        : null;
      return new RawAnswer(head ? Buffer.concat([head, log.text]) : log.text, TEXT_TYPE);
    },
    async getMergeQueueTestingDetails(input, { org, request }) {
      const queue = await replicaSync.queue(org, input.repo, input.targetBranch);
      const run = queue.model.runs.find((r) => r.id === input.testRunId);
      if (!run)
        throw notFound(`testRunId: no test run ${input.testRunId} in the ${queue.model.branch} queue`);
      // While it tests, what the forge's CI reported so far (the run's checks are set with its verdict).
      const live = run.status === 'in_progress' ? (checkProgress?.(queue, run) ?? null) : null;
      const checks = Object.entries(live && Object.keys(run.checks).length === 0 ? live : run.checks);
      // Each check run points at its output (getCheckRunLog) when the executor keeps it.
      const origin = `${request.protocol}://${request.host}`;
      const logUrl = (check: string) =>
        checkLogPath
          ? `${origin}${API_PREFIX}${routes.getCheckRunLog.path}?` +
            new URLSearchParams({
              repoHost: queue.repo.host,
              repo: `${queue.repo.owner}/${queue.repo.name}`,
              targetBranch: queue.model.branch,
              testRunId: run.id,
              check,
            }).toString()
          : '';
      const title = (n: number) => queue.model.entries.find((e) => e.prNumber === n)?.pr.title ?? '';
      const details: TestingDetailsResponse = {
        requiredStatuses:
          run.requiredStatuses ?? queue.model.config.requiredStatuses ?? checks.map(([name]) => name),
        testBranch: run.branch ?? '',
        testBranchSha: run.sha ?? '',
        createdAt: isoTime(run.startedAt),
        status: run.status,
        checkSuites: [
          {
            checkRuns: checks.map(([name, state]) => ({
              name,
              url: logUrl(name),
              status: state === 'pending' ? 'IN_PROGRESS' : 'COMPLETED',
              ...(state === 'pending' ? {} : { conclusion: state === 'success' ? 'SUCCESS' : 'FAILURE' }),
            })),
          },
        ],
        statusChecks: checks.map(([context, state]) => ({
          context,
          state: state === 'pending' ? 'PENDING' : state === 'success' ? 'SUCCESS' : 'FAILURE',
        })),
        testedPullRequests: run.prNumbers.map((n) => ({
          prNumber: n,
          // Required by the contract: the PR's page on its forge, else on the dashboard (git forge).
          prUrl: links.pr(queue.repo, queue.model.branch, n),
          title: title(n),
        })),
        dependentPrs: run.basePrNumbers,
        ...(live
          ? {
              pendingChecks: pendingChecks(run.requiredStatuses ?? queue.model.config.requiredStatuses, live),
            }
          : {}),
      };
      if (run.failures?.length) {
        const ignored = new Set(run.flakyIgnored ?? []);
        details.failingTests = run.failures.map((t) => ({ ...t, ignored: ignored.has(t.name) }));
      }
      if (run.retryOf) details.retryOf = run.retryOf;
      return details;
    },
    async createQueue(input, { org }) {
      const { repo, targetBranch, mode, concurrency, ...settings } = input;
      await service.createQueue(org, repo, targetBranch, mode, concurrency, settings satisfies ConfigPatch);
      return {};
    },
    async deleteQueue(input, { org }) {
      await service.deleteQueue(await replicaSync.queue(org, input.repo, input.targetBranch));
      return {};
    },
    async listQueues(input, { org, request }) {
      await replicaSync.syncAll();
      const at = now();
      const only = input.repo ? normaliseRepo(input.repo) : undefined;
      const queues = registry
        .queuesOf(org)
        .filter(
          (q) =>
            !only || (q.repo.host === only.host && q.repo.owner === only.owner && q.repo.name === only.name),
        )
        .map((q) => summariseQueue(q, at))
        .sort((a, b) =>
          `${a.repo.host}/${a.repo.owner}/${a.repo.name}:${a.targetBranch}`.localeCompare(
            `${b.repo.host}/${b.repo.owner}/${b.repo.name}:${b.targetBranch}`,
          ),
        );
      const permissions = ALL_PERMISSIONS.filter((p) => hasPermission(request, p));
      return { org, permissions, queues };
    },
    async getQueue(input, { org }) {
      const queue = await replicaSync.queue(org, input.repo, input.targetBranch);
      return new RawAnswer(answers.getQueueBody(registry.current(queue)), JSON_TYPE, true);
    },
    async updateQueue(input, { org }) {
      const { repo, targetBranch, ...patch } = input;
      return service.updateQueue(
        await replicaSync.queue(org, repo, targetBranch),
        patch satisfies ConfigPatch,
      );
    },
    async getMergeQueueMetrics(input, { org }) {
      if (input.repo !== undefined && input.repoHost === undefined)
        throw badRequest('repoHost: required when repo is given');
      await replicaSync.syncAll();
      let queues = registry.queuesOf(org);
      if (input.repo !== undefined && input.repoHost !== undefined) {
        const { owner, name } = splitOwnerName(input.repo);
        const repo = normaliseRepo({ host: input.repoHost, owner, name });
        queues = queues.filter(
          (q) => q.repo.host === repo.host && q.repo.owner === repo.owner && q.repo.name === repo.name,
        );
        if (!queues.length)
          throw notFound(
            `repo: no merge queue in ${repo.host}/${repo.owner}/${repo.name} ${ofTokenOrg(org)}`,
          );
      } else if (input.repoHost !== undefined) {
        const host = input.repoHost.toLowerCase();
        queues = queues.filter((q) => q.repo.host === host);
      }
      return new RawAnswer(renderMetrics(queues, now()), METRICS_CONTENT_TYPE);
    },
  };
}
