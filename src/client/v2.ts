/**
 * The client over Trunk's v2 API (`--api-version v2`): the same operations and answers as the v1
 * client (a command cannot tell them apart), each sent as the v2 calls that do it — ids resolved
 * from repository coordinates, Trunk's list envelope followed to its end, the answers converted
 * by v2-shapes.ts. An operation v2 does not have fails before anything is sent, naming it.
 */
import type { z } from 'zod';
import { withoutTrailingSlashes } from '../contract/common.js';
import type { OperationName, Repo, RequestBody, ResponseBody } from '../contract/index.js';
import { V2_ENTRY_STATES } from '../contract/v2/schemas.js';
import {
  ApiError,
  ClientError,
  createTransport,
  parseAnswer,
  ResponseShapeError,
  type Client,
  type ClientOptions,
  type RequestOptions,
  type RouteTable,
  type TransportRequest,
} from './core.js';
import {
  configPatchOf,
  listItemOf,
  settingsOf,
  submittedOf,
  testingDetailsOf,
  transitionOf,
} from './v2-shapes.js';

type Json = Record<string, unknown>;

/** The operations the v2 client can do; any other is an UnsupportedOperationError. */
export const V2_OPERATIONS = [
  'submitPullRequest',
  'cancelPullRequest',
  'restartTestsOnPullRequest',
  'getSubmittedPullRequest',
  'listPullRequests',
  'setImpactedTargets',
  'getMergeQueueTestingDetails',
  'createQueue',
  'deleteQueue',
  'getQueue',
  'updateQueue',
  'getMergeQueueMetrics',
  'getPullRequestHistory',
] as const satisfies readonly OperationName[];

/** An operation the v2 API does not have: the message names it and says to use v1. */
export class UnsupportedOperationError extends ClientError {
  override name = 'UnsupportedOperationError';
  constructor(operation: string, what?: string) {
    super(
      `${operation}: ${what ?? 'not an operation of the v2 API'}; use API version v1 for it (--api-version v1, RAILYARD_API_VERSION=v1 or the Action's api-version: v1)`,
      operation,
    );
  }
}

/** The base URL of `version` from an API URL of either version: `…/v1` ↔ `…/v2`, else `/v2` appended. */
export function versionedUrl(apiUrl: string, version: 'v1' | 'v2'): string {
  const base = withoutTrailingSlashes(apiUrl);
  if (/\/v[12]$/.test(base)) return `${base.slice(0, -3)}/${version}`;
  return `${base}/${version}`;
}

const repoUrl = (repo: Repo) => `https://${repo.host}/${repo.owner}/${repo.name}`;
const repoText = (repo: Repo) => `${repo.host}/${repo.owner}/${repo.name}`;

/**
 * A client over the v2 API at `options.baseUrl` (ending in /v2). `table` gives the v1 answer
 * schemas the converted answers are checked against, as the v1 client checks its own.
 */
export function createV2ClientFor(table: RouteTable, options: ClientOptions): Client {
  const baseUrl = withoutTrailingSlashes(options.baseUrl);
  const send = createTransport(options, 'bearer');
  const repositoryIds = new Map<string, Promise<string>>();

  async function json(op: string, request: TransportRequest): Promise<Json> {
    const text = await send(op, request);
    try {
      return text.trim() === '' ? {} : (JSON.parse(text) as Json);
    } catch (error) {
      throw new ResponseShapeError(`${op}: the server answered with a body that is not JSON`, op, {
        cause: error,
      });
    }
  }

  const get = (op: string, path: string, searchParams: Record<string, string> = {}, signal?: AbortSignal) =>
    json(op, { method: 'GET', path, searchParams, retrySafe: true, ...(signal ? { signal } : {}) });

  /** Every item of a v2 list, following `nextCursor` while `hasMore`. */
  async function all(op: string, path: string, searchParams: Record<string, string>, signal?: AbortSignal) {
    const items: Json[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < 10_000; pages++) {
      const page = await get(
        op,
        path,
        { ...searchParams, limit: '100', ...(cursor ? { cursor } : {}) },
        signal,
      );
      items.push(...((page.data as Json[] | undefined) ?? []));
      if (page.hasMore !== true || typeof page.nextCursor !== 'string') return items;
      cursor = page.nextCursor;
    }
    return items;
  }

  function repositoryId(op: string, repo: Repo, signal?: AbortSignal): Promise<string> {
    const key = repoUrl(repo).toLowerCase();
    let id = repositoryIds.get(key);
    if (!id) {
      id = get(op, 'repositories', { providerUrl: repoUrl(repo) }, signal).then((answer) => {
        const found = (answer.data as Json[] | undefined)?.[0]?.id;
        if (typeof found !== 'string') throw new ApiError(op, 404, `no repository ${repoText(repo)}`);
        return found;
      });
      id.catch(() => repositoryIds.delete(key));
      repositoryIds.set(key, id);
    }
    return id;
  }

  async function queueOf(op: string, repo: Repo, branch: string, signal?: AbortSignal): Promise<Json> {
    const repositoryId_ = await repositoryId(op, repo, signal);
    const answer = await get(
      op,
      'merge-queues',
      { repositoryId: repositoryId_, targetBranch: branch },
      signal,
    );
    const queue = (answer.data as Json[] | undefined)?.find((q) => q.targetBranch === branch);
    if (!queue) throw new ApiError(op, 404, `no merge queue for branch "${branch}" in ${repoText(repo)}`);
    return queue;
  }

  /** The PR of `number` (or head `branch`) with an entry in the queue of `branch`, as v2 shows it. */
  async function prOf(
    op: string,
    key: { repo: Repo; targetBranch: string; pr: { number?: number; branch?: string } },
    signal?: AbortSignal,
  ): Promise<{ pr: Json; queue: Json }> {
    const queue = await queueOf(op, key.repo, key.targetBranch, signal);
    const repositoryId_ = queue.repositoryId as string;
    const query: Record<string, string> =
      key.pr.number !== undefined
        ? { repositoryId: repositoryId_, number: String(key.pr.number) }
        : { repositoryId: repositoryId_, branch: key.pr.branch ?? '' };
    const found = (await all(op, 'pull-requests', query, signal)).filter(
      (pr) => (pr.queueEntry as Json | undefined)?.mergeQueueId === queue.id,
    );
    const pr = found.sort((a, b) => Number(b.number) - Number(a.number))[0];
    const which = key.pr.number !== undefined ? `#${key.pr.number}` : `branch "${key.pr.branch}"`;
    if (!pr)
      throw new ApiError(
        op,
        404,
        `pull request ${which} was never submitted to the ${key.targetBranch} queue of ${repoText(key.repo)}`,
      );
    return { pr, queue };
  }

  const post = (op: string, path: string, body?: unknown, retrySafe = false, signal?: AbortSignal) =>
    json(op, {
      method: 'POST',
      path,
      ...(body === undefined ? {} : { json: body }),
      retrySafe,
      ...(signal ? { signal } : {}),
    });
  const patch = (op: string, path: string, body: unknown, signal?: AbortSignal) =>
    json(op, { method: 'PATCH', path, json: body, retrySafe: false, ...(signal ? { signal } : {}) });

  const priorityFields = (priority: unknown): Json =>
    priority === undefined || priority === null
      ? {}
      : typeof priority === 'number'
        ? { priorityValue: priority }
        : { priorityName: String(priority).toLowerCase() };

  /** Each v1 operation as the v2 calls that do it; the answer in v1's shape. */
  const handlers: Record<
    (typeof V2_OPERATIONS)[number],
    (op: string, body: Json, signal?: AbortSignal) => Promise<unknown>
  > = {
    async submitPullRequest(op, body, signal) {
      const queue = await queueOf(op, body.repo as Repo, body.targetBranch as string, signal);
      const number = (body.pr as { number: number }).number;
      const fields: Json = { ...priorityFields(body.priority) };
      if (body.noBatch !== undefined) fields.allowBatching = !body.noBatch;
      try {
        await post(
          op,
          `merge-queues/${String(queue.id)}/pull-requests`,
          { number, ...fields },
          false,
          signal,
        );
      } catch (error) {
        // v1 takes a resubmission of a queued PR as a change of its priority and batching; v2 refuses it (409).
        if (!(error instanceof ApiError && error.code === 'PR_ALREADY_ENQUEUED')) throw error;
        if (Object.keys(fields).length) {
          const { pr } = await prOf(
            op,
            { ...(body as { repo: Repo; targetBranch: string }), pr: { number } },
            signal,
          );
          await patch(op, `pull-requests/${String(pr.id)}/queue-entry`, fields, signal);
        }
      }
      return {};
    },
    async cancelPullRequest(op, body, signal) {
      const { pr } = await prOf(op, body as never, signal);
      await post(op, `pull-requests/${String(pr.id)}/dequeue`, undefined, false, signal);
      return {};
    },
    async restartTestsOnPullRequest(op, body, signal) {
      const { pr } = await prOf(op, body as never, signal);
      await post(op, `pull-requests/${String(pr.id)}/restart-tests`, undefined, false, signal);
      return {};
    },
    async getSubmittedPullRequest(op, body, signal) {
      const { pr } = await prOf(op, body as never, signal);
      // A single read, for readiness.hasImpactedTargets (absent from lookups).
      const one = await get(op, `pull-requests/${String(pr.id)}`, {}, signal);
      const out = submittedOf(one);
      if (body.includeTimeline === true) {
        const rows = await all(
          op,
          `pull-requests/${String(pr.id)}/queue-entry-history`,
          { direction: 'newest' },
          signal,
        );
        out.timeline = rows
          .map(transitionOf)
          .filter((t) => t.queueEntryId === '' || t.queueEntryId === out.id)
          .map((t) => ({
            state: t.state,
            timestamp: t.at,
            ...(t.reason !== undefined ? { reason: t.reason } : {}),
            ...(t.testRunId !== undefined ? { testRunId: t.testRunId } : {}),
            ...(t.detail !== undefined ? { detail: t.detail } : {}),
          }));
      }
      return out;
    },
    async listPullRequests(op, body, signal) {
      const queue = await queueOf(op, body.repo as Repo, body.targetBranch as string, signal);
      const query: Record<string, string> = {};
      if (typeof body.state === 'string')
        query.state = V2_ENTRY_STATES[body.state as keyof typeof V2_ENTRY_STATES] ?? body.state;
      if (body.since !== undefined) query.concludedAfter = String(body.since);
      if (body.until !== undefined) query.concludedBefore = String(body.until);
      const [prs, order] = await Promise.all([
        all(op, `merge-queues/${String(queue.id)}/pull-requests`, query, signal),
        get(op, `merge-queues/${String(queue.id)}/order`, {}, signal),
      ]);
      const rows = inListOrder(prs.map(listItemOf), order);
      const offset = typeof body.cursor === 'string' && /^\d+$/.test(body.cursor) ? Number(body.cursor) : 0;
      const take = typeof body.take === 'number' ? body.take : 50;
      const page = rows.slice(offset, offset + take);
      return {
        pullRequests: page,
        ...(offset + take < rows.length ? { nextCursor: String(offset + take) } : {}),
      };
    },
    async setImpactedTargets(op, body, signal) {
      const repositoryId_ = await repositoryId(op, body.repo as Repo, signal);
      const pr = body.pr as { number: number; sha: string };
      const targets = body.impactedTargets;
      await json(op, {
        method: 'PUT',
        path: 'impacted-targets',
        json: {
          repositoryId: repositoryId_,
          targetBranch: body.targetBranch,
          sha: pr.sha,
          number: pr.number,
          ...(targets === 'ALL' || (typeof targets === 'string' && targets.toUpperCase() === 'ALL')
            ? { impactsAllTargets: true }
            : { impactedTargets: targets }),
        },
        retrySafe: true,
        ...(signal ? { signal } : {}),
      });
      return {};
    },
    async getMergeQueueTestingDetails(op, body, signal) {
      const id = encodeURIComponent(String(body.testRunId));
      return testingDetailsOf(await get(op, `merge-queue-verification-runs/${id}`, {}, signal));
    },
    async createQueue(op, body, signal) {
      const repositoryId_ = await repositoryId(op, body.repo as Repo, signal);
      const {
        repo: _r,
        targetBranch,
        mode,
        concurrency,
        bisectionConcurrency,
        enqueueingLabel,
        ...rest
      } = body;
      const { patch: config, unknown } = configPatchOf(rest);
      if (unknown.length)
        throw new UnsupportedOperationError(op, `${unknown.join(', ')}: not a setting of the v2 API`);
      const queue = await post(
        op,
        'merge-queues',
        {
          repositoryId: repositoryId_,
          targetBranch,
          ...(mode !== undefined ? { mode: mode === 'parallel' ? 'graph' : 'queue' } : {}),
          ...(concurrency !== undefined ? { concurrency } : {}),
          ...(bisectionConcurrency !== undefined ? { bisectionConcurrency } : {}),
          ...(enqueueingLabel !== undefined ? { enqueueingLabel } : {}),
        },
        false,
        signal,
      );
      if (Object.keys(config).length)
        await patch(op, `merge-queues/${String(queue.id)}/config`, config, signal);
      return {};
    },
    async deleteQueue(op, body, signal) {
      const queue = await queueOf(op, body.repo as Repo, body.targetBranch as string, signal);
      await json(op, {
        method: 'DELETE',
        path: `merge-queues/${String(queue.id)}`,
        retrySafe: false,
        ...(signal ? { signal } : {}),
      });
      return {};
    },
    async getQueue(op, body, signal) {
      const queue = await queueOf(op, body.repo as Repo, body.targetBranch as string, signal);
      const [full, order, prs] = await Promise.all([
        get(op, `merge-queues/${String(queue.id)}`, {}, signal),
        get(op, `merge-queues/${String(queue.id)}/order`, {}, signal),
        all(
          op,
          `merge-queues/${String(queue.id)}/pull-requests`,
          { state: 'pending,testing,testsPassed,pendingFailure' },
          signal,
        ),
      ]);
      return { ...settingsOf(full), enqueuedPullRequests: inListOrder(prs.map(listItemOf), order) };
    },
    async updateQueue(op, body, signal) {
      const { patch: config, unknown } = configPatchOf(body);
      if (unknown.length)
        throw new UnsupportedOperationError(op, `${unknown.join(', ')}: not a setting of the v2 API`);
      let queue = await queueOf(op, body.repo as Repo, body.targetBranch as string, signal);
      const at = `merge-queues/${String(queue.id)}`;
      if (body.mode !== undefined)
        await post(
          op,
          `${at}/switch-modes`,
          { mode: body.mode === 'parallel' ? 'graph' : 'queue' },
          false,
          signal,
        );
      if (Object.keys(config).length) queue = await patch(op, `${at}/config`, config, signal);
      if (body.state !== undefined) {
        const action = { running: 'resume', paused: 'pause', draining: 'drain' }[String(body.state)];
        if (!action)
          throw new UnsupportedOperationError(op, `state ${String(body.state)}: not a state v2 sets`);
        await post(op, `${at}/${action}`, undefined, false, signal);
      }
      if (body.mode !== undefined || body.state !== undefined || !Object.keys(config).length)
        queue = await get(op, at, {}, signal);
      return settingsOf(queue);
    },
    async getMergeQueueMetrics(op, body, signal) {
      const repo = body.repo as string | undefined;
      const query: Record<string, string> = {};
      if (repo) {
        const [owner, name] = repo.split('/') as [string, string];
        query.repositoryId = await repositoryId(
          op,
          { host: (body.repoHost as string | undefined) ?? 'github.com', owner, name },
          signal,
        );
      }
      return send(op, {
        method: 'GET',
        path: 'merge-queues/metrics',
        searchParams: query,
        retrySafe: true,
        ...(signal ? { signal } : {}),
      });
    },
    async getPullRequestHistory(op, body, signal) {
      const { pr } = await prOf(op, body as never, signal);
      const rows = await all(
        op,
        `pull-requests/${String(pr.id)}/queue-entry-history`,
        { direction: 'oldest' },
        signal,
      );
      return { prNumber: pr.number, transitions: rows.map(transitionOf) };
    },
  };

  async function call<Op extends OperationName>(
    op: Op,
    body: RequestBody<Op>,
    requestOptions: RequestOptions = {},
  ): Promise<ResponseBody<Op>> {
    const def = table[op];
    if (!def) throw new Error(`${op}: not an operation of this client's route table`);
    const handler = handlers[op as (typeof V2_OPERATIONS)[number]];
    if (!handler) throw new UnsupportedOperationError(op);
    const signal = requestOptions.signal ?? options.signal;
    const answer = await handler(op, (body ?? {}) as Json, signal);
    if (def.response === 'text') return answer as ResponseBody<Op>;
    return parseAnswer(op, JSON.stringify(answer), def.response as z.ZodType, baseUrl) as ResponseBody<Op>;
  }

  // eslint-disable-next-line require-yield
  async function* pages(op: string): AsyncGenerator<never> {
    throw new UnsupportedOperationError(op);
  }

  return { baseUrl, call: call as Client['call'], pages: pages as Client['pages'] };
}

/**
 * Rows in v1's list order: the line as /order gives it (runs in the order they started, then
 * the pending PRs), then those not ready (by priority, then submission), then those that left
 * the queue in the order they left.
 */
function inListOrder(rows: Json[], order: Json): Json[] {
  const position = new Map<number, number>();
  const batches = (order.batches as { pullRequests?: Json[] }[] | undefined) ?? [];
  for (const b of batches)
    for (const p of b.pullRequests ?? []) position.set(Number(p.number), position.size);
  for (const p of (order.pending as { pullRequest?: Json }[] | undefined) ?? [])
    if (p.pullRequest) position.set(Number(p.pullRequest.number), position.size);
  const group = (r: Json) =>
    position.has(Number(r.prNumber))
      ? 0
      : !['merged', 'failed', 'cancelled', 'not_ready'].includes(String(r.state))
        ? 1
        : r.state === 'not_ready'
          ? 2
          : 3;
  const time = (value: unknown) => Date.parse(String(value ?? '')) || 0;
  return [...rows].sort((a, b) => {
    const ga = group(a);
    const gb = group(b);
    if (ga !== gb) return ga - gb;
    if (ga === 0) return (position.get(Number(a.prNumber)) ?? 0) - (position.get(Number(b.prNumber)) ?? 0);
    if (ga === 3)
      return time(a.stateChangedAt) - time(b.stateChangedAt) || time(a.enqueuedAt) - time(b.enqueuedAt);
    return Number(a.priorityValue) - Number(b.priorityValue) || time(a.enqueuedAt) - time(b.enqueuedAt);
  });
}
