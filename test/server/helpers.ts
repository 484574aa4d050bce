import type { z } from 'zod';
import { API_PREFIX, routes, type OperationName } from '../../src/contract/index.js';
import { sandboxHeadSha } from '../../src/forge/sandbox/index.js';
import type { TestServer } from '../support/server.js';

export const REPO = { host: 'github.com', owner: 'acme', name: 'web' };
export const ORG = 'local';
/** The queue acme/web:main. */
export const Q = { repo: REPO, targetBranch: 'main' };
export const SHA1 = sandboxHeadSha(REPO, 1);
export const TEST_ID = '6f1b9e9e-8a43-5d2c-9b1a-0c9e3b1d2f11';
const now = Date.now();

/**
 * A valid request of every operation, against a queue acme/web:main holding PRs #1 and #2 and a
 * queue acme/web:scratch (see seedValidRequests); the contract and fuzz tests start from it.
 */
export const validRequests: Record<OperationName, Record<string, unknown>> = {
  submitPullRequest: { ...Q, pr: { number: 1 }, priority: 'high', noBatch: true },
  cancelPullRequest: { ...Q, pr: { number: 2 } },
  restartTestsOnPullRequest: { ...Q, pr: { number: 1 } },
  getSubmittedPullRequest: { ...Q, pr: { number: 1 } },
  getSubmittedPullRequests: {
    ...Q,
    prs: [{ number: 1 }, { number: 2 }, { number: 99 }],
    includeTimeline: true,
  },
  listPullRequests: { ...Q, take: 10 },
  setImpactedTargets: { ...Q, pr: { number: 1, sha: SHA1 }, impactedTargets: ['//app:web'] },
  getMergeQueueTestingDetails: { ...Q, testRunId: 'no-such-run' },
  listMergeQueueTestingResults: { ...Q, since: new Date(now - 86_400_000).toISOString(), take: 10 },
  createQueue: { repo: REPO, targetBranch: 'release', mode: 'single', concurrency: 2 },
  deleteQueue: { repo: REPO, targetBranch: 'scratch' },
  getQueue: Q,
  updateQueue: { ...Q, concurrency: 3 },
  getMergeQueueMetrics: { repo: 'acme/web', repoHost: 'github.com' },
  getPullRequestHistory: { ...Q, pr: { number: 1 } },
  listQueues: { repo: REPO },
  getCheckRunLog: {
    repoHost: 'github.com',
    repo: 'acme/web',
    targetBranch: 'main',
    testRunId: 'no-such-run',
    check: 'test',
  },
  getMergeQueueDoctor: Q,
  listFailingTests: {
    repo: REPO,
    org_url_slug: ORG,
    start_time: new Date(now - 86_400_000).toISOString(),
    end_time: new Date(now).toISOString(),
    page_query: { page_size: 10, page_token: '' },
  },
  listUnhealthyTests: { repo: REPO, org_url_slug: ORG, page_query: { page_size: 10 }, status: 'FLAKY' },
  getTestDetails: { repo: REPO, org_url_slug: ORG, test_id: TEST_ID },
  listQuarantinedTests: { repo: REPO, org_url_slug: ORG, page_query: { page_size: 10 } },
  linkTicketToTestCase: { test_case_id: TEST_ID, external_ticket_id: 'KAN-123', repo: REPO },
  uploadTestResults: {
    repo: REPO,
    org_url_slug: ORG,
    branch: 'main',
    sha: SHA1,
    reports: [
      { name: 'junit.xml', content: '<testsuite name="s"><testcase classname="c" name="t"/></testsuite>' },
    ],
  },
  getRepositorySettings: { repo: REPO, org_url_slug: ORG },
  updateRepositorySettings: { repo: REPO, org_url_slug: ORG, settings: { quarantining_enabled: true } },
  setTestQuarantine: { repo: REPO, org_url_slug: ORG, test_id: TEST_ID, setting: 'ALWAYS_QUARANTINE' },
  checkQuarantine: { repo: REPO, org_url_slug: ORG, test_ids: [TEST_ID] },
  getTestFailureHistory: { repo: REPO, org_url_slug: ORG, test_id: TEST_ID, days: 7 },
  // Outgoing webhooks: the server of these tests allows no private address, and a .invalid name is never looked up.
  createWebhook: { url: 'https://hooks.railyard.invalid/in', events: ['webhook.test'] },
  listWebhooks: {},
  testWebhook: { id: 'ep_missing' },
  disableWebhook: { id: 'ep_missing' },
  enableWebhook: { id: 'ep_missing' },
  deleteWebhook: { id: 'ep_missing' },
  rotateWebhookSecret: { id: 'ep_missing', overlapHours: 1 },
  listWebhookDeliveries: { id: 'ep_missing', limit: 5 },
  replayWebhookDelivery: { deliveryId: 1 },
  status: {},
};

/** The data validRequests expects: queues acme/web:main (PRs #1 and #2 submitted) and acme/web:scratch. */
export async function seedValidRequests(server: TestServer): Promise<void> {
  await ok(server, 'createQueue', Q);
  await ok(server, 'createQueue', { repo: REPO, targetBranch: 'scratch' });
  await ok(server, 'submitPullRequest', { ...Q, pr: { number: 1 } });
  await ok(server, 'submitPullRequest', { ...Q, pr: { number: 2 } });
}

export interface Answer {
  status: number;
  text: string;
  headers: Headers;
  /** Parsed JSON body (undefined when not JSON). */
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

async function answer(res: Response): Promise<Answer> {
  const text = await res.text();
  let json: unknown;
  if ((res.headers.get('content-type') ?? '').startsWith('application/json')) json = JSON.parse(text);
  return { status: res.status, text, headers: res.headers, json };
}

/** Calls an operation of the route table over real HTTP. */
export async function call(
  server: TestServer,
  op: OperationName,
  body?: unknown,
  options: { token?: string | null; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const def = routes[op];
  const headers: Record<string, string> = { ...options.headers };
  const token = options.token === undefined ? server.token : options.token;
  if (token !== null) headers['x-api-token'] = token;
  const base = server.url.slice(0, -API_PREFIX.length) + API_PREFIX + def.path;
  if (def.method === 'GET') {
    const query = new URLSearchParams((body as Record<string, string> | undefined) ?? {}).toString();
    return answer(await fetch(query ? `${base}?${query}` : base, { headers }));
  }
  headers['content-type'] ??= 'application/json';
  return answer(
    await fetch(base, {
      method: 'POST',
      headers,
      body: typeof body === 'string' ? body : JSON.stringify(body ?? {}),
    }),
  );
}

/** Like call() but fails the test unless the answer is 200; returns the JSON body. */
export async function ok(server: TestServer, op: OperationName, body?: unknown, token?: string) {
  const a = await call(server, op, body, token === undefined ? {} : { token });
  if (a.status !== 200) throw new Error(`${op} answered ${a.status}: ${a.text}`);
  return a.json;
}

type Def = { type: string; [key: string]: unknown };
const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

/**
 * Compares a value with a zod schema key by key, recursively: every required key present,
 * no key the schema does not declare, leaves of the right type. Returns the mismatches.
 */
export function shapeMismatches(schema: z.ZodType, value: unknown, path = '$'): string[] {
  const def = defOf(schema);
  switch (def.type) {
    case 'optional':
      return value === undefined ? [] : shapeMismatches(def.innerType as z.ZodType, value, path);
    case 'nullable':
      return value === null ? [] : shapeMismatches(def.innerType as z.ZodType, value, path);
    case 'object': {
      if (typeof value !== 'object' || value === null || Array.isArray(value))
        return [`${path}: expected an object`];
      const shape = def.shape as Record<string, z.ZodType>;
      const out: string[] = [];
      for (const [key, field] of Object.entries(shape)) {
        const v = (value as Record<string, unknown>)[key];
        if (v === undefined && !field.safeParse(undefined).success) out.push(`${path}.${key}: missing`);
        else out.push(...shapeMismatches(field, v, `${path}.${key}`));
      }
      for (const key of Object.keys(value))
        if (!(key in shape)) out.push(`${path}.${key}: not in the contract`);
      return out;
    }
    case 'array':
      if (!Array.isArray(value)) return [`${path}: expected an array`];
      return value.flatMap((v, i) => shapeMismatches(def.element as z.ZodType, v, `${path}[${i}]`));
    case 'union': {
      const results = (def.options as z.ZodType[]).map((o) => shapeMismatches(o, value, path));
      return results.some((r) => r.length === 0) ? [] : (results[0] ?? [`${path}: no union option`]);
    }
    default:
      return schema.safeParse(value).success ? [] : [`${path}: ${JSON.stringify(value)} does not match`];
  }
}

/** Paths of the required fields of a request schema (objects walked recursively), e.g. `repo.host`. */
export function requiredPaths(schema: z.ZodType, prefix = ''): string[] {
  let def = defOf(schema);
  while (def.type === 'pipe') def = defOf(def.in as z.ZodType);
  if (def.type !== 'object') return [];
  const out: string[] = [];
  for (const [key, field] of Object.entries(def.shape as Record<string, z.ZodType>)) {
    if (field.safeParse(undefined).success) continue;
    const path = prefix ? `${prefix}.${key}` : key;
    out.push(path, ...requiredPaths(field, path));
  }
  return out;
}

/** A deep copy of `body` without the field at `path`. */
export function without(body: unknown, path: string): unknown {
  const copy = structuredClone(body) as Record<string, unknown>;
  const keys = path.split('.');
  let node = copy;
  for (const k of keys.slice(0, -1)) node = node[k] as Record<string, unknown>;
  delete node[keys[keys.length - 1]];
  return copy;
}

export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
