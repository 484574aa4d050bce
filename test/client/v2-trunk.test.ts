// The v2 client against an API that answers as Trunk's own does (a scripted HTTP server, not our
// server: only Trunk's fields, no x-railyard-* keys; every body checked against Trunk's schemas
// before it is served). The v1 answers it makes must be what a command expects.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiError, createClient, UnsupportedOperationError } from '../../src/client/index.js';
import { trunkSchemas } from '../support/v2.js';

const schemas = trunkSchemas();
const REPO_ID = '7c9e6679-7425-40de-944b-e07fc1f90ae7';
const PR_ID = '0f8fad5b-d9cb-469f-a165-70867728950e';
const T = '2026-12-01T10:00:00.000Z';

const queue = {
  id: 'xK9mP2nQ',
  repositoryId: REPO_ID,
  targetBranch: 'main',
  state: 'paused',
  mode: 'graph',
  managedState: 'manual',
  createdAt: T,
  updatedAt: T,
  repositoryUrl: 'https://github.com/acme/web',
  pullRequestsUrl: '/v2/merge-queues/xK9mP2nQ/pull-requests',
  config: {
    concurrency: 3,
    bisectionConcurrency: 0,
    pendingFailureDepth: 2,
    canOptimisticallyMerge: true,
    allowBatching: true,
    batchingMaxWaitTimeMinutes: 5,
    batchingMinSize: 2,
    testingTimeoutMinutes: 60,
    notReadyTimeoutMinutes: 120,
    createsPrsForTestingBranches: false,
    areCommentsEnabled: true,
    areCommandsEnabled: true,
    isStatusCheckEnabled: true,
    isExtensionEnabled: false,
    areLabelCommandsEnabled: false,
    areStateLabelsEnabled: false,
    requiredStatuses: ['build'],
    allowedBotSubmitters: [],
    batchingRules: [],
    directMergeMode: 'off',
    optimizationMode: 'bisectionSkipRedundantTests',
    mergeMethod: 'mergeCommit',
    testBranchConstructionMode: 'renameTempBranch',
    enqueueingLabel: 'merge',
  },
};

const pr = (number: number, state: string, extra: Record<string, unknown> = {}) => ({
  id: number === 42 ? PR_ID : `0f8fad5b-d9cb-469f-a165-7086772895${String(number).padStart(2, '0')}`,
  repositoryId: REPO_ID,
  number,
  title: `PR ${number}`,
  branch: `feature-${number}`,
  sha: 'a'.repeat(40),
  baseBranch: 'main',
  author: 'octocat',
  url: `https://github.com/acme/web/pull/${number}`,
  state: 'open',
  isCurrentlySubmittedToQueue: true,
  createdAt: T,
  queueEntry: {
    id: `entry-${number}`,
    mergeQueueId: 'xK9mP2nQ',
    state,
    stateChangedAt: T,
    priorityValue: 10,
    priorityName: 'high',
    skipsTheLine: false,
    allowBatching: false,
    direct: false,
    readiness: { requiresImpactedTargets: true, doesBaseBranchMatch: true, mergeability: 'notMergeable' },
    createdAt: T,
    updatedAt: T,
    ...extra,
  },
});

interface Seen {
  method: string;
  path: string;
  authorization: string | undefined;
  body: string;
}

/** A scripted Trunk: `route` answers [status, schema name or null, body] for a method and path. */
async function trunk(route: (method: string, url: URL, body: string) => [number, string | null, unknown]) {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      seen.push({
        method: req.method ?? '',
        path: `${url.pathname}${url.search}`,
        authorization: req.headers.authorization,
        body,
      });
      const [status, schema, answer] = route(req.method ?? '', url, body);
      // The script answers only what Trunk's schemas allow.
      if (schema) expect(schemas.validate(schema, answer), `${schema} of ${url.pathname}`).toEqual([]);
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(answer === undefined ? '' : JSON.stringify(answer));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  closers.push(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${port}/v1`, seen };
}

const list = (data: unknown[], nextCursor: string | null = null) => ({
  data,
  nextCursor,
  hasMore: nextCursor !== null,
});
const repository = {
  id: REPO_ID,
  provider: 'github',
  path: 'acme/web',
  host: null,
  url: 'https://github.com/acme/web',
  defaultBranch: 'main',
  isPrivate: true,
  createdAt: T,
  updatedAt: T,
};

/** Trunk's answers to the reads every operation starts with. */
function common(method: string, url: URL): [number, string | null, unknown] | null {
  if (method === 'GET' && url.pathname === '/v2/repositories')
    return [200, 'RepositoryList', list([repository])];
  if (method === 'GET' && url.pathname === '/v2/merge-queues') return [200, 'MergeQueueList', list([queue])];
  if (method === 'GET' && url.pathname === '/v2/merge-queues/xK9mP2nQ') return [200, 'MergeQueue', queue];
  return null;
}

let closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.map((c) => c()));
  closers = [];
});

const key = { repo: { host: 'github.com', owner: 'acme', name: 'web' }, targetBranch: 'main' };

describe("the v2 client against Trunk's own answers", () => {
  it('reads a PR and a queue in v1 shapes, the token as a Bearer key at …/v2', async () => {
    const api = await trunk((method, url) => {
      const known = common(method, url);
      if (known) return known;
      if (url.pathname === '/v2/pull-requests') return [200, 'PullRequestList', list([pr(42, 'notReady')])];
      if (url.pathname === `/v2/pull-requests/${PR_ID}`) return [200, 'PullRequest', pr(42, 'notReady')];
      if (url.pathname === '/v2/merge-queues/xK9mP2nQ/order')
        return [200, null, { batches: [], pending: [], awaitingAdmission: [], awaitingAdmissionTotal: 0 }];
      return [200, 'PullRequestList', list([pr(7, 'pendingFailure')])];
    });
    const client = createClient({
      baseUrl: api.url.replace(/\/v1$/, '/v2'),
      token: 'trunk-key',
      apiVersion: 'v2',
    });
    const got = await client.call('getSubmittedPullRequest', { ...key, pr: { number: 42 } });
    expect(got).toEqual({
      id: 'entry-42',
      state: 'not_ready',
      stateChangedAt: T,
      priorityValue: 10,
      priorityName: 'high',
      skipTheLine: false,
      prNumber: 42,
      prTitle: 'PR 42',
      prSha: 'a'.repeat(40),
      prBaseBranch: 'main',
      prAuthor: 'octocat',
      readiness: {
        requiresImpactedTargets: true,
        doesBaseBranchMatch: true,
        gitHubMergeability: 'not_mergeable',
      },
      forceEnqueued: false,
      isCurrentlySubmittedToQueue: true,
    });
    expect(api.seen.every((s) => s.authorization === 'Bearer trunk-key')).toBe(true);
    expect(api.seen.map((s) => `${s.method} ${s.path}`)).toEqual([
      `GET /v2/repositories?providerUrl=${encodeURIComponent('https://github.com/acme/web')}`,
      `GET /v2/merge-queues?repositoryId=${REPO_ID}&targetBranch=main`,
      `GET /v2/pull-requests?repositoryId=${REPO_ID}&number=42&limit=100`,
      `GET /v2/pull-requests/${PR_ID}`,
    ]);

    const settings = await client.call('getQueue', key);
    expect(settings).toMatchObject({
      state: 'paused',
      mode: 'parallel',
      branch: 'main',
      batch: true,
      mergeMethod: 'merge_commit',
      optimizationMode: 'bisection_skip_redundant_tests',
      requiredStatuses: ['build'],
      enqueueingLabel: 'merge',
      flakyPolicy: 'off',
      enqueuedPullRequests: [{ prNumber: 7, state: 'pending_failure', noBatch: true, priorityName: 'high' }],
    });
  });

  it('follows cursors to the end of a list; a resubmission with a priority patches the entry (409 PR_ALREADY_ENQUEUED)', async () => {
    const api = await trunk((method, url) => {
      const known = common(method, url);
      if (known) return known;
      if (url.pathname === '/v2/merge-queues/xK9mP2nQ/order')
        return [200, null, { batches: [], pending: [], awaitingAdmission: [], awaitingAdmissionTotal: 0 }];
      if (method === 'GET' && url.pathname === '/v2/merge-queues/xK9mP2nQ/pull-requests')
        return url.searchParams.get('cursor') === 'page2'
          ? [200, 'PullRequestList', list([pr(2, 'pending')])]
          : [200, 'PullRequestList', list([pr(1, 'pending')], 'page2')];
      if (method === 'POST' && url.pathname === '/v2/merge-queues/xK9mP2nQ/pull-requests')
        return [
          409,
          'ErrorResponse',
          { error: { code: 'PR_ALREADY_ENQUEUED', message: 'pull request #42 is already enqueued' } },
        ];
      if (method === 'GET' && url.pathname === '/v2/pull-requests')
        return [200, 'PullRequestList', list([pr(42, 'pending')])];
      if (method === 'PATCH')
        return [
          200,
          'PullRequest',
          pr(42, 'pending', { priorityValue: 0, priorityName: 'urgent', skipsTheLine: true }),
        ];
      return [404, 'ErrorResponse', { error: { code: 'NOT_FOUND', message: 'no such thing' } }];
    });
    const client = createClient({ baseUrl: api.url.replace(/\/v1$/, '/v2'), token: 'k', apiVersion: 'v2' });
    const listed = await client.call('listPullRequests', { ...key, take: 100 });
    expect(listed.pullRequests.map((p) => p.prNumber)).toEqual([1, 2]);

    await client.call('submitPullRequest', { ...key, pr: { number: 42 }, priority: 'urgent' });
    const writes = api.seen.filter((s) => s.method !== 'GET');
    expect(writes.map((s) => [s.method, s.path, JSON.parse(s.body)])).toEqual([
      ['POST', '/v2/merge-queues/xK9mP2nQ/pull-requests', { number: 42, priorityName: 'urgent' }],
      ['PATCH', `/v2/pull-requests/${PR_ID}/queue-entry`, { priorityName: 'urgent' }],
    ]);

    // Trunk's error envelope reads as its message; an operation v2 lacks fails before sending.
    const error = await client
      .call('getMergeQueueTestingDetails', { ...key, testRunId: 'r1' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect([(error as ApiError).status, (error as ApiError).code, (error as ApiError).serverMessage]).toEqual(
      [404, 'NOT_FOUND', 'no such thing'],
    );
    const before = api.seen.length;
    const unsupported = await client
      .call('listFailingTests', { repo: key.repo, org_url_slug: 'acme' } as never)
      .catch((e: unknown) => e);
    expect(unsupported).toBeInstanceOf(UnsupportedOperationError);
    expect((unsupported as Error).message).toBe(
      "listFailingTests: not an operation of the v2 API; use API version v1 for it (--api-version v1, RAILYARD_API_VERSION=v1 or the Action's api-version: v1)",
    );
    expect(api.seen.length).toBe(before);
  });
});
