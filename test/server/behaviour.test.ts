import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { BODY_LIMIT_BYTES } from '../../src/contract/index.js';
import { sandboxHeadSha } from '../../src/forge/sandbox/index.js';
import { eachDatabase, serversPerTest } from '../support/hooks.js';
import type { TestServer, TestServerOptions } from '../support/server.js';
import { call, ISO_MS, ok, Q, REPO } from './helpers.js';

const startServer = serversPerTest();

async function server(opts?: TestServerOptions): Promise<TestServer> {
  return startServer({ ...opts, ...(await database()) });
}

async function withQueue(opts?: TestServerOptions): Promise<TestServer> {
  const s = await server(opts);
  await ok(s, 'createQueue', Q);
  return s;
}

/** A paused queue: PRs are admitted and ordered but nothing starts testing, so stored state stays put. */
async function withPausedQueue(extra: Record<string, unknown> = {}): Promise<TestServer> {
  const s = await server();
  await ok(s, 'createQueue', { ...Q, ...extra });
  await ok(s, 'updateQueue', { ...Q, state: 'paused' });
  return s;
}

/** Every test of stored state, once per database. */
function persistenceSuite(): void {
  describe('queues', () => {
    it('creates a queue with the documented defaults and refuses a second one for the branch (409)', async () => {
      const s = await withQueue();
      const q = await ok(s, 'getQueue', Q);
      expect(q).toEqual({
        state: 'running',
        branch: 'main',
        concurrency: 1,
        testingTimeoutMinutes: 300,
        mode: 'single',
        canOptimisticallyMerge: false,
        pendingFailureDepth: 0,
        batch: false,
        batchingMaxWaitTimeMinutes: 5,
        batchingMinSize: 4,
        createPrsForTestingBranches: true,
        commentsEnabled: true,
        commandsEnabled: true,
        statusCheckEnabled: true,
        bisectionConcurrency: 1,
        requiredStatuses: null,
        directMergeMode: 'off',
        optimizationMode: 'off',
        mergeMethod: 'squash',
        extensionEnabled: q.extensionEnabled,
        enqueueingLabel: q.enqueueingLabel,
        labelCommandsEnabled: true,
        stateLabelsEnabled: false,
        flakyPolicy: 'off',
        flakyReportGraceSeconds: 120,
        flakyRetries: 0,
        probationThreshold: null,
        freezes: [],
        freezeBypassPriority: 0,
        enqueuedPullRequests: [],
      });
      const dup = await call(s, 'createQueue', { ...Q, mode: 'parallel' });
      expect(dup.status).toBe(409);
      expect(dup.text).toBe('A merge queue already exists for branch "main" in acme/web');
      // The same branch in another repository is another queue.
      await ok(s, 'createQueue', { repo: { ...REPO, name: 'api' }, targetBranch: 'main', mode: 'PARALLEL', concurrency: '3' });
      const other = await ok(s, 'getQueue', { repo: { ...REPO, name: 'api' }, targetBranch: 'main' });
      expect(other).toMatchObject({ mode: 'parallel', concurrency: 3, bisectionConcurrency: 3 });
    });

    it('keeps the flaky-aware settings (extensions) and refuses values out of range, naming the field', async () => {
      const s = await withQueue();
      const set = { flakyPolicy: 'IGNORE_QUARANTINED', flakyReportGraceSeconds: 30, flakyRetries: 2, probationThreshold: 0.25 };
      expect(await ok(s, 'updateQueue', { ...Q, ...set })).toMatchObject({ ...set, flakyPolicy: 'ignore_quarantined' });
      expect(await ok(s, 'getQueue', Q)).toMatchObject({ flakyPolicy: 'ignore_quarantined', flakyRetries: 2, probationThreshold: 0.25 });
      for (const [field, value] of [['flakyRetries', 4], ['flakyPolicy', 'sometimes'], ['probationThreshold', 1.5], ['flakyReportGraceSeconds', -1]] as const) {
        const bad = await call(s, 'updateQueue', { ...Q, [field]: value });
        expect([bad.status, bad.text.split(':')[0]]).toEqual([400, field]);
      }
      expect(await ok(s, 'updateQueue', { ...Q, probationThreshold: null })).toMatchObject({ probationThreshold: null, flakyRetries: 2 });
    });

    it('createQueue applies every updateQueue setting it is given (an extension), all or nothing', async () => {
      const s = await server();
      await ok(s, 'createQueue', {
        ...Q,
        concurrency: 2,
        mergeMethod: 'merge_commit',
        batch: true,
        batchingMinSize: 3,
        requiredStatuses: ['ci', 'lint'],
        testingTimeoutMinutes: 45,
        commentsEnabled: false,
        state: 'paused',
      });
      expect(await ok(s, 'getQueue', Q)).toMatchObject({
        concurrency: 2,
        mergeMethod: 'merge_commit',
        batch: true,
        batchingMinSize: 3,
        requiredStatuses: ['ci', 'lint'],
        testingTimeoutMinutes: 45,
        commentsEnabled: false,
        state: 'paused',
      });
      // A bad setting creates nothing.
      const other = { repo: { ...REPO, name: 'api' }, targetBranch: 'main' };
      const bad = await call(s, 'createQueue', { ...other, mergeMethod: 'octopus' });
      expect(bad.status).toBe(400);
      expect(bad.text).toMatch(/mergeMethod/);
      expect((await call(s, 'getQueue', other)).status).toBe(404);
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const doc: any = await (await fetch(`${s.url}/openapi.json`)).json();
      const props = doc.paths['/v1/createQueue'].post.requestBody.content['application/json'].schema.properties;
      expect(props.mergeMethod['x-railyard-extension']).toBe(true);
      expect(props.concurrency['x-railyard-extension']).toBeUndefined();
      // The flaky-aware settings are updateQueue fields too.
      expect(props.flakyPolicy['x-railyard-extension']).toBe(true);
    });

    it('answers 404 for a missing queue on every queue operation', async () => {
      const s = await server();
      const missing = { repo: REPO, targetBranch: 'nope' };
      for (const [op, body] of [
        ['getQueue', missing],
        ['updateQueue', { ...missing, concurrency: 2 }],
        ['deleteQueue', missing],
        ['submitPullRequest', { ...missing, pr: { number: 1 } }],
        ['listPullRequests', missing],
        ['getSubmittedPullRequest', { ...missing, pr: { number: 1 } }],
        ['setImpactedTargets', { ...missing, pr: { number: 1, sha: 'abc' }, impactedTargets: 'ALL' }],
      ] as const) {
        const a = await call(s, op, body);
        expect(a.status, op).toBe(404);
        expect(a.text, op).toBe('no merge queue for branch "nope" in acme/web for the token\'s organisation "local"');
      }
    });

    it('updates partially, accepts upper-case enums, and answers the queue without its pull requests', async () => {
      const s = await withQueue();
      const settings = await ok(s, 'updateQueue', {
        ...Q,
        state: 'DRAINING',
        mergeMethod: 'MERGE_COMMIT',
        testingTimeoutMinutes: 0,
        requiredStatuses: ['ci/test'],
      });
      expect(settings).toMatchObject({ state: 'draining', mergeMethod: 'merge_commit', testingTimeoutMinutes: 0, requiredStatuses: ['ci/test'] });
      expect(settings).not.toHaveProperty('enqueuedPullRequests');
      // Absent fields are unchanged; [] is ignored; deleteRequiredStatuses drops the override.
      expect(await ok(s, 'updateQueue', { ...Q, requiredStatuses: [] })).toMatchObject({ state: 'draining', requiredStatuses: ['ci/test'] });
      expect(await ok(s, 'updateQueue', { ...Q, deleteRequiredStatuses: true })).toMatchObject({ requiredStatuses: null });
      const bad = await call(s, 'updateQueue', { ...Q, concurrency: 0 });
      expect(bad.status).toBe(400);
      expect(bad.text).toMatch(/^concurrency: /);
    });

    it('switches modes through switching_modes when the queue is not empty', async () => {
      const s = await withQueue();
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 1 } });
      expect(await ok(s, 'updateQueue', { ...Q, mode: 'parallel' })).toMatchObject({ state: 'switching_modes', mode: 'single' });
      await ok(s, 'cancelPullRequest', { ...Q, pr: { number: 1 } });
      expect(await ok(s, 'getQueue', Q)).toMatchObject({ state: 'running', mode: 'parallel' });
    });

    it('deletes an empty queue, refuses a non-empty one (400) and 404s afterwards', async () => {
      const s = await withQueue();
      for (const n of [1, 2, 3]) await ok(s, 'submitPullRequest', { ...Q, pr: { number: n } });
      const busy = await call(s, 'deleteQueue', Q);
      expect(busy.status).toBe(400);
      expect(busy.text).toBe('queue for main in acme/web is not empty: cancel or merge its 3 pull requests first');
      for (const n of [1, 2, 3]) await ok(s, 'cancelPullRequest', { ...Q, pr: { number: n } });
      await ok(s, 'deleteQueue', Q);
      expect((await call(s, 'getQueue', Q)).status).toBe(404);
      expect((await call(s, 'deleteQueue', Q)).status).toBe(404);
      await ok(s, 'createQueue', Q); // the branch is free again
    });
  });

  describe('pull requests', () => {
    it('submits with a numeric-string number and an upper-case priority; resubmitting updates priority and noBatch', async () => {
      const s = await withPausedQueue();
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: '7' }, priority: 'LOW' });
      let pr = await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: '7' } });
      expect(pr).toMatchObject({ prNumber: 7, state: 'pending', priorityName: 'low', priorityValue: 200, skipTheLine: false });
      expect(pr.stateChangedAt).toMatch(ISO_MS);
      const id = pr.id;
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 7 }, priority: 'urgent', noBatch: true });
      pr = await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: 7 } });
      expect(pr).toMatchObject({ id, priorityName: 'urgent', priorityValue: 0, skipTheLine: true });
      const [item] = (await ok(s, 'getQueue', Q)).enqueuedPullRequests;
      expect(item).toMatchObject({ prNumber: 7, noBatch: true });
    });

    it('orders the queue by priority, then submission', async () => {
      const s = await withPausedQueue();
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 1 } });
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 2 }, priority: 'low' });
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 3 }, priority: 10 });
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 4 } });
      const q = await ok(s, 'getQueue', Q);
      expect(q.enqueuedPullRequests.map((p: { prNumber: number }) => p.prNumber)).toEqual([3, 1, 4, 2]);
      expect(q.enqueuedPullRequests[1]).toMatchObject({ usedDefaultPriorityName: 'medium', priorityName: 'medium' });
    });

    it('cancels, 404s a PR never submitted, and enqueues a cancelled PR again on resubmit', async () => {
      const s = await withPausedQueue();
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 5 } });
      const first = await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: 5 } });
      await ok(s, 'cancelPullRequest', { ...Q, pr: { number: 5 } });
      const cancelled = await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: 5 } });
      expect(cancelled).toMatchObject({ state: 'cancelled', stateReason: 'USER_REQUESTED', isCurrentlySubmittedToQueue: false });
      expect((await ok(s, 'getQueue', Q)).enqueuedPullRequests).toEqual([]);
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 5 } });
      const again = await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: 5 } });
      expect(again).toMatchObject({ state: 'pending', isCurrentlySubmittedToQueue: true });
      expect(again.id).not.toBe(first.id);

      for (const op of ['getSubmittedPullRequest', 'cancelPullRequest', 'restartTestsOnPullRequest'] as const) {
        const a = await call(s, op, { ...Q, pr: { number: 99 } });
        expect(a.status, op).toBe(404);
        expect(a.text).toBe('pull request #99 was never submitted to the main queue of acme/web');
      }
    });

    it('restarts a queued PR with the API reason', async () => {
      const s = await withPausedQueue();
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 1 } });
      await ok(s, 'restartTestsOnPullRequest', { ...Q, pr: { number: 1 } });
      expect(await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: 1 } })).toMatchObject({
        state: 'pending',
        stateReason: 'TESTS_RESTARTED_BY_API_REQUEST',
      });
    });

    it('finds a submitted PR by head branch', async () => {
      const s = await withPausedQueue();
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 42 } });
      const pr = await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { branch: 'sandbox/pr-42' } });
      expect(pr.prNumber).toBe(42);
      expect((await call(s, 'getSubmittedPullRequest', { ...Q, pr: { branch: 'sandbox/pr-43' } })).status).toBe(404);
      const both = await call(s, 'getSubmittedPullRequest', { ...Q, pr: { number: 42, branch: 'sandbox/pr-42' } });
      expect(both.status).toBe(400);
      expect(both.text).toMatch(/^pr: /);
    });

    it('keeps not-ready PRs out of getQueue; impacted targets (also uploaded before submitting) make them ready', async () => {
      const s = await withPausedQueue({ mode: 'parallel' });
      // Uploaded before the PR is submitted (the merge action does this on every push).
      await ok(s, 'setImpactedTargets', { ...Q, pr: { number: '2', sha: sandboxHeadSha(REPO, 2) }, impactedTargets: [] });
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 1 } });
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 2 } });
      let q = await ok(s, 'getQueue', Q);
      expect(q.enqueuedPullRequests.map((p: { prNumber: number }) => p.prNumber)).toEqual([2]);
      const one = await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: 1 } });
      expect(one).toMatchObject({ state: 'not_ready', readiness: { requiresImpactedTargets: true, hasImpactedTargets: false } });
      // A list for another SHA than the submitted head is refused (it would never count); "all" (any case) for the head SHA counts.
      const other = await call(s, 'setImpactedTargets', { ...Q, pr: { number: 1, sha: 'f'.repeat(40) }, impactedTargets: ['a'] });
      expect(other.status).toBe(400);
      expect(other.text).toBe(`pr.sha: ${'f'.repeat(40)} is not the head of #1 (${sandboxHeadSha(REPO, 1)}); send the targets of its head`);
      expect((await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: 1 } })).state).toBe('not_ready');
      await ok(s, 'setImpactedTargets', { ...Q, pr: { number: 1, sha: sandboxHeadSha(REPO, 1) }, impactedTargets: 'all' });
      q = await ok(s, 'getQueue', Q);
      expect(q.enqueuedPullRequests.map((p: { prNumber: number }) => p.prNumber)).toEqual([1, 2]);
      const bad = await call(s, 'setImpactedTargets', { ...Q, pr: { number: 1, sha: 'x' }, impactedTargets: 'SOME' });
      expect(bad.status).toBe(400);
      expect(bad.text).toMatch(/^impactedTargets: /);
    });

    it('lists with a state filter, a conclusion window and cursor paging', async () => {
      const s = await withPausedQueue();
      for (const n of [1, 2, 3, 4, 5]) await ok(s, 'submitPullRequest', { ...Q, pr: { number: n } });
      const before = new Date().toISOString();
      await new Promise((r) => setTimeout(r, 5));
      await ok(s, 'cancelPullRequest', { ...Q, pr: { number: 2 } });
      await ok(s, 'cancelPullRequest', { ...Q, pr: { number: 4 } });

      const seen: number[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await ok(s, 'listPullRequests', { ...Q, take: 2, ...(cursor ? { cursor } : {}) });
        seen.push(...page.pullRequests.map((p: { prNumber: number }) => p.prNumber));
        cursor = page.nextCursor;
        pages++;
      } while (cursor);
      // Queue order: the line (the paused queue's pending PRs), then those that left, in the order they left.
      expect(seen).toEqual([1, 3, 5, 2, 4]);
      expect(pages).toBe(3);

      const pending = await ok(s, 'listPullRequests', { ...Q, state: 'PENDING' });
      expect(pending.pullRequests.map((p: { prNumber: number }) => p.prNumber)).toEqual([1, 3, 5]);
      expect(pending).not.toHaveProperty('nextCursor');
      const concluded = await ok(s, 'listPullRequests', { ...Q, since: before });
      expect(concluded.pullRequests.map((p: { prNumber: number }) => p.prNumber)).toEqual([2, 4]);
      const none = await ok(s, 'listPullRequests', { ...Q, until: before });
      expect(none.pullRequests).toEqual([]);

      for (const [body, field] of [
        [{ ...Q, take: 0 }, 'take'],
        [{ ...Q, take: 101 }, 'take'],
        [{ ...Q, since: 'yesterday' }, 'since'],
        [{ ...Q, state: 'done' }, 'state'],
        [{ ...Q, cursor: 'nope' }, 'cursor'],
      ] as const) {
        const a = await call(s, 'listPullRequests', body);
        expect(a.status, field).toBe(400);
        expect(a.text.slice(0, field.length + 2)).toBe(`${field}: `);
      }
    });
  });

  describe('organisations', () => {
    it('hides another organisation’s queues, pull requests and flaky data (404, never 403)', async () => {
      const s = await server({ tokens: { 'token-a': 'team-a', 'token-b': 'team-b' } });
      await ok(s, 'createQueue', Q, 'token-a');
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 1 } }, 'token-a');
      for (const [op, body] of [
        ['getQueue', Q],
        ['getSubmittedPullRequest', { ...Q, pr: { number: 1 } }],
        ['cancelPullRequest', { ...Q, pr: { number: 1 } }],
        ['deleteQueue', Q],
      ] as const) {
        expect((await call(s, op, body, { token: 'token-b' })).status, op).toBe(404);
      }
      // The repository is team-a's: team-b cannot make a queue for it (decisions "Trust"), but for its own.
      expect((await call(s, 'createQueue', Q, { token: 'token-b' })).status).toBe(404);
      const theirs = { repo: { ...REPO, name: 'theirs' }, targetBranch: 'main' };
      await ok(s, 'createQueue', theirs, 'token-b');
      expect((await ok(s, 'getQueue', theirs, 'token-b')).enqueuedPullRequests).toEqual([]);
      expect((await ok(s, 'getQueue', Q, 'token-a')).enqueuedPullRequests).toHaveLength(1);

      const flaky = { repo: REPO, page_query: { page_size: 5 } };
      expect((await call(s, 'listQuarantinedTests', { ...flaky, org_url_slug: 'team-a' }, { token: 'token-b' })).status).toBe(404);
      // Flaky data is kept per organisation: team-b asking about team-a's repository sees its own (empty) data,
      // exactly what it sees for a repository nobody uses, so the answer reveals no owner (decisions "Round 3").
      const mine = await call(s, 'listQuarantinedTests', { ...flaky, org_url_slug: 'team-b' }, { token: 'token-b' });
      const unused = { ...flaky, repo: { ...REPO, name: 'nobody-uses-it' }, org_url_slug: 'team-b' };
      const nobody = await call(s, 'listQuarantinedTests', unused, { token: 'token-b' });
      expect([mine.status, mine.text]).toEqual([200, nobody.text]);
      const own = { ...flaky, repo: theirs.repo, org_url_slug: 'team-b' };
      expect((await call(s, 'listQuarantinedTests', own, { token: 'token-b' })).status).toBe(200);
    });
  });

  describe('flaky-test validation', () => {
    it('checks page_size bounds and the 7-day window', async () => {
      const s = await server();
      const base = { repo: REPO, org_url_slug: s.org };
      for (const size of [0, 101]) {
        const a = await call(s, 'listUnhealthyTests', { ...base, status: 'broken', page_query: { page_size: size } });
        expect(a.status).toBe(400);
        expect(a.text).toMatch(/^page_query\.page_size: /);
      }
      const start = Date.parse('2026-01-01T00:00:00Z');
      const window = (days: number) => ({
        ...base,
        page_query: { page_size: 10 },
        start_time: new Date(start).toISOString(),
        end_time: new Date(start + days * 86_400_000).toISOString(),
      });
      expect((await call(s, 'listFailingTests', window(7))).status).toBe(200);
      const wide = await call(s, 'listFailingTests', window(7.001));
      expect(wide.status).toBe(400);
      expect(wide.text).toBe('end_time: must be at most 7 days after start_time');
      expect((await call(s, 'listFailingTests', window(-1))).status).toBe(400);
      const page = (await ok(s, 'listFailingTests', window(1))).page;
      expect(page).toEqual({ total_rows: 0, total_pages: 0, next_page_token: '', prev_page_token: '', last_page_token: '', page_index: 0 });
    });
  });
}

const database = eachDatabase(persistenceSuite);

describe('compression', () => {
  /** getQueue over node:http, which (unlike fetch) shows the encoding and leaves the body as sent. */
  function rawGetQueue(s: TestServer, acceptEncoding: string): Promise<{ headers: Record<string, unknown>; body: Buffer }> {
    const url = new URL(`${s.url}/getQueue`);
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        url,
        { method: 'POST', headers: { 'x-api-token': s.token, 'content-type': 'application/json', 'accept-encoding': acceptEncoding } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify(Q));
    });
  }

  it('a long queue goes out gzipped to clients that accept gzip, as the same JSON, and changes with the queue', async () => {
    const s = await withPausedQueue();
    for (let n = 1; n <= 60; n++) await ok(s, 'submitPullRequest', { ...Q, pr: { number: n } });
    const plain = await rawGetQueue(s, 'identity');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers.vary).toBe('accept-encoding');
    expect(plain.body.length).toBeGreaterThan(16 * 1024);
    const gz = await rawGetQueue(s, 'gzip, deflate');
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gz.body.length).toBeLessThan(plain.body.length / 4);
    expect(gunzipSync(gz.body)).toEqual(plain.body);
    expect((await rawGetQueue(s, 'gzip;q=0, deflate')).headers['content-encoding']).toBeUndefined();

    await ok(s, 'submitPullRequest', { ...Q, pr: { number: 61 } });
    const after = JSON.parse(gunzipSync((await rawGetQueue(s, 'gzip')).body).toString('utf8'));
    expect(after.enqueuedPullRequests).toHaveLength(61);
    // fetch (what the CLI and the Action use) asks for gzip and decodes it.
    expect((await ok(s, 'getQueue', Q)).enqueuedPullRequests).toHaveLength(61);
  });

  it('a short answer is sent as it is', async () => {
    const s = await withQueue();
    const small = await rawGetQueue(s, 'gzip');
    expect(small.headers['content-encoding']).toBeUndefined();
    expect(JSON.parse(small.body.toString('utf8')).enqueuedPullRequests).toEqual([]);
  });
});

describe('HTTP edges', () => {
  it('405 with Allow for a known path with the wrong method; 404 for an unknown path', async () => {
    const s = await server();
    let res = await fetch(`${s.url}/getQueue`, { headers: { 'x-api-token': s.token } });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    res = await fetch(`${s.url}/getMergeQueueMetrics`, { method: 'POST', headers: { 'x-api-token': s.token } });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    expect(res.headers.get('x-railyard-error-code')).toBe('method_not_allowed');
    res = await fetch(`${s.url}/noSuchOperation`, { method: 'POST' });
    expect(res.status).toBe(404);
    expect(res.headers.get('x-railyard-error-code')).toBe('unknown_endpoint');
    expect(await res.text()).toBe('no such endpoint: POST /v1/noSuchOperation');
  });

  it('every error answer names its stable code in x-railyard-error-code, beside the status and the one-line text', async () => {
    const s = await withQueue();
    const answers = {
      invalid_request: await call(s, 'getQueue', { repo: REPO }),
      unauthorized: await call(s, 'getQueue', Q, { token: 'wrong' }),
      not_found: await call(s, 'getQueue', { ...Q, targetBranch: 'nope' }),
      conflict: await call(s, 'createQueue', Q),
    };
    const seen = Object.entries(answers).map(([, a]) => [a.status, a.headers.get('x-railyard-error-code'), a.headers.get('content-type')]);
    expect(seen).toEqual([
      [400, 'invalid_request', 'text/plain; charset=utf-8'],
      [401, 'unauthorized', 'text/plain; charset=utf-8'],
      [404, 'not_found', 'text/plain; charset=utf-8'],
      [409, 'conflict', 'text/plain; charset=utf-8'],
    ]);
    expect(answers.invalid_request.text).toBe('targetBranch: required');
  });

  it('400 for invalid JSON; JSON without a JSON Content-Type is still read; unknown fields are ignored', async () => {
    const s = await withQueue();
    const bad = await call(s, 'getQueue', '{"repo": ');
    expect(bad.status).toBe(400);
    expect(bad.text).toMatch(/^body: invalid JSON/);
    const res = await fetch(`${s.url}/getQueue`, {
      method: 'POST',
      headers: { 'x-api-token': s.token, 'content-type': 'application/x-www-form-urlencoded' },
      body: JSON.stringify({ ...Q, someday: 'maybe' }),
    });
    expect(res.status).toBe(200);
    const none = await fetch(`${s.url}/getQueue`, {
      method: 'POST',
      headers: { 'x-api-token': s.token },
      body: new Blob([JSON.stringify(Q)]), // a Blob without a type: no Content-Type header
    });
    expect(none.status).toBe(200);
  });

  it('metrics: 400 for repo without repoHost, 404 for a repository without queues, Prometheus text otherwise', async () => {
    const s = await withQueue();
    await ok(s, 'submitPullRequest', { ...Q, pr: { number: 1 } });
    const noHost = await call(s, 'getMergeQueueMetrics', { repo: 'acme/web' });
    expect(noHost.status).toBe(400);
    expect(noHost.text).toBe('repoHost: required when repo is given');
    expect((await call(s, 'getMergeQueueMetrics', { repo: 'acme/other', repoHost: 'github.com' })).status).toBe(404);
    const text = (await call(s, 'getMergeQueueMetrics', { repo: 'acme/web', repoHost: 'github.com' })).text;
    expect(text).toContain('mq_depth_current{repo="acme/web",branch="main",queue_type="main"} 1');
  });

  it('413 for a body of 20 MiB + 1 byte; 20 MiB − 1 KiB of impacted targets passes', async () => {
    const s = await withQueue();
    const sha = sandboxHeadSha(REPO, 1);
    const bodyOfSize = (size: number) => {
      const head = JSON.stringify({ ...Q, pr: { number: 1, sha }, impactedTargets: [] }).slice(0, -3);
      const target = `"//services/${'x'.repeat(88)}"`; // 100 bytes
      const parts: string[] = [];
      const count = Math.floor((size - head.length - 1024) / (target.length + 1));
      for (let i = 0; i < count; i++) parts.push(target);
      const withoutPad = `${head}[${parts.join(',')},""]}`.length;
      const body = `${head}[${parts.join(',')},"${'y'.repeat(size - withoutPad)}"]}`;
      expect(Buffer.byteLength(body)).toBe(size);
      return body;
    };
    const big = await call(s, 'setImpactedTargets', bodyOfSize(BODY_LIMIT_BYTES + 1));
    expect(big.status).toBe(413);
    expect(big.text).toBe('request body is larger than 20 MiB (20971520 bytes)');
    expect(big.headers.get('x-railyard-error-code')).toBe('payload_too_large');
    const fits = await call(s, 'setImpactedTargets', bodyOfSize(BODY_LIMIT_BYTES - 1024));
    expect(fits.status, fits.text).toBe(200);
  });

  it('413 from Content-Length before the body is read', async () => {
    const s = await withQueue();
    const { hostname, port } = new URL(s.url);
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), hostname, () => {
        socket.write(
          `POST /v1/setImpactedTargets HTTP/1.1\r\nHost: x\r\nx-api-token: ${s.token}\r\n` +
            `Content-Type: application/json\r\nContent-Length: ${BODY_LIMIT_BYTES + 1}\r\n\r\n{"repo":`,
        );
      });
      let data = '';
      socket.on('data', (chunk) => {
        data += chunk.toString();
        if (data.includes('\r\n\r\n')) {
          socket.destroy();
          resolve(data);
        }
      });
      socket.on('error', reject);
    });
    expect(reply).toMatch(/^HTTP\/1\.1 413 /);
  });

  it('413 while streaming a chunked body past 20 MiB', async () => {
    const s = await withQueue();
    const { hostname, port } = new URL(s.url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        { host: hostname, port, method: 'POST', path: '/v1/setImpactedTargets', headers: { 'x-api-token': s.token, 'content-type': 'application/json' } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', (error) => (req.writableEnded ? undefined : reject(error)));
      const chunk = Buffer.alloc(1024 * 1024, 0x20);
      let sent = 0;
      const pump = () => {
        while (sent < 22) {
          sent++;
          if (!req.write(chunk)) return req.once('drain', pump);
        }
        req.end();
      };
      pump();
    });
    expect(status).toBe(413);
  });
});
