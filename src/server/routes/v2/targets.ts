/**
 * The v2 impacted-target upload (202: the queue re-evaluates readiness after the answer) and the
 * Prometheus metrics of all the organisation's queues or one, with v1's series and labels.
 */
import type { V2OperationId } from '../../../contract/v2/routes.js';
import { isTerminal } from '../../../engine/index.js';
import { ApiError } from '../../errors.js';
import { METRICS_CONTENT_TYPE, renderMetrics } from '../../queue/metrics.js';
import type { V2Context } from './context.js';
import { V2Error } from './errors.js';
import { repositoryId } from './ids.js';
import { V2Text, type V2Handler } from './types.js';

export function targetAndMetricHandlers(ctx: V2Context): Partial<Record<V2OperationId, V2Handler>> {
  const { service } = ctx;
  return {
    async 'impactedTargets.upload'({ org, body }) {
      const repo = await ctx.repository(org, body.repositoryId as string);
      const queue = service.registry.find(org, repo, body.targetBranch as string);
      if (!queue)
        throw new V2Error(
          404,
          'MERGE_QUEUE_NOT_FOUND',
          `no merge queue for ${String(body.targetBranch)} in this repository`,
        );
      let number = body.number as number | undefined;
      if (number === undefined) {
        // By head branch: its live entry, else its latest.
        const entries = queue.model.entries.filter((e) => e.pr.headBranch === body.branch);
        const pick = entries.find((e) => !isTerminal(e.state)) ?? entries.sort((a, b) => b.seq - a.seq)[0];
        if (!pick)
          throw new V2Error(
            404,
            'PR_NOT_FOUND',
            `no pull request from branch ${String(body.branch)} in this queue`,
          );
        number = pick.prNumber;
      }
      const targets = body.impactsAllTargets === true ? ('ALL' as const) : (body.impactedTargets as string[]);
      try {
        await service.setImpactedTargets(
          await service.replicaSync.queue(org, repo, queue.model.branch),
          number,
          body.sha as string,
          targets,
        );
      } catch (error) {
        if (error instanceof ApiError && error.code === 'invalid_request')
          throw new V2Error(400, 'VALIDATION_FAILED', error.message);
        throw error;
      }
      return undefined;
    },
    async 'mergeQueues.organizationMetrics'({ org, query }) {
      let queues = await ctx.queuesOf(org);
      if (query.repositoryId !== undefined) {
        await ctx.repository(org, query.repositoryId as string);
        queues = queues.filter((q) => repositoryId(org, q.repo) === query.repositoryId);
      }
      return new V2Text(renderMetrics(queues, ctx.now()), METRICS_CONTENT_TYPE);
    },
    async 'mergeQueues.metrics'({ org, id }) {
      return new V2Text(renderMetrics([await ctx.queue(org, id)], ctx.now()), METRICS_CONTENT_TYPE);
    },
  };
}
