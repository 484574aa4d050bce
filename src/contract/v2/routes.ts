/**
 * THE v2 route table: every /v2 operation Railyard serves, its method and path (Fastify's `:id`
 * form, below the `/v2` prefix), the schemas of its query and body, its success status, the
 * schema of Trunk's description its answer follows, and the permission a write needs.
 */
import type { z } from 'zod';
import * as s from './schemas.js';

/**
 * The permission a token needs for an operation (Trunk's permission sets; null = any valid token,
 * a read). The permission check hooks onto this field; operations whose need depends on the body
 * (a priority on submit, `allowBatching: false`) say so in `bodyPermissions`.
 */
export type V2Permission = 'merge' | 'priority' | 'skip_batching' | 'direct' | 'settings';

export interface V2RouteDef {
  readonly operationId: string;
  readonly method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  /** Below `/v2`, with `:id` for the path parameter. */
  readonly path: string;
  readonly summary: string;
  readonly tag: 'mergeQueues' | 'pullRequests' | 'repositories';
  readonly permission: V2Permission | null;
  /** Further permissions a body field needs: field name → permission. */
  readonly bodyPermissions?: Readonly<Record<string, V2Permission>>;
  readonly query: z.ZodType | null;
  readonly body: z.ZodType | null;
  readonly status: 200 | 201 | 202 | 204;
  /** The schema (components.schemas of Trunk's description) the answer follows; null: no body. */
  readonly response: string | null;
  /** Not in Trunk's description: a Railyard addition (marked `x-railyard` in /v2/openapi.json). */
  readonly extension?: boolean;
}

const r = <const R extends V2RouteDef>(def: R): R => def;
const PRIORITY_FIELDS = {
  priorityValue: 'priority',
  priorityName: 'priority',
  allowBatching: 'skip_batching',
  direct: 'direct',
} as const;

export const v2Routes = {
  'mergeQueues.list': r({
    operationId: 'mergeQueues.list',
    method: 'GET',
    path: '/merge-queues',
    tag: 'mergeQueues',
    summary: "The organisation's merge queues, optionally of one repository and target branch",
    permission: null,
    query: s.MergeQueuesQuery,
    body: null,
    status: 200,
    response: 'MergeQueueList',
  }),
  'mergeQueues.create': r({
    operationId: 'mergeQueues.create',
    method: 'POST',
    path: '/merge-queues',
    tag: 'mergeQueues',
    summary: 'Create a merge queue for a repository and target branch (409 QUEUE_ALREADY_EXISTS)',
    permission: 'settings',
    query: null,
    body: s.CreateMergeQueueRequest,
    status: 201,
    response: 'MergeQueue',
  }),
  'mergeQueues.get': r({
    operationId: 'mergeQueues.get',
    method: 'GET',
    path: '/merge-queues/:id',
    tag: 'mergeQueues',
    summary: 'One merge queue, its settings under `config`',
    permission: null,
    query: null,
    body: null,
    status: 200,
    response: 'MergeQueue',
  }),
  'mergeQueues.updateConfig': r({
    operationId: 'mergeQueues.updateConfig',
    method: 'PATCH',
    path: '/merge-queues/:id/config',
    tag: 'mergeQueues',
    summary: 'Change settings (JSON Merge Patch; an unknown key is a 400)',
    permission: 'settings',
    query: null,
    body: s.UpdateMergeQueueConfigRequest,
    status: 200,
    response: 'MergeQueue',
  }),
  'mergeQueues.switchModes': r({
    operationId: 'mergeQueues.switchModes',
    method: 'POST',
    path: '/merge-queues/:id/switch-modes',
    tag: 'mergeQueues',
    summary: 'Switch between `queue` and `graph` (the queue drains first: `switchingModes`)',
    permission: 'settings',
    query: null,
    body: s.SwitchModesRequest,
    status: 200,
    response: 'MergeQueueStateChange',
  }),
  'mergeQueues.pause': r({
    operationId: 'mergeQueues.pause',
    method: 'POST',
    path: '/merge-queues/:id/pause',
    tag: 'mergeQueues',
    summary: 'Pause the queue',
    permission: 'settings',
    query: null,
    body: null,
    status: 200,
    response: 'MergeQueueStateChange',
  }),
  'mergeQueues.resume': r({
    operationId: 'mergeQueues.resume',
    method: 'POST',
    path: '/merge-queues/:id/resume',
    tag: 'mergeQueues',
    summary: 'Resume the queue',
    permission: 'settings',
    query: null,
    body: null,
    status: 200,
    response: 'MergeQueueStateChange',
  }),
  'mergeQueues.drain': r({
    operationId: 'mergeQueues.drain',
    method: 'POST',
    path: '/merge-queues/:id/drain',
    tag: 'mergeQueues',
    summary: 'Drain the queue (no new PRs start; those in it finish)',
    permission: 'settings',
    query: null,
    body: null,
    status: 200,
    response: 'MergeQueueStateChange',
  }),
  'mergeQueues.delete': r({
    operationId: 'mergeQueues.delete',
    method: 'DELETE',
    path: '/merge-queues/:id',
    tag: 'mergeQueues',
    summary: 'Delete an empty queue (409 QUEUE_HAS_ACTIVE_ENTRIES)',
    permission: 'settings',
    query: null,
    body: null,
    status: 204,
    response: null,
  }),
  'mergeQueues.submitPullRequest': r({
    operationId: 'mergeQueues.submitPullRequest',
    method: 'POST',
    path: '/merge-queues/:id/pull-requests',
    tag: 'mergeQueues',
    summary: 'Submit a pull request (409 PR_ALREADY_ENQUEUED when it is in the queue)',
    permission: 'merge',
    bodyPermissions: PRIORITY_FIELDS,
    query: null,
    body: s.SubmitPullRequestRequest,
    status: 201,
    response: 'PullRequest',
  }),
  'mergeQueues.listPullRequests': r({
    operationId: 'mergeQueues.listPullRequests',
    method: 'GET',
    path: '/merge-queues/:id/pull-requests',
    tag: 'mergeQueues',
    summary: "The queue's pull requests, most recently enqueued first",
    permission: null,
    query: s.QueuePullRequestsQuery,
    body: null,
    status: 200,
    response: 'PullRequestList',
  }),
  'pullRequests.resolveByCoordinates': r({
    operationId: 'pullRequests.resolveByCoordinates',
    method: 'GET',
    path: '/pull-requests',
    tag: 'pullRequests',
    summary: 'Pull requests of a repository by number (≤ 50) or by head branch, by number ascending',
    permission: null,
    query: s.ResolvePullRequestsQuery,
    body: null,
    status: 200,
    response: 'PullRequestList',
  }),
  'pullRequests.get': r({
    operationId: 'pullRequests.get',
    method: 'GET',
    path: '/pull-requests/:id',
    tag: 'pullRequests',
    summary: 'One pull request and its queue entry',
    permission: null,
    query: null,
    body: null,
    status: 200,
    response: 'PullRequest',
  }),
  'pullRequests.reprioritize': r({
    operationId: 'pullRequests.reprioritize',
    method: 'POST',
    path: '/pull-requests/:id/reprioritize',
    tag: 'pullRequests',
    summary: 'Change the priority of a live entry (409 PR_NOT_IN_ACTIVE_STATE)',
    permission: 'priority',
    query: null,
    body: s.ReprioritizeRequest,
    status: 200,
    response: 'PullRequest',
  }),
  'pullRequests.updateQueueEntry': r({
    operationId: 'pullRequests.updateQueueEntry',
    method: 'PATCH',
    path: '/pull-requests/:id/queue-entry',
    tag: 'pullRequests',
    summary: 'Change priority, batching or direct of a live entry (409 PR_NOT_IN_ACTIVE_STATE)',
    permission: null,
    bodyPermissions: PRIORITY_FIELDS,
    query: null,
    body: s.UpdateQueueEntryRequest,
    status: 200,
    response: 'PullRequest',
  }),
  'pullRequests.restartTests': r({
    operationId: 'pullRequests.restartTests',
    method: 'POST',
    path: '/pull-requests/:id/restart-tests',
    tag: 'pullRequests',
    summary: 'Restart the tests of a testing (or pendingFailure) entry',
    permission: 'merge',
    query: null,
    body: null,
    status: 200,
    response: 'PullRequest',
  }),
  'pullRequests.dequeue': r({
    operationId: 'pullRequests.dequeue',
    method: 'POST',
    path: '/pull-requests/:id/dequeue',
    tag: 'pullRequests',
    summary: 'Remove a live entry from its queue (409 PR_NOT_IN_ACTIVE_STATE)',
    permission: 'merge',
    query: null,
    body: null,
    status: 200,
    response: 'PullRequest',
  }),
  'pullRequests.queueEntryHistory': r({
    operationId: 'pullRequests.queueEntryHistory',
    method: 'GET',
    path: '/pull-requests/:id/queue-entry-history',
    tag: 'pullRequests',
    summary:
      "The state changes of a pull request's queue entry, oldest first (direction=newest: newest first)",
    permission: null,
    query: s.HistoryQuery,
    body: null,
    status: 200,
    response: 'QueueEntryHistoryList',
  }),
  'pullRequests.queueEntryHistoryBatch': r({
    operationId: 'pullRequests.queueEntryHistoryBatch',
    method: 'GET',
    path: '/queue-entry-history',
    tag: 'pullRequests',
    summary: 'The queue-entry histories of up to 50 pull requests (an unknown id: an empty group)',
    permission: null,
    query: s.BatchHistoryQuery,
    body: null,
    status: 200,
    response: 'BatchQueueEntryHistoryList',
  }),
  'repositories.resolveByProviderUrl': r({
    operationId: 'repositories.resolveByProviderUrl',
    method: 'GET',
    path: '/repositories',
    tag: 'repositories',
    summary:
      'The repository at a provider URL (https://github.com/owner/name), its id for the other operations',
    permission: null,
    query: s.RepositoriesQuery,
    body: null,
    status: 200,
    response: 'RepositoryList',
  }),
  'repositories.get': r({
    operationId: 'repositories.get',
    method: 'GET',
    path: '/repositories/:id',
    tag: 'repositories',
    summary: 'One repository',
    permission: null,
    query: null,
    body: null,
    status: 200,
    response: 'Repository',
  }),
} as const satisfies Record<string, V2RouteDef>;

export type V2Routes = typeof v2Routes;
export type V2OperationId = keyof V2Routes;
