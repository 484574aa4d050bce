// The v2 API end to end (issue 39): Bearer auth with a v1 token, 404s across organisations, v2's
// behaviour changes (409 PR_ALREADY_ENQUEUED, 409 PR_NOT_IN_ACTIVE_STATE, 202 impacted targets),
// cursor paging, renamed settings round-tripping with v1, v1 ↔ v2 cross reads, stable ids.
import { describe, expect, it } from 'vitest';
import { serversPerTest } from '../support/hooks.js';
import type { TestServer } from '../support/server.js';
import { tempDir } from '../support/tmp.js';
import { v2 } from '../support/v2.js';
import { call, ok, Q } from './helpers.js';

const startServer = serversPerTest();
const WEB = encodeURIComponent('https://github.com/acme/web');

/** A paused queue for github.com/acme/web main, created on v2: its id and the repository's. */
async function pausedQueue(s: TestServer, token = s.token): Promise<{ q: string; repositoryId: string }> {
  const repo = await v2(s, 'GET', `/repositories?providerUrl=${WEB}`, undefined, token);
  const repositoryId = repo.body.data[0].id as string;
  const created = await v2(s, 'POST', '/merge-queues', { repositoryId, targetBranch: 'main' }, token);
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  await v2(s, 'POST', `/merge-queues/${created.body.id}/pause`, undefined, token);
  return { q: created.body.id, repositoryId };
}

async function submit(s: TestServer, q: string, body: Record<string, unknown>) {
  const a = await v2(s, 'POST', `/merge-queues/${q}/pull-requests`, body);
  expect(a.status, JSON.stringify(a.body)).toBe(201);
  return a.body;
}

describe('v2: auth, ids, errors', () => {
  it("takes a v1 token as a Bearer key; no key or an unknown one is 401 with Trunk's codes", async () => {
    const s = await startServer();
    expect((await v2(s, 'GET', '/merge-queues')).status).toBe(200);
    const none = await v2(s, 'GET', '/merge-queues', undefined, null);
    expect([none.status, none.body.error.code]).toEqual([401, 'AUTHENTICATION_REQUIRED']);
    const bad = await v2(s, 'GET', '/merge-queues', undefined, 'not-a-token');
    expect([bad.status, bad.body.error.code]).toEqual([401, 'INVALID_TOKEN']);
    // v1's header is not v2's credential.
    const res = await fetch(`${s.url.replace(/\/v1$/, '')}/v2/merge-queues`, {
      headers: { 'x-api-token': s.token },
    });
    expect(res.status).toBe(401);
    const unknown = await v2(s, 'GET', '/no-such-thing');
    expect([unknown.status, unknown.body.error.code]).toEqual([404, 'NOT_FOUND']);
    expect(unknown.headers.get('x-request-id')).toBeTruthy();
    // A body that is not JSON, or a key Trunk does not define, is Trunk's 400 in Trunk's envelope.
    const res2 = await fetch(`${s.url.replace(/\/v1$/, '')}/v2/merge-queues`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json' },
      body: '{"repositoryId":',
    });
    expect([res2.status, ((await res2.json()) as { error: { code: string } }).error.code]).toEqual([
      400,
      'VALIDATION_FAILED',
    ]);
    const extra = await v2(s, 'POST', '/merge-queues', {
      repositoryId: '00000000-0000-4000-8000-000000000000',
      targetBranch: 'main',
      repo: 'acme/web',
    });
    expect([extra.status, extra.body.error.code]).toEqual([400, 'VALIDATION_FAILED']);
  });

  it("answers 404 for another organisation's queue, pull request and repository, and changes nothing", async () => {
    const s = await startServer({ tokens: { 'token-a': 'acme', 'token-b': 'globex' } });
    const { q, repositoryId } = await pausedQueue(s, 'token-a');
    const pr = await v2(s, 'POST', `/merge-queues/${q}/pull-requests`, { number: 7 }, 'token-a');
    expect(pr.status).toBe(201);
    const asB = (method: string, path: string, body?: unknown) => v2(s, method, path, body, 'token-b');
    const codes = async (method: string, path: string, body?: unknown) => {
      const a = await asB(method, path, body);
      return `${a.status} ${a.body.error.code}`;
    };
    expect(await codes('GET', `/merge-queues/${q}`)).toBe('404 MERGE_QUEUE_NOT_FOUND');
    expect(await codes('POST', `/merge-queues/${q}/resume`)).toBe('404 MERGE_QUEUE_NOT_FOUND');
    expect(await codes('DELETE', `/merge-queues/${q}`)).toBe('404 MERGE_QUEUE_NOT_FOUND');
    expect(await codes('GET', `/pull-requests/${pr.body.id}`)).toBe('404 PR_NOT_FOUND');
    expect(await codes('POST', `/pull-requests/${pr.body.id}/dequeue`)).toBe('404 PR_NOT_FOUND');
    expect(await codes('GET', `/repositories/${repositoryId}`)).toBe('404 REPOSITORY_NOT_FOUND');
    // The same repository resolved by B has another id, and B sees none of A's queues.
    const mine = await asB('GET', `/repositories?providerUrl=${WEB}`);
    expect(mine.body.data[0].id).not.toBe(repositoryId);
    expect((await asB('GET', '/merge-queues')).body.data).toEqual([]);
    const batch = await asB('GET', `/queue-entry-history?pullRequestIds=${pr.body.id}`);
    expect(batch.body.data).toEqual([{ pullRequestId: pr.body.id, transitions: [] }]);
    // A's queue and PR are as they were.
    const still = await v2(s, 'GET', `/pull-requests/${pr.body.id}`, undefined, 'token-a');
    expect([
      still.body.queueEntry.state,
      (await v2(s, 'GET', `/merge-queues/${q}`, undefined, 'token-a')).body.state,
    ]).toEqual(['pending', 'paused']);
  });

  it('keeps queue and pull request ids across a restart on the same data', async () => {
    const dataDir = await tempDir();
    const first = await startServer({ dataDir });
    const { q } = await pausedQueue(first);
    const pr = await submit(first, q, { number: 3 });
    await first.close();
    const second = await startServer({ dataDir });
    const again = await v2(second, 'GET', `/pull-requests/${pr.id}`);
    expect([again.status, again.body.queueEntry.mergeQueueId, again.body.number]).toEqual([200, q, 3]);
    expect((await v2(second, 'GET', `/merge-queues/${q}`)).body.id).toBe(q);
  });

  it('serves its own description at /v2/openapi.json with every operation and the Railyard markers', async () => {
    const s = await startServer();
    const res = await fetch(`${s.url.replace(/\/v1$/, '')}/v2/openapi.json`);
    const doc = (await res.json()) as {
      paths: Record<string, Record<string, { operationId: string; 'x-railyard-permission': unknown }>>;
      'x-railyard': unknown;
    };
    const ops = Object.values(doc.paths).flatMap((p) => Object.values(p).map((o) => o.operationId));
    expect(ops).toContain('mergeQueues.submitPullRequest');
    expect(ops).toContain('pullRequests.queueEntryHistoryBatch');
    expect(ops.length).toBe(30);
    expect(doc.paths['/v2/merge-queues/{id}/config']!.patch!['x-railyard-permission']).toBe('settings');
    expect(doc['x-railyard']).toBeTruthy();
  });
});

describe('v2: behaviour changes', () => {
  it('a resubmission is 409 PR_ALREADY_ENQUEUED and changes nothing; reprioritize and PATCH queue-entry change it', async () => {
    const s = await startServer();
    const { q } = await pausedQueue(s);
    const pr = await submit(s, q, { number: 1, priorityName: 'low' });
    const again = await v2(s, 'POST', `/merge-queues/${q}/pull-requests`, {
      number: 1,
      priorityValue: 0,
      allowBatching: false,
    });
    expect([again.status, again.body.error.code]).toEqual([409, 'PR_ALREADY_ENQUEUED']);
    const read = await v2(s, 'GET', `/pull-requests/${pr.id}`);
    expect([read.body.queueEntry.priorityName, read.body.queueEntry.allowBatching]).toEqual(['low', true]);
    const both = await v2(s, 'POST', `/pull-requests/${pr.id}/reprioritize`, {
      priorityValue: 1,
      priorityName: 'high',
    });
    expect([both.status, both.body.error.code]).toEqual([400, 'VALIDATION_FAILED']);
    const urgent = await v2(s, 'POST', `/pull-requests/${pr.id}/reprioritize`, { priorityValue: 0 });
    expect([urgent.body.queueEntry.priorityValue, urgent.body.queueEntry.skipsTheLine]).toEqual([0, true]);
    const patched = await v2(s, 'PATCH', `/pull-requests/${pr.id}/queue-entry`, { allowBatching: false });
    expect([patched.body.queueEntry.allowBatching, patched.body.queueEntry.priorityValue]).toEqual([
      false,
      0,
    ]);
    expect((await v2(s, 'PATCH', `/pull-requests/${pr.id}/queue-entry`, {})).status).toBe(400);
    // v1 sees the same entry.
    expect(await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: 1 } })).toMatchObject({
      priorityValue: 0,
      skipTheLine: true,
    });
  });

  it('a write to a concluded entry is 409 PR_NOT_IN_ACTIVE_STATE; restart of a waiting one is 422', async () => {
    const s = await startServer();
    const { q } = await pausedQueue(s);
    const pr = await submit(s, q, { number: 2 });
    const restart = await v2(s, 'POST', `/pull-requests/${pr.id}/restart-tests`);
    expect([restart.status, restart.body.error.code]).toEqual([422, 'PR_TESTS_NOT_RESTARTABLE']);
    const out = await v2(s, 'POST', `/pull-requests/${pr.id}/dequeue`);
    expect([out.status, out.body.queueEntry.state, out.body.isCurrentlySubmittedToQueue]).toEqual([
      200,
      'cancelled',
      false,
    ]);
    for (const [method, path, body] of [
      ['POST', 'dequeue', undefined],
      ['POST', 'reprioritize', { priorityName: 'high' }],
      ['PATCH', 'queue-entry', { allowBatching: false }],
      ['POST', 'restart-tests', undefined],
    ] as const) {
      const a = await v2(s, method, `/pull-requests/${pr.id}/${path}`, body);
      expect(`${path} ${a.status} ${a.body.error.code}`).toBe(`${path} 409 PR_NOT_IN_ACTIVE_STATE`);
    }
    // Submitted again it is live again (a new entry).
    expect((await submit(s, q, { number: 2 })).queueEntry.state).toBe('pending');
  });

  it('takes impacted targets with 202 and no body; the PR reads them', async () => {
    const s = await startServer();
    const { q, repositoryId } = await pausedQueue(s);
    await v2(s, 'POST', `/merge-queues/${q}/switch-modes`, { mode: 'graph' });
    await v2(s, 'POST', `/merge-queues/${q}/resume`);
    const pr = await submit(s, q, { number: 4 });
    expect(pr.queueEntry.readiness.hasImpactedTargets).toBe(false);
    const put = await v2(s, 'PUT', '/impacted-targets', {
      repositoryId,
      targetBranch: 'main',
      branch: pr.branch,
      sha: pr.sha,
      impactedTargets: [],
    });
    expect([put.status, put.body]).toEqual([202, undefined]);
    expect((await v2(s, 'GET', `/pull-requests/${pr.id}`)).body.queueEntry.readiness.hasImpactedTargets).toBe(
      true,
    );
    const neither = await v2(s, 'PUT', '/impacted-targets', {
      repositoryId,
      targetBranch: 'main',
      number: 4,
      sha: pr.sha,
    });
    expect(neither.status).toBe(400);
  });

  it('deletes only an empty queue (409 QUEUE_HAS_ACTIVE_ENTRIES, then 204); switching to the mode it has is a no-op', async () => {
    const s = await startServer();
    const { q } = await pausedQueue(s);
    const same = await v2(s, 'POST', `/merge-queues/${q}/switch-modes`, { mode: 'queue' });
    expect([same.status, same.body.mode, same.body.state]).toEqual([200, 'queue', 'paused']);
    const pr = await submit(s, q, { number: 5 });
    const busy = await v2(s, 'DELETE', `/merge-queues/${q}`);
    expect([busy.status, busy.body.error.code]).toEqual([409, 'QUEUE_HAS_ACTIVE_ENTRIES']);
    await v2(s, 'POST', `/pull-requests/${pr.id}/dequeue`);
    const gone = await v2(s, 'DELETE', `/merge-queues/${q}`);
    expect([gone.status, gone.body]).toEqual([204, undefined]);
    expect((await v2(s, 'GET', `/merge-queues/${q}`)).status).toBe(404);
  });
});

describe('v2: lists', () => {
  it('pages with limit 1 through every PR once, most recently enqueued first; includeTotal; cursors bound to their list', async () => {
    const s = await startServer();
    const { q } = await pausedQueue(s);
    for (const number of [11, 12, 13, 14]) await submit(s, q, { number });
    const seen: number[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const path: string = `/merge-queues/${q}/pull-requests?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page = await v2(s, 'GET', path);
      expect(page.status).toBe(200);
      expect(page.body.data).toHaveLength(1);
      expect(page.body.total).toBeUndefined();
      seen.push(page.body.data[0].number);
      cursor = page.body.nextCursor;
      expect(page.body.hasMore).toBe(cursor !== null);
      pages++;
    } while (cursor && pages < 10);
    expect(seen).toEqual([14, 13, 12, 11]);
    const total = await v2(s, 'GET', `/merge-queues/${q}/pull-requests?limit=2&includeTotal=true`);
    expect([total.body.data.length, total.body.total, total.body.hasMore]).toEqual([2, 4, true]);
    // A cursor is bound to its operation and filters.
    const other = await v2(
      s,
      'GET',
      `/merge-queues/${q}/pull-requests?limit=1&state=pending&cursor=${encodeURIComponent(total.body.nextCursor)}`,
    );
    expect([other.status, other.body.error.code]).toEqual([400, 'INVALID_CURSOR']);
    expect((await v2(s, 'GET', '/merge-queues?cursor=bogus')).body.error.code).toBe('INVALID_CURSOR');
    for (const limit of ['0', '101', 'x'])
      expect((await v2(s, 'GET', `/merge-queues?limit=${limit}`)).status).toBe(400);
    // Only camelCase states.
    expect((await v2(s, 'GET', `/merge-queues/${q}/pull-requests?state=not_ready`)).status).toBe(400);
    expect(
      (await v2(s, 'GET', `/merge-queues/${q}/pull-requests?state=pending,notReady`)).body.data,
    ).toHaveLength(4);
    // `author` (Trunk's filter): only that author's PRs; the sandbox's PRs are all by `sandbox`.
    const byAuthor = await v2(s, 'GET', `/merge-queues/${q}/pull-requests?author=sandbox&includeTotal=true`);
    expect([byAuthor.status, byAuthor.body.total]).toEqual([200, 4]);
    const nobody = await v2(s, 'GET', `/merge-queues/${q}/pull-requests?author=octocat`);
    expect([nobody.status, nobody.body.data]).toEqual([200, []]);
  });

  it('gives a history oldest first (newest first on request) and several at once', async () => {
    const s = await startServer();
    const { q } = await pausedQueue(s);
    const pr = await submit(s, q, { number: 21 });
    await v2(s, 'POST', `/pull-requests/${pr.id}/dequeue`);
    const oldest = await v2(s, 'GET', `/pull-requests/${pr.id}/queue-entry-history`);
    expect(oldest.body.data.map((t: { state: string }) => t.state)).toEqual([
      'notReady',
      'pending',
      'cancelled',
    ]);
    const newest = await v2(s, 'GET', `/pull-requests/${pr.id}/queue-entry-history?direction=newest&limit=1`);
    expect([newest.body.data[0].state, newest.body.hasMore]).toEqual(['cancelled', true]);
    const other = await submit(s, q, { number: 22 });
    const batch = await v2(s, 'GET', `/queue-entry-history?pullRequestIds=${pr.id},${other.id}`);
    expect(batch.body.data.map((g: { transitions: unknown[] }) => g.transitions.length)).toEqual([3, 2]);
  });
});

describe('v2 and v1 on the same queues', () => {
  it('renamed settings round-trip: written on v2, read on v1, and back', async () => {
    const s = await startServer();
    const { q } = await pausedQueue(s);
    const patch = {
      allowBatching: true,
      areCommentsEnabled: false,
      isStatusCheckEnabled: false,
      createsPrsForTestingBranches: false,
      mergeMethod: 'mergeCommit',
      optimizationMode: 'bisectionSkipRedundantTests',
      requiredStatuses: ['build'],
      batchingMinSize: 3,
    };
    const after = await v2(s, 'PATCH', `/merge-queues/${q}/config`, patch);
    expect(after.body.config).toMatchObject(patch);
    expect(await ok(s, 'getQueue', Q)).toMatchObject({
      batch: true,
      commentsEnabled: false,
      statusCheckEnabled: false,
      createPrsForTestingBranches: false,
      mergeMethod: 'merge_commit',
      optimizationMode: 'bisection_skip_redundant_tests',
      requiredStatuses: ['build'],
      batchingMinSize: 3,
      state: 'paused',
    });
    await ok(s, 'updateQueue', {
      ...Q,
      labelCommandsEnabled: false,
      mergeMethod: 'rebase',
      state: 'draining',
    });
    const read = await v2(s, 'GET', `/merge-queues/${q}`);
    expect([read.body.config.areLabelCommandsEnabled, read.body.config.mergeMethod, read.body.state]).toEqual(
      [false, 'rebase', 'draining'],
    );
    // `[]` clears the list (v1 ignored an empty list); v1's names and unknown keys are 400s.
    expect(
      (await v2(s, 'PATCH', `/merge-queues/${q}/config`, { requiredStatuses: [] })).body.config
        .requiredStatuses,
    ).toEqual([]);
    expect((await ok(s, 'getQueue', Q)).requiredStatuses).toBeNull();
    for (const body of [
      { batch: true },
      { mergeMethod: 'merge_commit' },
      { state: 'paused' },
      { notReadyTimeoutMinutes: 90 },
    ]) {
      const a = await v2(s, 'PATCH', `/merge-queues/${q}/config`, body);
      expect(`${JSON.stringify(body)} ${a.status} ${a.body.error.code}`).toBe(
        `${JSON.stringify(body)} 400 VALIDATION_FAILED`,
      );
    }
  });

  it('a PR submitted on v1 reads on v2, and one submitted on v2 reads and cancels on v1', async () => {
    const s = await startServer();
    const { q, repositoryId } = await pausedQueue(s);
    await ok(s, 'submitPullRequest', { ...Q, pr: { number: 31 }, priority: 'high' });
    const found = await v2(s, 'GET', `/pull-requests?repositoryId=${repositoryId}&number=31`);
    expect(found.body.data).toHaveLength(1);
    expect(found.body.data[0]).toMatchObject({
      number: 31,
      isCurrentlySubmittedToQueue: true,
      queueEntry: { mergeQueueId: q, state: 'pending', priorityName: 'high' },
    });
    const v1Entry = await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: 31 } });
    expect(found.body.data[0].queueEntry.id).toBe(v1Entry.id);
    // v1's resubmission still rewrites; v2's is refused.
    expect((await v2(s, 'POST', `/merge-queues/${q}/pull-requests`, { number: 31 })).status).toBe(409);

    const pr = await submit(s, q, { number: 32, allowBatching: false });
    expect(await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: 32 } })).toMatchObject({
      state: 'pending',
      prNumber: 32,
    });
    const listed = await ok(s, 'listPullRequests', Q);
    expect(listed.pullRequests.find((p: { prNumber: number }) => p.prNumber === 32)).toMatchObject({
      noBatch: true,
    });
    await ok(s, 'cancelPullRequest', { ...Q, pr: { number: 32 } });
    expect((await v2(s, 'GET', `/pull-requests/${pr.id}`)).body.queueEntry.state).toBe('cancelled');
    const byBranch = await v2(
      s,
      'GET',
      `/pull-requests?repositoryId=${repositoryId}&branch=${encodeURIComponent(pr.branch)}`,
    );
    expect(byBranch.body.data.map((p: { id: string }) => p.id)).toEqual([pr.id]);
    // A queue made on v1 is listed on v2.
    await call(s, 'createQueue', { ...Q, targetBranch: 'release' });
    const queues = await v2(s, 'GET', `/merge-queues?repositoryId=${repositoryId}&includeTotal=true`);
    expect([
      queues.body.total,
      queues.body.data.map((x: { targetBranch: string }) => x.targetBranch).sort(),
    ]).toEqual([2, ['main', 'release']]);
  });
});
