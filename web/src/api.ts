// The dashboard's only way to the server: the /v1 API through the contract's route paths
// (src/contract/paths.ts: no path is typed here), with the token from sessionStorage.
import { ROUTE_PATHS } from '../../src/contract/paths.js';
import { notReadyPrs } from '../../src/watch/not-ready.js';
import type {
  ListQueuesResponse,
  OperationName,
  RequestBody,
  ResponseBody,
} from '../../src/contract/index.js';
import type { Permission } from '../../src/contract/permissions.js';

export type {
  GetQueueResponse,
  QueueListItem,
  QueueSummary,
  SubmittedPullRequest,
  TestingDetailsResponse,
  DetailedTestCase,
  GetTestFailureHistoryResponse,
  UnhealthyTestCase,
  QuarantinedTest,
  QuarantineOverrideInfo,
  WebhookDelivery,
  WebhookEndpoint,
} from '../../src/contract/index.js';

export interface Repo {
  host: string;
  owner: string;
  name: string;
}

const TOKEN_KEY = 'railyard.token';

export function getToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}
export function setToken(token: string): void {
  sessionStorage.setItem(TOKEN_KEY, token);
}
export function clearToken(): void {
  sessionStorage.removeItem(TOKEN_KEY);
}

/** A non-2xx answer: `message` is the server's one-line text. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

let onUnauthorized: (message: string) => void = () => {};
export function handleUnauthorized(fn: (message: string) => void): void {
  onUnauthorized = fn;
}

async function request(
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  token = getToken(),
): Promise<Response> {
  const headers: Record<string, string> = {};
  if (token) headers['x-api-token'] = token;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(`/v1${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
    });
  } catch (error) {
    throw new ApiError(
      0,
      `the server cannot be reached (${error instanceof Error ? error.message : String(error)})`,
    );
  }
  if (!res.ok) {
    const text = (await res.text()).trim() || `${res.status} ${res.statusText}`;
    if (res.status === 401) onUnauthorized(text);
    throw new ApiError(res.status, text);
  }
  return res;
}

type PostOperation = {
  [Op in OperationName]: (typeof ROUTE_PATHS)[Op]['method'] extends 'POST' ? Op : never;
}[OperationName];

/** Calls a POST operation of the route table with its typed body; its typed answer. */
export async function post<Op extends PostOperation, T = ResponseBody<Op>>(
  op: Op,
  body: RequestBody<Op>,
  token?: string,
): Promise<T> {
  const res = await request('POST', ROUTE_PATHS[op].path, body, token);
  return (await res.json()) as T;
}

/** The answer's text: a poller compares it with the last one and skips the parse and re-render when equal. */
export async function postText<Op extends PostOperation>(op: Op, body: RequestBody<Op>): Promise<string> {
  return (await request('POST', ROUTE_PATHS[op].path, body)).text();
}

/** What the token may change, as listQueues last said (null: not known yet, or a server that does not say). */
let granted: readonly Permission[] | null = null;

/** Notes the token's permissions from a listQueues answer. */
function noteGrants(answer: ListQueuesResponse): ListQueuesResponse {
  granted = Array.isArray(answer.permissions) ? answer.permissions : null;
  return answer;
}

/** Whether the token may make a change needing `permission`: the dashboard hides the actions it may not take. */
export function mayChange(permission: Permission): boolean {
  return granted === null || granted.includes(permission);
}

/** Checks a token before keeping it: the server's message when it is refused. */
export async function tryToken(token: string): Promise<ListQueuesResponse> {
  return noteGrants(await post('listQueues', {}, token));
}

export const api = {
  listQueues: async () => noteGrants(await post('listQueues', {})),
  getQueue: (repo: Repo, targetBranch: string) => post('getQueue', { repo, targetBranch }),
  /** Changes some of a queue's settings (only the fields given). */
  updateQueue: (repo: Repo, targetBranch: string, patch: Record<string, unknown>) =>
    post('updateQueue', { repo, targetBranch, ...patch } as RequestBody<'updateQueue'>),
  getPullRequest: (repo: Repo, targetBranch: string, number: number) =>
    post('getSubmittedPullRequest', { repo, targetBranch, pr: { number } }),
  /** The PRs waiting outside a queue (not_ready), with what holds each (src/watch/not-ready.ts). */
  notReady: (repo: Repo, targetBranch: string) =>
    notReadyPrs({
      list: () => post('listPullRequests', { repo, targetBranch, state: 'not_ready', take: 100 }),
      get: (number) => post('getSubmittedPullRequest', { repo, targetBranch, pr: { number } }),
    }),
  testingDetails: (repo: Repo, targetBranch: string, testRunId: string) =>
    post('getMergeQueueTestingDetails', { repo, targetBranch, testRunId }),
  /** A PR's state history, when the server has the extension (null when it does not). */
  async history(repo: Repo, targetBranch: string, number: number): Promise<unknown | null> {
    try {
      return await post('getPullRequestHistory', { repo, targetBranch, pr: { number } });
    } catch (error) {
      if (error instanceof ApiError && error.status === 404 && /no such endpoint/.test(error.message))
        return null;
      throw error;
    }
  },
  /**
   * A check's output (its last 1 MiB) as text, fetched with the token header (never a token in a
   * URL); `{ missing }` with the server's reason when it keeps none (sandbox) or has none yet.
   */
  async checkLog(
    repo: Repo,
    targetBranch: string,
    testRunId: string,
    check: string,
  ): Promise<{ text: string } | { missing: string }> {
    const query = new URLSearchParams({
      repoHost: repo.host,
      repo: `${repo.owner}/${repo.name}`,
      targetBranch,
      testRunId,
      check,
    });
    try {
      return {
        text: await (await request('GET', `${ROUTE_PATHS.getCheckRunLog.path}?${query.toString()}`)).text(),
      };
    } catch (error) {
      if (error instanceof ApiError && error.status === 404)
        return { missing: error.message.replace(/^check: /, '') };
      throw error;
    }
  },
  metrics: async () => (await request('GET', ROUTE_PATHS.getMergeQueueMetrics.path)).text(),
  listUnhealthy: (repo: Repo, org: string, status: 'FLAKY' | 'BROKEN', pageToken = '') =>
    post('listUnhealthyTests', {
      repo,
      org_url_slug: org,
      status,
      page_query: { page_size: 100, page_token: pageToken },
    }),
  listFailing: (repo: Repo, org: string, hours: number, pageToken = '') => {
    const end = Date.now() + 1000;
    return post('listFailingTests', {
      repo,
      org_url_slug: org,
      start_time: new Date(end - hours * 3600_000).toISOString(),
      end_time: new Date(end).toISOString(),
      page_query: { page_size: 100, page_token: pageToken },
    });
  },
  listQuarantined: (repo: Repo, org: string) =>
    post('listQuarantinedTests', {
      repo,
      org_url_slug: org,
      page_query: { page_size: 100 },
    }),
  testDetails: (repo: Repo, org: string, testId: string) =>
    post('getTestDetails', {
      repo,
      org_url_slug: org,
      test_id: testId,
    }),
  failureHistory: (repo: Repo, org: string, testId: string, days = 30) =>
    post('getTestFailureHistory', {
      repo,
      org_url_slug: org,
      test_id: testId,
      days,
    }),
  settings: (repo: Repo, org: string) =>
    post('getRepositorySettings', {
      repo,
      org_url_slug: org,
    }),
  setQuarantine: (
    repo: Repo,
    org: string,
    testId: string,
    setting: 'ALWAYS_QUARANTINE' | 'NEVER_QUARANTINE' | 'AUTO',
    about: { until?: string; reason?: string } = {},
  ) => post('setTestQuarantine', { repo, org_url_slug: org, test_id: testId, setting, ...about }),
  listWebhooks: () => post('listWebhooks', {}),
  /** An endpoint's delivery log, newest first (the server keeps each response excerpt to 1 KiB). */
  webhookDeliveries: (id: string, limit: number) => post('listWebhookDeliveries', { id, limit }),
  replayWebhookDelivery: (deliveryId: number) => post('replayWebhookDelivery', { deliveryId }),
  linkTicket: (repo: Repo, testId: string, ticket: string) =>
    post('linkTicketToTestCase', {
      repo,
      test_case_id: testId,
      external_ticket_id: ticket,
    }),
};
