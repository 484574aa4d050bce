import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { routes, type OperationName } from '../../src/contract/index.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { call, ok, ORG, Q, REPO, requiredPaths, seedValidRequests, shapeMismatches, SHA1, validRequests, without } from './helpers.js';

/** Operations whose valid request answers 404 until their data exists (no test runs, no tests yet). */
const notFoundUntilData = new Set<OperationName>([
  'getMergeQueueTestingDetails',
  'getCheckRunLog',
  'getTestDetails',
  'getTestFailureHistory',
  'linkTicketToTestCase',
  'setTestQuarantine',
  'testWebhook',
  'disableWebhook',
  'enableWebhook',
  'deleteWebhook',
  'rotateWebhookSecret',
  'listWebhookDeliveries',
  'replayWebhookDelivery',
]);

let server: TestServer;

beforeAll(async () => {
  // Runs never finish here: the shapes below are those of PRs still in the queue, however slow the machine.
  server = await startTestServer({ sandbox: { testSeconds: 3600 } });
  await seedValidRequests(server);
});
afterAll(async () => {
  await server.close();
});

const ops = Object.keys(routes) as OperationName[];

describe('every route of the contract table', () => {
  it('has a valid request in this test', () => {
    expect(Object.keys(validRequests).sort()).toEqual([...ops].sort());
  });

  for (const op of ops) {
    const def = routes[op];

    it(`${op}: answers a valid request with exactly the contract's shape`, async () => {
      const a = await call(server, op, validRequests[op]);
      if (notFoundUntilData.has(op)) {
        expect(a.status, a.text).toBe(404);
        expect(a.headers.get('content-type')).toBe('text/plain; charset=utf-8');
        return;
      }
      expect(a.status, a.text).toBe(200);
      if (def.response === 'text') {
        expect(a.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
        expect(a.text).toMatch(/^# HELP /m);
      } else {
        expect(a.headers.get('content-type')).toMatch(/^application\/json/);
        expect(shapeMismatches(def.response as z.ZodType, a.json)).toEqual([]);
      }
    });

    if (def.auth) {
      it(`${op}: 401 without a token and with a wrong token`, async () => {
        for (const token of [null, 'wrong-token']) {
          const a = await call(server, op, validRequests[op], { token });
          expect(a.status).toBe(401);
          expect(a.headers.get('content-type')).toBe('text/plain; charset=utf-8');
          expect(a.text).toMatch(/^x-api-token: /);
          expect(a.text).not.toContain('\n');
        }
      });
    } else {
      it(`${op}: needs no token`, async () => {
        expect((await call(server, op, validRequests[op], { token: null })).status).toBe(200);
      });
    }

    const required = def.request ? requiredPaths(def.request) : [];
    if (required.length) {
      it(`${op}: 400 naming each missing required field (${required.join(', ')})`, async () => {
        for (const path of required) {
          const a = await call(server, op, without(validRequests[op], path));
          expect(a.status, `${path}: ${a.text}`).toBe(400);
          expect(a.text).toBe(`${path}: required`);
        }
      });
    }
  }
});

describe('shapes in detail', () => {
  it('getQueue carries every field, and its pull requests carry every required item field', async () => {
    const q = await ok(server, 'getQueue', Q);
    // Every field but those shown only in a state: `frozen` (while frozen), `testingTimeoutMinutesNow` (with "auto").
    const onlySometimes = new Set(['frozen', 'testingTimeoutMinutesNow']);
    expect(Object.keys(q).sort()).toEqual(
      Object.keys((routes.getQueue.response as z.ZodObject).shape)
        .filter((k) => !onlySometimes.has(k))
        .sort(),
    );
    expect(q.enqueuedPullRequests.length).toBeGreaterThan(0);
  });

  it('getSubmittedPullRequest reports readiness from the sandbox forge', async () => {
    const pr = await ok(server, 'getSubmittedPullRequest', { ...Q, pr: { number: 1 } });
    expect(pr).toMatchObject({
      prNumber: 1,
      prTitle: 'Sandbox PR #1',
      prAuthor: 'sandbox',
      prBaseBranch: 'main',
      prSha: SHA1,
      isCurrentlySubmittedToQueue: true,
      forceEnqueued: false,
      readiness: {
        doesBaseBranchMatch: true,
        gitHubMergeability: 'mergeable',
        requiresImpactedTargets: false,
      },
    });
  });

  it("listQueues (extension) lists the token's queues with their figures, marked as an extension in the OpenAPI document", async () => {
    const other = await call(server, 'listQueues', {}, { token: 'nobody' });
    expect(other.status).toBe(401);
    const answer = await ok(server, 'listQueues', {});
    expect(answer.org).toBe(ORG);
    const main = answer.queues.find((q: { targetBranch: string }) => q.targetBranch === 'main');
    expect(main).toMatchObject({
      repo: REPO,
      state: 'running',
      mode: 'single',
      failureRateLastDay: null,
      medianSecondsInQueueLastDay: null,
    });
    expect(main.depth + main.notReady).toBe((await ok(server, 'getQueue', Q)).enqueuedPullRequests.length);
    const branches = answer.queues.map((q: { targetBranch: string }) => q.targetBranch);
    expect(branches).toEqual([...branches].sort());
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as {
      paths: Record<string, { post: Record<string, unknown> }>;
    };
    expect(doc.paths['/v1/listQueues'].post['x-railyard-extension']).toBe(true);
  });

  it('serves the OpenAPI document of the same table without a token', async () => {
    const res = await fetch(`${server.url}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { paths: Record<string, unknown> };
    for (const def of Object.values(routes)) expect(doc.paths).toHaveProperty([`/v1${def.path}`]);
  });
});
