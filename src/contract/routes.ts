import { z } from 'zod';
import { EmptyResponse } from './common.js';
import { ROUTE_PATHS } from './paths.js';
import * as fl from './flaky.js';
import * as mq from './mq.js';
import * as qs from './queues.js';
import * as wh from './webhooks.js';

export const StatusResponse = z.object({
  overallStatus: z.object({
    type: z.enum(['up', 'impacted']),
    color: z.enum(['green', 'yellow', 'red']),
    overallStatusDescription: z.string(),
    impactedStatuses: z
      .array(
        z.object({
          name: z.string(),
          color: z.enum(['green', 'yellow', 'red']),
          statusDescription: z.string(),
        }),
      )
      .optional(),
  }),
  statuses: z.array(
    z.object({ name: z.string(), color: z.enum(['green', 'yellow', 'red']), statusDescription: z.string() }),
  ),
});
export type StatusResponse = z.infer<typeof StatusResponse>;

/**
 * One operation of the v1 API. `request` validates the JSON body (or, for GET, the query
 * string); `response` describes the 200 body (`'text'` for Prometheus exposition).
 * `retrySafe` marks operations a client may retry blindly (reads); writes are never retried.
 */
export interface RouteDef {
  readonly operationId: string;
  readonly method: 'GET' | 'POST';
  /** Path below the `/v1` prefix, e.g. `/submitPullRequest`. */
  readonly path: string;
  readonly summary: string;
  readonly tag: 'merge-queue' | 'flaky-tests' | 'webhooks' | 'service';
  readonly auth: boolean;
  readonly retrySafe: boolean;
  readonly request: z.ZodType | null;
  readonly response: z.ZodType | 'text';
  /** Not part of Trunk's v1 contract: a Railyard extension. */
  readonly extension?: boolean;
}

function route<const R extends RouteDef>(def: R): R {
  return def;
}

/** The operation's name, method and path, from ROUTE_PATHS (./paths.ts). */
function at<const K extends keyof typeof ROUTE_PATHS>(operationId: K): { operationId: K } & (typeof ROUTE_PATHS)[K] {
  return { operationId, ...ROUTE_PATHS[operationId] };
}

/** THE route table: every operation's schemas and documentation; its name, method and path come from ROUTE_PATHS. */
export const routes = {
  submitPullRequest: route({
    ...at('submitPullRequest'),
    summary: 'Submit a pull request to a merge queue (resubmitting updates priority and noBatch)',
    tag: 'merge-queue',
    auth: true,
    retrySafe: false,
    request: mq.SubmitPullRequestRequest,
    response: EmptyResponse,
  }),
  cancelPullRequest: route({
    ...at('cancelPullRequest'),
    summary: 'Remove a pull request from a merge queue',
    tag: 'merge-queue',
    auth: true,
    retrySafe: false,
    request: mq.PullRequestActionRequest,
    response: EmptyResponse,
  }),
  restartTestsOnPullRequest: route({
    ...at('restartTestsOnPullRequest'),
    summary: 'Restart the tests of a pull request in a merge queue',
    tag: 'merge-queue',
    auth: true,
    retrySafe: false,
    request: mq.PullRequestActionRequest,
    response: EmptyResponse,
  }),
  getSubmittedPullRequest: route({
    ...at('getSubmittedPullRequest'),
    summary: 'Read a submitted pull request, its state and readiness',
    tag: 'merge-queue',
    auth: true,
    retrySafe: true,
    request: mq.GetSubmittedPullRequestRequest,
    response: mq.SubmittedPullRequest,
  }),
  listPullRequests: route({
    ...at('listPullRequests'),
    summary: 'List the pull requests of a merge queue in queue order (the line, then PRs not ready, then concluded), optionally by state or conclusion window',
    tag: 'merge-queue',
    auth: true,
    retrySafe: true,
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
    request: mq.SetImpactedTargetsRequest,
    response: EmptyResponse,
  }),
  getMergeQueueTestingDetails: route({
    ...at('getMergeQueueTestingDetails'),
    summary: 'Read a merge queue test run: branch, SHA, statuses, tested pull requests',
    tag: 'merge-queue',
    auth: true,
    retrySafe: true,
    request: mq.TestingDetailsRequest,
    response: mq.TestingDetailsResponse,
  }),
  createQueue: route({
    ...at('createQueue'),
    summary: 'Create a merge queue for a branch (409 when one exists)',
    tag: 'merge-queue',
    auth: true,
    retrySafe: false,
    request: mq.CreateQueueRequest,
    response: EmptyResponse,
  }),
  deleteQueue: route({
    ...at('deleteQueue'),
    summary: 'Delete an empty merge queue',
    tag: 'merge-queue',
    auth: true,
    retrySafe: false,
    request: mq.QueueKeyRequest,
    response: EmptyResponse,
  }),
  getQueue: route({
    ...at('getQueue'),
    summary: 'Read a merge queue: settings and enqueued pull requests',
    tag: 'merge-queue',
    auth: true,
    retrySafe: true,
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
    request: mq.UpdateQueueRequest,
    response: mq.QueueSettings,
  }),
  getMergeQueueMetrics: route({
    ...at('getMergeQueueMetrics'),
    summary: 'Prometheus metrics of the merge queues (query: repo=owner/name&repoHost=github.com)',
    tag: 'merge-queue',
    auth: true,
    retrySafe: true,
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
    request: mq.PullRequestActionRequest,
    response: mq.PullRequestHistoryResponse,
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
    request: qs.ListQueuesRequest,
    response: qs.ListQueuesResponse,
    extension: true,
  }),
  getCheckRunLog: route({
    ...at('getCheckRunLog'),
    summary: "The output of one check of a test run (its last 1 MiB), as text: a check run's url in getMergeQueueTestingDetails",
    tag: 'merge-queue',
    auth: true,
    retrySafe: true,
    request: mq.CheckRunLogQuery,
    response: 'text',
    extension: true,
  }),
  listFailingTests: route({
    ...at('listFailingTests'),
    summary: 'Distinct tests that failed in [start_time, end_time), at most 7 days',
    tag: 'flaky-tests',
    auth: true,
    retrySafe: true,
    request: fl.ListFailingTestsRequest,
    response: fl.ListFailingTestsResponse,
  }),
  listUnhealthyTests: route({
    ...at('listUnhealthyTests'),
    summary: 'Tests that are currently flaky or broken',
    tag: 'flaky-tests',
    auth: true,
    retrySafe: true,
    request: fl.ListUnhealthyTestsRequest,
    response: fl.ListUnhealthyTestsResponse,
  }),
  getTestDetails: route({
    ...at('getTestDetails'),
    summary: 'One test case with its failure statistics',
    tag: 'flaky-tests',
    auth: true,
    retrySafe: true,
    request: fl.GetTestDetailsRequest,
    response: fl.GetTestDetailsResponse,
  }),
  listQuarantinedTests: route({
    ...at('listQuarantinedTests'),
    summary: 'Tests that are currently quarantined',
    tag: 'flaky-tests',
    auth: true,
    retrySafe: true,
    request: fl.ListQuarantinedTestsRequest,
    response: fl.ListQuarantinedTestsResponse,
  }),
  linkTicketToTestCase: route({
    ...at('linkTicketToTestCase'),
    summary: 'Link an external ticket (e.g. KAN-123) to a test case',
    tag: 'flaky-tests',
    auth: true,
    retrySafe: true,
    request: fl.LinkTicketRequest,
    response: EmptyResponse,
  }),
  uploadTestResults: route({
    ...at('uploadTestResults'),
    summary:
      'Upload JUnit XML reports of one CI job; parsed and stored in one transaction, answered with counts',
    tag: 'flaky-tests',
    auth: true,
    retrySafe: false,
    request: fl.UploadTestResultsRequest,
    response: fl.UploadTestResultsResponse,
    extension: true,
  }),
  getRepositorySettings: route({
    ...at('getRepositorySettings'),
    summary: 'Detection and quarantine settings of a repository (defaults until changed)',
    tag: 'flaky-tests',
    auth: true,
    retrySafe: true,
    request: fl.GetRepositorySettingsRequest,
    response: fl.RepositorySettings,
    extension: true,
  }),
  updateRepositorySettings: route({
    ...at('updateRepositorySettings'),
    summary: 'Change detection and quarantine settings of a repository (absent fields are unchanged)',
    tag: 'flaky-tests',
    auth: true,
    retrySafe: true,
    request: fl.UpdateRepositorySettingsRequest,
    response: fl.RepositorySettings,
    extension: true,
  }),
  setTestQuarantine: route({
    ...at('setTestQuarantine'),
    summary: 'Override quarantine for one test: ALWAYS_QUARANTINE, NEVER_QUARANTINE or AUTO (no override)',
    tag: 'flaky-tests',
    auth: true,
    retrySafe: true,
    request: fl.SetTestQuarantineRequest,
    response: EmptyResponse,
    extension: true,
  }),
  checkQuarantine: route({
    ...at('checkQuarantine'),
    summary: 'Which of the given test ids are quarantined now (used by `railyard flaky run`)',
    tag: 'flaky-tests',
    auth: true,
    retrySafe: true,
    request: fl.CheckQuarantineRequest,
    response: fl.CheckQuarantineResponse,
    extension: true,
  }),
  // Railyard extension: a test's failure rate day by day, for the dashboard's test page.
  getTestFailureHistory: route({
    ...at('getTestFailureHistory'),
    summary: "One test case's runs, failures and failure rate per UTC day over the last `days` days (default 30, at most 90), oldest first",
    tag: 'flaky-tests',
    auth: true,
    retrySafe: true,
    request: fl.GetTestFailureHistoryRequest,
    response: fl.GetTestFailureHistoryResponse,
    extension: true,
  }),
  // Railyard extensions: outgoing webhooks (README "Outgoing webhooks").
  createWebhook: route({
    ...at('createWebhook'),
    summary:
      "Create an outgoing webhook endpoint of the token's organisation; the answer holds its signing secret, shown only there",
    tag: 'webhooks',
    auth: true,
    retrySafe: false,
    request: wh.CreateWebhookRequest,
    response: wh.CreateWebhookResponse,
    extension: true,
  }),
  listWebhooks: route({
    ...at('listWebhooks'),
    summary:
      "The outgoing webhook endpoints of the token's organisation (never their secrets) and the event types there are",
    tag: 'webhooks',
    auth: true,
    retrySafe: true,
    request: wh.ListWebhooksRequest,
    response: wh.ListWebhooksResponse,
    extension: true,
  }),
  testWebhook: route({
    ...at('testWebhook'),
    summary: 'Send a test event (webhook.test) to one endpoint',
    tag: 'webhooks',
    auth: true,
    retrySafe: false,
    request: wh.WebhookIdRequest,
    response: wh.TestWebhookResponse,
    extension: true,
  }),
  disableWebhook: route({
    ...at('disableWebhook'),
    summary: 'Stop delivering to an endpoint (events wait until it is enabled again)',
    tag: 'webhooks',
    auth: true,
    retrySafe: false,
    request: wh.WebhookIdRequest,
    response: wh.WebhookEndpointResponse,
    extension: true,
  }),
  enableWebhook: route({
    ...at('enableWebhook'),
    summary: 'Deliver to an endpoint again (also one the server disabled after it failed for days)',
    tag: 'webhooks',
    auth: true,
    retrySafe: false,
    request: wh.WebhookIdRequest,
    response: wh.WebhookEndpointResponse,
    extension: true,
  }),
  deleteWebhook: route({
    ...at('deleteWebhook'),
    summary: 'Delete an endpoint and its delivery log',
    tag: 'webhooks',
    auth: true,
    retrySafe: false,
    request: wh.WebhookIdRequest,
    response: EmptyResponse,
    extension: true,
  }),
  rotateWebhookSecret: route({
    ...at('rotateWebhookSecret'),
    summary: 'A new signing secret; the old one signs too (a second signature) for overlapHours',
    tag: 'webhooks',
    auth: true,
    retrySafe: false,
    request: wh.RotateWebhookSecretRequest,
    response: wh.RotateWebhookSecretResponse,
    extension: true,
  }),
  listWebhookDeliveries: route({
    ...at('listWebhookDeliveries'),
    summary: 'The delivery log of an endpoint, newest first: each event with its attempts (status, latency, the start of the answer)',
    tag: 'webhooks',
    auth: true,
    retrySafe: true,
    request: wh.ListWebhookDeliveriesRequest,
    response: wh.ListWebhookDeliveriesResponse,
    extension: true,
  }),
  replayWebhookDelivery: route({
    ...at('replayWebhookDelivery'),
    summary: 'Send a delivered or failed event again (same webhook-id)',
    tag: 'webhooks',
    auth: true,
    retrySafe: false,
    request: wh.ReplayWebhookDeliveryRequest,
    response: wh.ReplayWebhookDeliveryResponse,
    extension: true,
  }),
  status: route({
    ...at('status'),
    summary: 'Service status (no token needed)',
    tag: 'service',
    auth: false,
    retrySafe: true,
    request: null,
    response: StatusResponse,
  }),
} as const;

export type Routes = typeof routes;
export type OperationName = keyof Routes;

type RequestOf<R> = R extends { request: infer Q } ? (Q extends z.ZodType ? z.input<Q> : undefined) : never;
type ResponseOf<R> = R extends { response: infer S } ? (S extends z.ZodType ? z.output<S> : string) : never;

/** What a caller sends for an operation (before server-side coercion). */
export type RequestBody<Op extends OperationName> = RequestOf<Routes[Op]>;
/** What the server answers with for an operation. */
export type ResponseBody<Op extends OperationName> = ResponseOf<Routes[Op]>;

export const API_PREFIX = '/v1';
