/**
 * The v2 merge-queue operations on queues themselves: list, create, get, PATCH config, switch
 * modes, pause/resume/drain and delete, over the same queue service as v1's.
 */
import type { ConfigPatch } from '../../../engine/index.js';
import { activeEntries, freezesProblem } from '../../../engine/index.js';
import {
  invert,
  V2_MERGE_METHODS,
  V2_MODES,
  V2_OPTIMIZATION_MODES,
  type UpdateMergeQueueConfigRequest,
} from '../../../contract/v2/schemas.js';
import type { V2OperationId } from '../../../contract/v2/routes.js';
import type { QueueHandle } from '../../queue/handle.js';
import type { V2Context } from './context.js';
import { V2Error, validationFailed } from './errors.js';
import { repositoryId } from './ids.js';
import { pageOf } from './paging.js';
import { presentQueue, presentStateChange } from './present.js';
import type { V2Handler } from './types.js';

const MODE_FROM_V2 = invert(V2_MODES);
const MERGE_METHOD_FROM_V2 = invert(V2_MERGE_METHODS);
const OPTIMIZATION_FROM_V2 = invert(V2_OPTIMIZATION_MODES);

/** Trunk's setting name → Railyard's (v1) name, for the settings that only changed name. */
const RENAMED = {
  concurrency: 'concurrency',
  bisectionConcurrency: 'bisectionConcurrency',
  pendingFailureDepth: 'pendingFailureDepth',
  canOptimisticallyMerge: 'canOptimisticallyMerge',
  allowBatching: 'batch',
  batchingMaxWaitTimeMinutes: 'batchingMaxWaitTimeMinutes',
  batchingMinSize: 'batchingMinSize',
  testingTimeoutMinutes: 'testingTimeoutMinutes',
  createsPrsForTestingBranches: 'createPrsForTestingBranches',
  areCommentsEnabled: 'commentsEnabled',
  areCommandsEnabled: 'commandsEnabled',
  isStatusCheckEnabled: 'statusCheckEnabled',
  isExtensionEnabled: 'extensionEnabled',
  areLabelCommandsEnabled: 'labelCommandsEnabled',
  areStateLabelsEnabled: 'stateLabelsEnabled',
  directMergeMode: 'directMergeMode',
  enqueueingLabel: 'enqueueingLabel',
} as const satisfies Partial<Record<keyof UpdateMergeQueueConfigRequest, keyof ConfigPatch>>;

/** A v2 config patch as the engine's ConfigPatch; 400 for the settings this server cannot hold. */
export function configPatchOf(body: UpdateMergeQueueConfigRequest): ConfigPatch {
  const patch: Record<string, unknown> = {};
  for (const [v2, v1] of Object.entries(RENAMED)) {
    const value = body[v2 as keyof typeof RENAMED];
    if (value !== undefined) patch[v1] = value;
  }
  if (body.mergeMethod !== undefined) patch.mergeMethod = MERGE_METHOD_FROM_V2[body.mergeMethod];
  if (body.optimizationMode !== undefined)
    patch.optimizationMode = OPTIMIZATION_FROM_V2[body.optimizationMode];
  // `[]` clears the list (v1's deleteRequiredStatuses): the queue then waits for the repository's checks.
  if (body.requiredStatuses !== undefined) {
    if (body.requiredStatuses.length === 0) patch.deleteRequiredStatuses = true;
    else patch.requiredStatuses = body.requiredStatuses;
  }
  if (body['x-railyard-freezes'] !== undefined) {
    const problem = freezesProblem(body['x-railyard-freezes']);
    if (problem) throw validationFailed(`x-railyard-${problem}`);
    patch.freezes = body['x-railyard-freezes'];
  }
  if (body['x-railyard-freezeBypassPriority'] !== undefined)
    patch.freezeBypassPriority = body['x-railyard-freezeBypassPriority'];
  const unsupported = (field: string, allowed: string) =>
    validationFailed(`${field}: this server supports only ${allowed} (the engine has no such setting)`);
  if (body.notReadyTimeoutMinutes !== undefined && body.notReadyTimeoutMinutes !== 0)
    throw unsupported('notReadyTimeoutMinutes', '0 (no timeout)');
  if (body.allowedBotSubmitters !== undefined && body.allowedBotSubmitters.length > 0)
    throw unsupported('allowedBotSubmitters', '[]');
  if (body.batchingRules !== undefined && body.batchingRules.length > 0)
    throw unsupported('batchingRules', '[]');
  if (body.testBranchConstructionMode !== undefined && body.testBranchConstructionMode !== 'renameTempBranch')
    throw unsupported('testBranchConstructionMode', 'renameTempBranch');
  return patch as ConfigPatch;
}

function refuseWhileSwitching(queue: QueueHandle): void {
  if (queue.model.config.state === 'switching_modes')
    throw new V2Error(
      409,
      'MODE_CHANGE_IN_PROGRESS',
      `merge queue ${queue.id} is switching modes: try again once it has`,
    );
}

export function queueHandlers(ctx: V2Context): Partial<Record<V2OperationId, V2Handler>> {
  const { service, links } = ctx;
  const current = (queue: QueueHandle) => service.registry.current(queue);
  const setState = async (queue: QueueHandle, state: 'running' | 'paused' | 'draining') => {
    await service.updateQueue(queue, { state });
    return presentStateChange(current(queue));
  };
  return {
    async 'mergeQueues.list'({ org, query }) {
      if (query.targetBranch !== undefined && query.repositoryId === undefined)
        throw validationFailed('targetBranch: give repositoryId with it');
      const queues = (await ctx.queuesOf(org))
        .filter((q) => query.repositoryId === undefined || repositoryId(org, q.repo) === query.repositoryId)
        .filter((q) => query.targetBranch === undefined || q.model.branch === query.targetBranch)
        .sort((a, b) => a.key.localeCompare(b.key));
      return pageOf(
        queues,
        (q) => q.id,
        (q) => presentQueue(q, links),
        'mergeQueues.list',
        query,
      );
    },
    async 'mergeQueues.create'({ org, body, reply }) {
      const repo = await ctx.repository(org, body.repositoryId as string);
      const branch = body.targetBranch as string;
      const mode = body.mode === undefined ? undefined : MODE_FROM_V2[body.mode as 'queue' | 'graph'];
      const settings: ConfigPatch = {};
      if (body.bisectionConcurrency !== undefined)
        settings.bisectionConcurrency = body.bisectionConcurrency as number;
      if (body.enqueueingLabel !== undefined) settings.enqueueingLabel = body.enqueueingLabel as string;
      try {
        await service.createQueue(org, repo, branch, mode, body.concurrency as number | undefined, settings);
      } catch (error) {
        if ((error as { code?: unknown }).code === 'conflict')
          throw new V2Error(
            409,
            'QUEUE_ALREADY_EXISTS',
            `a merge queue for ${branch} already exists in this repository`,
          );
        throw error;
      }
      reply.code(201);
      return presentQueue(service.registry.require(org, repo, branch), links);
    },
    async 'mergeQueues.get'({ org, id }) {
      return presentQueue(await ctx.queue(org, id), links);
    },
    async 'mergeQueues.updateConfig'({ org, id, body }) {
      const queue = await ctx.queue(org, id);
      refuseWhileSwitching(queue);
      const patch = configPatchOf(body as UpdateMergeQueueConfigRequest);
      if (Object.keys(patch).length > 0) await service.updateQueue(queue, patch);
      return presentQueue(current(queue), links);
    },
    async 'mergeQueues.switchModes'({ org, id, body }) {
      const queue = await ctx.queue(org, id);
      const mode = MODE_FROM_V2[body.mode as 'queue' | 'graph'];
      // The mode it has (or is switching to): nothing to do.
      if (queue.model.config.mode === mode || queue.model.config.pendingMode === mode)
        return presentStateChange(queue);
      refuseWhileSwitching(queue);
      await service.updateQueue(queue, { mode });
      return presentStateChange(current(queue));
    },
    async 'mergeQueues.pause'({ org, id }) {
      return setState(await ctx.queue(org, id), 'paused');
    },
    async 'mergeQueues.resume'({ org, id }) {
      return setState(await ctx.queue(org, id), 'running');
    },
    async 'mergeQueues.drain'({ org, id }) {
      return setState(await ctx.queue(org, id), 'draining');
    },
    async 'mergeQueues.delete'({ org, id, reply }) {
      const queue = await ctx.queue(org, id);
      const active = activeEntries(queue.model).length;
      if (active > 0)
        throw new V2Error(
          409,
          'QUEUE_HAS_ACTIVE_ENTRIES',
          `merge queue ${id} holds ${active} pull request${active === 1 ? '' : 's'}: dequeue or merge them first`,
        );
      await service.deleteQueue(queue);
      reply.code(204);
      return undefined;
    },
  };
}
