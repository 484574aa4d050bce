/**
 * Where each operation of the v1 API lives: its method and its path below `/v1`. The only place a
 * path is written; the route table (routes.ts) adds the schemas, and the dashboard (web/), which
 * must not bundle zod, calls the API through this table alone.
 */
export const ROUTE_PATHS = {
  submitPullRequest: { method: 'POST', path: '/submitPullRequest' },
  cancelPullRequest: { method: 'POST', path: '/cancelPullRequest' },
  restartTestsOnPullRequest: { method: 'POST', path: '/restartTestsOnPullRequest' },
  getSubmittedPullRequest: { method: 'POST', path: '/getSubmittedPullRequest' },
  getSubmittedPullRequests: { method: 'POST', path: '/getSubmittedPullRequests' },
  listPullRequests: { method: 'POST', path: '/listPullRequests' },
  setImpactedTargets: { method: 'POST', path: '/setImpactedTargets' },
  getMergeQueueTestingDetails: { method: 'POST', path: '/getMergeQueueTestingDetails' },
  listMergeQueueTestingResults: { method: 'POST', path: '/listMergeQueueTestingResults' },
  createQueue: { method: 'POST', path: '/createQueue' },
  deleteQueue: { method: 'POST', path: '/deleteQueue' },
  getQueue: { method: 'POST', path: '/getQueue' },
  updateQueue: { method: 'POST', path: '/updateQueue' },
  getMergeQueueMetrics: { method: 'GET', path: '/getMergeQueueMetrics' },
  getPullRequestHistory: { method: 'POST', path: '/getPullRequestHistory' },
  listQueues: { method: 'POST', path: '/listQueues' },
  getCheckRunLog: { method: 'GET', path: '/getCheckRunLog' },
  getMergeQueueDoctor: { method: 'POST', path: '/getMergeQueueDoctor' },
  listFailingTests: { method: 'POST', path: '/flaky-tests/list-failing-tests' },
  listUnhealthyTests: { method: 'POST', path: '/flaky-tests/list-unhealthy-tests' },
  getTestDetails: { method: 'POST', path: '/flaky-tests/get-test-details' },
  listQuarantinedTests: { method: 'POST', path: '/flaky-tests/list-quarantined-tests' },
  linkTicketToTestCase: { method: 'POST', path: '/flaky-tests/link-ticket-to-test-case' },
  uploadTestResults: { method: 'POST', path: '/flaky-tests/upload-test-results' },
  getRepositorySettings: { method: 'POST', path: '/flaky-tests/get-repository-settings' },
  updateRepositorySettings: { method: 'POST', path: '/flaky-tests/update-repository-settings' },
  setTestQuarantine: { method: 'POST', path: '/flaky-tests/set-test-quarantine' },
  checkQuarantine: { method: 'POST', path: '/flaky-tests/check-quarantine' },
  getTestFailureHistory: { method: 'POST', path: '/flaky-tests/get-test-failure-history' },
  createWebhook: { method: 'POST', path: '/createWebhook' },
  listWebhooks: { method: 'POST', path: '/listWebhooks' },
  testWebhook: { method: 'POST', path: '/testWebhook' },
  disableWebhook: { method: 'POST', path: '/disableWebhook' },
  enableWebhook: { method: 'POST', path: '/enableWebhook' },
  deleteWebhook: { method: 'POST', path: '/deleteWebhook' },
  rotateWebhookSecret: { method: 'POST', path: '/rotateWebhookSecret' },
  listWebhookDeliveries: { method: 'POST', path: '/listWebhookDeliveries' },
  replayWebhookDelivery: { method: 'POST', path: '/replayWebhookDelivery' },
  status: { method: 'GET', path: '/status' },
} as const;

export type RoutedOperation = keyof typeof ROUTE_PATHS;
