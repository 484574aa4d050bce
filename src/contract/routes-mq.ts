/** The merge-queue operations of the route table (routes.ts): schemas and documentation. */
import { EmptyResponse } from './common.js';
import * as ext from './mq-extensions.js';
import * as mq from './mq.js';
import * as qs from './queues.js';
import * as reads from './mq-reads.js';
import { DoctorResponse } from './doctor.js';
import { at, route } from './route-def.js';

export const mqRoutes = {
  submitPullRequest: route({
    ...at('submitPullRequest'),
    summary: 'Submit a pull request to a merge queue (resubmitting updates priority and noBatch)',
    tag: 'merge-queue',
    auth: true,
    retrySafe: false,
    permission: 'merge',
    request: mq.SubmitPullRequestRequest,
    response: EmptyResponse,
  }),
  cancelPullRequest: route({
    ...at('cancelPullRequest'),
    summary: 'Remove a pull request from a merge queue',
    tag: 'merge-queue',
    auth: true,
    retrySafe: false,
    permission: 'merge',
    request: mq.PullRequestActionRequest,
    response: EmptyResponse,
  }),
  restartTestsOnPullRequest: route({
    ...at('restartTestsOnPullRequest'),
    summary: 'Restart the tests of a pull request in a merge queue',
    tag: 'merge-queue',
    auth: true,
    retrySafe: false,
    permission: 'merge',
    request: mq.PullRequestActionRequest,
    response: EmptyResponse,
  }),
  getSubmittedPullRequest: route({
    ...at('getSubmittedPullRequest'),
    summary:
      'Read a submitted pull request, its state and readiness (with includeTimeline: its state changes, newest first)',
    tag: 'merge-queue',
    auth: true,
    retrySafe: true,
    permission: null,
    request: mq.GetSubmittedPullRequestRequest,
    response: mq.SubmittedPullRequest,
  }),
  getSubmittedPullRequests: route({
    ...at('getSubmittedPullRequests'),
    summary:
      'Read several submitted pull requests of a merge queue in one call (at most 50); those never submitted are listed in notFound',
    tag: 'merge-queue',
    auth: true,
    retrySafe: true,
    permission: null,
    request: reads.GetSubmittedPullRequestsRequest,
    response: reads.GetSubmittedPullRequestsResponse,
  }),
  listPullRequests: route({
    ...at('listPullRequests'),
    summary:
      'List the pull requests of a merge queue in queue order (the line, then PRs not ready, then concluded), optionally by state or conclusion window',
    tag: 'merge-queue',
    auth: true,
    retrySafe: true,
    permission: null,
    request: mq.ListPullRequestsRequest,
    response: mq.ListPullRequestsResponse,
  }),
  setImpactedTargets: route({
    ...at('setImpactedTargets'),
    summary: 'Set the impacted targets of a pull request head SHA (a list, [] or "ALL")',
    tag: 'merge-queue',
    auth: true,
    // Replaces the list for the SHA: repeating it has the same effect.
    retrySafe: true,
    permission: 'merge',
    request: mq.SetImpactedTargetsRequest,
    response: EmptyResponse,
  }),
  getMergeQueueTestingDetails: route({
    ...at('getMergeQueueTestingDetails'),
    summary: 'Read a merge queue test run: branch, SHA, statuses, tested pull requests',
    tag: 'merge-queue',
    auth: true,
    retrySafe: true,
    permission: null,
    request: mq.TestingDetailsRequest,
    response: mq.TestingDetailsResponse,
  }),
  listMergeQueueTestingResults: route({
    ...at('listMergeQueueTestingResults'),
    summary:
      'The completed testing of a merge queue in a time range (at most 45 days): one result per pull request per test run, newest first',
    tag: 'merge-queue',
    auth: true,
    retrySafe: true,
    permission: null,
    request: reads.ListTestingResultsRequest,
    response: reads.ListTestingResultsResponse,
  }),
  createQueue: route({
    ...at('createQueue'),
    summary: 'Create a merge queue for a branch (409 when one exists)',
    tag: 'merge-queue',
    auth: true,
    retrySafe: false,
    permission: 'settings',
    request: mq.CreateQueueRequest,
    response: EmptyResponse,
  }),
  deleteQueue: route({
    ...at('deleteQueue'),
    summary: 'Delete an empty merge queue',
    tag: 'merge-queue',
    auth: true,
    retrySafe: false,
    permission: 'settings',
    request: mq.QueueKeyRequest,
    response: EmptyResponse,
  }),
  getQueue: route({
    ...at('getQueue'),
    summary: 'Read a merge queue: settings and enqueued pull requests',
    tag: 'merge-queue',
    auth: true,
    retrySafe: true,
    permission: null,
    request: mq.QueueKeyRequest,
    response: mq.GetQueueResponse,
  }),
  updateQueue: route({
    ...at('updateQueue'),
    summary: 'Change merge queue settings (absent fields are unchanged)',
    tag: 'merge-queue',
    auth: true,
    // Partial update to absolute values: repeating it has the same effect.
    retrySafe: true,
    permission: 'settings',
    request: mq.UpdateQueueRequest,
    response: mq.QueueSettings,
  }),
  getMergeQueueMetrics: route({
    ...at('getMergeQueueMetrics'),
    summary: 'Prometheus metrics of the merge queues (query: repo=owner/name&repoHost=github.com)',
    tag: 'merge-queue',
    auth: true,
    retrySafe: true,
    permission: null,
    request: mq.MetricsQuery,
    response: 'text',
  }),
  getPullRequestHistory: route({
    ...at('getPullRequestHistory'),
    summary:
      'Every state change of a pull request in a merge queue (all its submissions): state, reason, time, test run',
    tag: 'merge-queue',
    auth: true,
    retrySafe: true,
    permission: null,
    request: mq.PullRequestActionRequest,
    response: ext.PullRequestHistoryResponse,
    extension: true,
  }),
  // Railyard extension: every queue of the organisation, for the dashboard's overview, `mq queue list` and `mq watch`'s ETA.
  listQueues: route({
    ...at('listQueues'),
    summary:
      "Every merge queue of the token's organisation: state, depth, testing, merged and failed in the last hour/day, median time in queue, recent test durations",
    tag: 'merge-queue',
    auth: true,
    retrySafe: true,
    permission: null,
    request: qs.ListQueuesRequest,
    response: qs.ListQueuesResponse,
    extension: true,
  }),
  getCheckRunLog: route({
    ...at('getCheckRunLog'),
    summary:
      "The output of one check of a test run (its last 1 MiB), as text: a check run's url in getMergeQueueTestingDetails",
    tag: 'merge-queue',
    auth: true,
    retrySafe: true,
    permission: null,
    request: ext.CheckRunLogQuery,
    response: 'text',
    extension: true,
  }),
  // Railyard extension: what keeps the queue from working that a person has to fix (`mq doctor`, the dashboard).
  getMergeQueueDoctor: route({
    ...at('getMergeQueueDoctor'),
    summary:
      'What keeps a merge queue from working, one sentence each: required checks that never report on test commits, a queue paused for long, PRs not ready for long, forge permissions missing',
    tag: 'merge-queue',
    auth: true,
    retrySafe: true,
    permission: null,
    request: mq.QueueKeyRequest,
    response: DoctorResponse,
    extension: true,
  }),
} as const;
