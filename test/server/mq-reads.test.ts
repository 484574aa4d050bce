// Trunk's newer v1 reads over real HTTP, through the client the CLI uses: several submitted pull
// requests in one call, includeTimeline, and the completed testing of a queue in a time range.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, ApiError, type Client } from '../../src/client/index.js';
import { until } from '../support/forge-e2e.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { call, Q } from './helpers.js';

let server: TestServer;
let client: Client;

/** The client's error for a call that should fail. */
async function refusal(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => new Error('expected an error answer'),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

beforeAll(async () => {
  // PR #3 fails its test; #1 and #2 merge. Runs are short so the queue concludes quickly.
  server = await startTestServer({
    sandbox: { testSeconds: 0.2, failPrs: new Set([3]) },
    tickMs: 50,
    pollMs: 50,
  });
  client = createClient({ baseUrl: server.url, token: server.token, retries: 0 });
  await client.call('createQueue', Q);
  for (const number of [1, 2, 3]) await client.call('submitPullRequest', { ...Q, pr: { number } });
  await until(
    '#1 and #2 merged, #3 failed',
    async () => {
      const { pullRequests } = await client.call('getSubmittedPullRequests', {
        ...Q,
        prs: [{ number: 1 }, { number: 2 }, { number: 3 }],
      });
      return pullRequests.map((p) => p.state).join() === 'merged,merged,failed';
    },
    30_000,
    50,
  );
  await client.call('submitPullRequest', { ...Q, pr: { number: 4 } });
});
afterAll(async () => {
  await server.close();
});

describe('getSubmittedPullRequests', () => {
  it('answers the PRs asked for in their order, each once, as getSubmittedPullRequest does; never-submitted ones in notFound', async () => {
    const answer = await client.call('getSubmittedPullRequests', {
      ...Q,
      prs: [{ number: 4 }, { number: 77 }, { number: 1 }, { number: 4 }],
    });
    expect(answer.pullRequests.map((p) => p.prNumber)).toEqual([4, 1]);
    expect(answer.notFound).toEqual([{ number: 77 }]);
    const single = await client.call('getSubmittedPullRequest', { ...Q, pr: { number: 1 } });
    expect(answer.pullRequests[1]).toEqual(single);
    expect(answer.pullRequests[0]).not.toHaveProperty('timeline');
  });

  it('with includeTimeline, each carries the state changes of its submission, newest first', async () => {
    const { pullRequests } = await client.call('getSubmittedPullRequests', {
      ...Q,
      prs: [{ number: 1 }, { number: 3 }],
      includeTimeline: true,
    });
    const [merged, failed] = pullRequests;
    expect(merged.timeline?.[0]).toMatchObject({ state: 'merged' });
    expect(merged.timeline?.map((t) => t.state)).toContain('testing');
    expect(merged.timeline?.at(-1)?.state).toMatch(/^(not_ready|pending)$/);
    const times = merged.timeline!.map((t) => Date.parse(t.timestamp));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    expect(failed.timeline?.[0]).toMatchObject({ state: 'failed' });
    expect(failed.timeline?.find((t) => t.state === 'testing')?.testRunId).toMatch(/./);
  });

  it('refuses an empty list, more than 50 PRs, and a queue that does not exist', async () => {
    expect((await call(server, 'getSubmittedPullRequests', { ...Q, prs: [] })).text).toMatch(/^prs: /);
    const many = Array.from({ length: 51 }, (_, i) => ({ number: i + 1 }));
    const tooMany = await call(server, 'getSubmittedPullRequests', { ...Q, prs: many });
    expect(tooMany.status).toBe(400);
    expect(tooMany.text).toMatch(/^prs: .*50/);
    const missing = await refusal(
      client.call('getSubmittedPullRequests', { ...Q, targetBranch: 'nope', prs: [{ number: 1 }] }),
    );
    expect(missing.status).toBe(404);
    expect(missing.code).toBe('not_found');
  });
});

describe('getSubmittedPullRequest with includeTimeline', () => {
  it('adds the timeline of the submission it answers; without the flag the answer is unchanged', async () => {
    const plain = await client.call('getSubmittedPullRequest', { ...Q, pr: { number: 2 } });
    expect(plain).not.toHaveProperty('timeline');
    const { timeline, ...rest } = await client.call('getSubmittedPullRequest', {
      ...Q,
      pr: { number: 2 },
      includeTimeline: true,
    });
    expect(rest).toEqual(plain);
    expect(timeline?.[0]).toMatchObject({ state: 'merged' });
    expect(timeline?.every((t) => !Number.isNaN(Date.parse(t.timestamp)))).toBe(true);
  });
});

describe('listMergeQueueTestingResults', () => {
  const since = () => new Date(Date.now() - 3_600_000).toISOString();

  it('lists one result per PR per finished run, newest first, with totalItems; offset and take page it', async () => {
    const all = await client.call('listMergeQueueTestingResults', { ...Q, since: since() });
    const byPr = new Map(all.testingResults.map((r) => [r.prNumber, r]));
    expect(byPr.get(1)).toMatchObject({ cycleConclusion: 'succeeded', attempt: 1 });
    expect(byPr.get(3)).toMatchObject({ cycleConclusion: 'failed' });
    // #4 is still testing or waiting: in-progress testing is not listed.
    expect(all.testingResults.filter((r) => r.prNumber === 4 && r.cycleConclusion !== 'succeeded')).toEqual(
      [],
    );
    expect(all.totalItems).toBe(all.testingResults.length);
    const finished = all.testingResults.map((r) => Date.parse(r.finishedAt));
    expect([...finished].sort((a, b) => b - a)).toEqual(finished);
    // Each result's run is readable with getMergeQueueTestingDetails.
    const details = await client.call('getMergeQueueTestingDetails', {
      ...Q,
      testRunId: byPr.get(3)!.testRunId,
    });
    expect(details.status).toBe('failed');
    const second = await client.call('listMergeQueueTestingResults', {
      ...Q,
      since: since(),
      offset: 1,
      take: 1,
    });
    expect(second).toEqual({ testingResults: [all.testingResults[1]], totalItems: all.totalItems });
    const future = await client.call('listMergeQueueTestingResults', {
      ...Q,
      since: new Date(Date.now() + 3_600_000).toISOString(),
      until: new Date(Date.now() + 7_200_000).toISOString(),
    });
    expect(future).toEqual({ testingResults: [], totalItems: 0 });
  });

  it('refuses a window over 45 days, since after until, a missing since and a bad take', async () => {
    const now = Date.now();
    const wide = await refusal(
      client.call('listMergeQueueTestingResults', {
        ...Q,
        since: new Date(now - 46 * 86_400_000).toISOString(),
      }),
    );
    expect(wide.status).toBe(400);
    expect(wide.serverMessage).toBe(
      'since: at most 45 days before until (ask for longer ranges in several requests)',
    );
    const backwards = await call(server, 'listMergeQueueTestingResults', {
      ...Q,
      since: new Date(now).toISOString(),
      until: new Date(now - 1000).toISOString(),
    });
    expect([backwards.status, backwards.text]).toEqual([400, 'since: must not be after until']);
    expect((await call(server, 'listMergeQueueTestingResults', Q)).text).toBe('since: required');
    expect(
      (await call(server, 'listMergeQueueTestingResults', { ...Q, since: since(), take: 101 })).status,
    ).toBe(400);
  });
});

describe('the OpenAPI document', () => {
  it('lists the three as Trunk operations (not extensions)', async () => {
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as {
      paths: Record<string, { post: Record<string, unknown> }>;
    };
    for (const path of ['/v1/getSubmittedPullRequests', '/v1/listMergeQueueTestingResults']) {
      expect(doc.paths[path].post['x-railyard-extension'], path).toBeUndefined();
      expect(doc.paths[path].post['x-railyard-permission'], path).toBeNull();
    }
    expect(JSON.stringify(doc.paths['/v1/getSubmittedPullRequest'].post)).toContain('"timeline"');
  });
});
