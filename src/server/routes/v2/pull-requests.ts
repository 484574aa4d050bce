/**
 * The v2 pull-request operations: submit and list (of a queue), resolve by coordinates, get,
 * reprioritize, PATCH queue-entry, restart-tests, dequeue and the queue-entry histories, over the
 * same queue service as v1's (a PR submitted on v1 reads here and back). v2's behaviour changes
 * are decided here: 409 PR_ALREADY_ENQUEUED on a resubmission, 409 PR_NOT_IN_ACTIVE_STATE on a
 * write to a concluded entry, 422 PR_TESTS_NOT_RESTARTABLE.
 */
import { isoTime, PRIORITY_NAMES, type PriorityInput } from '../../../contract/index.js';
import { V2_ENTRY_STATES, type V2EntryState } from '../../../contract/v2/schemas.js';
import type { V2OperationId } from '../../../contract/v2/routes.js';
import { EngineRejection, findEntry, isTerminal, type Entry } from '../../../engine/index.js';
import type { PrTransition } from '../../../store/index.js';
import { ApiError } from '../../errors.js';
import type { QueueHandle } from '../../queue/handle.js';
import type { FoundPr, V2Context } from './context.js';
import { V2Error, validationFailed } from './errors.js';
import { pullRequestId, repositoryId } from './ids.js';
import { pageOf } from './paging.js';
import { presentPullRequest } from './present.js';
import { jsonText, PerModelCache, type V2Handler } from './types.js';

/** The priority of a body: priorityValue, or a known priorityName (any case). */
function priorityOf(body: Record<string, unknown>): PriorityInput | undefined {
  if (typeof body.priorityValue === 'number') return body.priorityValue;
  if (typeof body.priorityName !== 'string') return undefined;
  const name = body.priorityName.toLowerCase();
  if (!(name in PRIORITY_NAMES))
    throw validationFailed(
      `priorityName: "${body.priorityName}" is not one of ${Object.keys(PRIORITY_NAMES).join(', ')}`,
    );
  return name as PriorityInput;
}

function requireActive(found: FoundPr, id: string): void {
  if (isTerminal(found.entry.state))
    throw new V2Error(
      409,
      'PR_NOT_IN_ACTIVE_STATE',
      `pull request ${id} is ${V2_ENTRY_STATES[found.entry.state]}, not in its queue`,
    );
}

/**
 * A write to a live entry: the engine decides on the committed copy, so an entry that concluded
 * meanwhile is 409 PR_NOT_IN_ACTIVE_STATE there too, and one being merged cannot restart (422).
 */
async function liveWrite(id: string, write: () => Promise<unknown>): Promise<void> {
  try {
    await write();
  } catch (error) {
    if (error instanceof EngineRejection && error.kind === 'invalid')
      throw new V2Error(409, 'PR_NOT_IN_ACTIVE_STATE', `pull request ${id}: ${error.message}`);
    if (error instanceof EngineRejection && error.kind === 'conflict')
      throw new V2Error(422, 'PR_TESTS_NOT_RESTARTABLE', `pull request ${id}: ${error.message}`);
    throw error;
  }
}

/** A transition of the store as Trunk's QueueEntryStateTransition. */
function presentTransition(pullRequestId: string, t: PrTransition) {
  const state = V2_ENTRY_STATES[t.to];
  const out: Record<string, unknown> = {
    pullRequestId,
    state,
    changedAt: isoTime(t.at),
    reason: t.to === 'testing' || t.to === 'pending_failure' ? null : t.reason,
  };
  if (
    t.testRunId !== null &&
    (t.to === 'testing' || t.to === 'tests_passed' || t.to === 'failed' || t.to === 'pending_failure')
  )
    out.verificationRunId = t.testRunId;
  if (t.detail !== null) out['x-railyard-detail'] = t.detail;
  out['x-railyard-queueEntryId'] = t.entryId;
  if (t.testRunId !== null) out['x-railyard-testRunId'] = t.testRunId;
  if (t.from !== null) out['x-railyard-previousState'] = V2_ENTRY_STATES[t.from];
  return out;
}

export function pullRequestHandlers(ctx: V2Context): Partial<Record<V2OperationId, V2Handler>> {
  const { service, links } = ctx;
  const present = (queue: QueueHandle, prNumber: number, single = true) =>
    presentPullRequest(service.registry.current(queue), prNumber, links, single);

  /** A page of the queue's PRs, most recently enqueued first. */
  const listPage = (queue: QueueHandle, query: Record<string, unknown>) => {
    const states = query.state as V2EntryState[] | undefined;
    const after = query.concludedAfter === undefined ? undefined : Date.parse(query.concludedAfter as string);
    const before =
      query.concludedBefore === undefined ? undefined : Date.parse(query.concludedBefore as string);
    const current = new Map<number, Entry>();
    for (const e of queue.model.entries) {
      const held = current.get(e.prNumber);
      if (!held || (isTerminal(held.state) && (!isTerminal(e.state) || e.seq > held.seq)))
        current.set(e.prNumber, e);
    }
    const entries = [...current.values()]
      .filter((e) => !states || states.includes(V2_ENTRY_STATES[e.state]))
      .filter((e) => query.author === undefined || e.pr.author === query.author)
      .filter((e) => {
        if (after === undefined && before === undefined) return true;
        if (e.concludedAt === null) return false;
        return (
          (after === undefined || e.concludedAt >= after) && (before === undefined || e.concludedAt <= before)
        );
      })
      // Most recently enqueued first.
      .sort((a, b) => b.submittedAt - a.submittedAt || b.seq - a.seq);
    return pageOf(
      entries,
      (e) => String(e.prNumber),
      (e) => present(queue, e.prNumber, false),
      `listPullRequests:${queue.id}`,
      query,
    );
  };
  const listCache = new PerModelCache();
  const getCache = new PerModelCache(256);

  /** Numbered history rows, oldest first (the number is the cursor's key: history only grows). */
  const historyOf = async (found: FoundPr) =>
    (await service.history(found.queue, found.prNumber)).map((t, i) => ({ t, i }));

  return {
    async 'mergeQueues.submitPullRequest'({ org, id, body, reply }) {
      const queue = await ctx.queue(org, id);
      const number = body.number as number;
      const existing = findEntry(queue.model, number);
      if (existing && !isTerminal(existing.state))
        throw new V2Error(
          409,
          'PR_ALREADY_ENQUEUED',
          `pull request #${number} is already in this queue (${V2_ENTRY_STATES[existing.state]}): use reprioritize or PATCH queue-entry`,
        );
      const priority = priorityOf(body);
      try {
        await service.submit(queue, number, {
          priority,
          noBatch: body.allowBatching === false,
          direct: body.direct === true,
        });
      } catch (error) {
        if (error instanceof ApiError && error.code === 'not_found')
          throw new V2Error(404, 'PR_NOT_FOUND', error.message);
        if (error instanceof ApiError && error.code === 'invalid_request')
          throw new V2Error(422, 'PR_NOT_ENQUEUEABLE', error.message);
        throw error;
      }
      reply.code(201);
      return present(queue, number);
    },
    async 'mergeQueues.listPullRequests'({ org, id, query, rawQuery }) {
      const queue = await ctx.queue(org, id);
      // Answered once per queue version and query string (the same string, the same validated
      // query): a long list is read far more often than it changes.
      return listCache.get(queue.model, rawQuery, () => jsonText(listPage(queue, query)));
    },
    async 'pullRequests.resolveByCoordinates'({ org, query }) {
      const numbers = query.number as number[] | undefined;
      const branch = query.branch as string | undefined;
      if ((numbers === undefined) === (branch === undefined))
        throw validationFailed('give number or branch (one of them)');
      if (query.baseBranch !== undefined && branch === undefined)
        throw validationFailed('baseBranch: give branch with it');
      const queues = (await ctx.queuesOf(org)).filter(
        (q) => repositoryId(org, q.repo) === query.repositoryId,
      );
      if (queues.length === 0) await ctx.repository(org, query.repositoryId as string);
      const found: FoundPr[] = [];
      const seen = new Set<string>();
      const candidates = numbers
        ? [...new Set(numbers)].sort((a, b) => a - b)
        : [
            ...new Set(
              queues.flatMap((q) =>
                q.model.entries.filter((e) => e.pr.headBranch === branch).map((e) => e.prNumber),
              ),
            ),
          ].sort((a, b) => a - b);
      for (const n of candidates) {
        const prId = queues.length ? pullRequestId(org, queues[0]!.repo, n) : '';
        const pr = ctx.findPullRequest(queues, prId);
        if (!pr || seen.has(prId)) continue;
        if (query.baseBranch !== undefined && pr.entry.pr.baseBranch !== query.baseBranch) continue;
        seen.add(prId);
        found.push(pr);
      }
      const single = numbers !== undefined && numbers.length === 1;
      return pageOf(
        found,
        (f) => String(f.prNumber),
        (f) => present(f.queue, f.prNumber, single),
        'resolveByCoordinates',
        query,
      );
    },
    async 'pullRequests.get'({ org, id }) {
      const found = await ctx.pullRequest(org, id);
      // As v1's read: a live PR whose forge facts changed goes through the engine first.
      if (!isTerminal(found.entry.state)) await service.refreshFacts(found.queue, { number: found.prNumber });
      // Serialized once per queue version, as v1's getSubmittedPullRequest is.
      const queue = service.registry.current(found.queue);
      return getCache.get(queue.model, String(found.prNumber), () =>
        jsonText(present(queue, found.prNumber)),
      );
    },
    async 'pullRequests.reprioritize'({ org, id, body }) {
      const found = await ctx.pullRequest(org, id);
      requireActive(found, id);
      await service.submit(found.queue, found.prNumber, { priority: priorityOf(body) });
      return present(found.queue, found.prNumber);
    },
    async 'pullRequests.updateQueueEntry'({ org, id, body }) {
      const found = await ctx.pullRequest(org, id);
      requireActive(found, id);
      const noBatch = body.allowBatching === undefined ? undefined : body.allowBatching === false;
      const priority = priorityOf(body);
      const direct = typeof body.direct === 'boolean' ? body.direct : undefined;
      if (priority !== undefined || noBatch !== undefined || direct !== undefined)
        await service.submit(found.queue, found.prNumber, { priority, noBatch, direct });
      return present(found.queue, found.prNumber);
    },
    async 'pullRequests.restartTests'({ org, id }) {
      const found = await ctx.pullRequest(org, id);
      requireActive(found, id);
      if (found.entry.state !== 'testing' && found.entry.state !== 'pending_failure')
        throw new V2Error(
          422,
          'PR_TESTS_NOT_RESTARTABLE',
          `pull request ${id} is ${V2_ENTRY_STATES[found.entry.state]}: only testing or pendingFailure entries restart`,
        );
      await liveWrite(id, () => service.restart(found.queue, found.prNumber));
      return present(found.queue, found.prNumber);
    },
    async 'pullRequests.dequeue'({ org, id }) {
      const found = await ctx.pullRequest(org, id);
      requireActive(found, id);
      await liveWrite(id, () => service.cancel(found.queue, found.prNumber));
      return present(found.queue, found.prNumber);
    },
    async 'pullRequests.queueEntryHistory'({ org, id, query }) {
      const found = await ctx.pullRequest(org, id);
      const rows = await historyOf(found);
      if (query.direction === 'newest') rows.reverse();
      const prId = id.toLowerCase();
      return pageOf(
        rows,
        (r) => String(r.i),
        (r) => presentTransition(prId, r.t),
        `history:${prId}`,
        query,
      );
    },
    async 'pullRequests.queueEntryHistoryBatch'({ org, query }) {
      const queues = await ctx.queuesOf(org);
      const ids = [...new Set((query.pullRequestIds as string[]).map((i) => i.toLowerCase()))];
      const groups = await Promise.all(
        ids.map(async (prId) => {
          const found = ctx.findPullRequest(queues, prId);
          const rows = found ? await historyOf(found) : [];
          if (query.direction === 'newest') rows.reverse();
          return { pullRequestId: prId, transitions: rows.map((r) => presentTransition(prId, r.t)) };
        }),
      );
      return pageOf(
        groups,
        (g) => g.pullRequestId,
        (g) => g,
        'queueEntryHistoryBatch',
        query,
      );
    },
  };
}
