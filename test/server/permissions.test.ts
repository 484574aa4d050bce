// Scoped tokens over real HTTP: every write of the route table refuses a token without its
// permission (403, INSUFFICIENT_PERMISSIONS, nothing changed), reads stay open to every token,
// and a submission's own fields (priority, noBatch) need their permissions.
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_PERMISSIONS, routes, type OperationName, type Permission } from '../../src/contract/index.js';
import { SQLITE_FILE } from '../../src/store/index.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { call, ok, Q, REPO, seedValidRequests, validRequests } from './helpers.js';

const ops = Object.keys(routes) as OperationName[];

/**
 * The operations any token may call: the reads, and (as on Trunk, whose key permissions scope the
 * merge queue only) the flaky-test writes. A new operation that changes a merge queue must name a
 * permission instead.
 */
const OPEN = new Set<OperationName>([
  'uploadTestResults',
  'linkTicketToTestCase',
  'updateRepositorySettings',
  'setTestQuarantine',
  'getSubmittedPullRequest',
  'getSubmittedPullRequests',
  'listPullRequests',
  'getMergeQueueTestingDetails',
  'listMergeQueueTestingResults',
  'getQueue',
  'getMergeQueueMetrics',
  'getPullRequestHistory',
  'listQueues',
  'getCheckRunLog',
  'getMergeQueueDoctor',
  'listFailingTests',
  'listUnhealthyTests',
  'getTestDetails',
  'listQuarantinedTests',
  'getRepositorySettings',
  'checkQuarantine',
  'getTestFailureHistory',
  'listWebhooks',
  'listWebhookDeliveries',
  'status',
]);

let server: TestServer;
/** Every token of the server: the full one, one with no permission, and one per single permission. */
const tokenWith = (permissions: Permission[]) => `tok-${permissions.join('-') || 'none'}`;

beforeAll(async () => {
  const sets: Permission[][] = [[], ...ALL_PERMISSIONS.map((p) => [p]), ['merge', 'priority']];
  server = await startTestServer({
    sandbox: { testSeconds: 3600 },
    tokens: { 'test-token': 'local', ...Object.fromEntries(sets.map((s) => [tokenWith(s), 'local'])) },
    permissions: Object.fromEntries(sets.map((s) => [tokenWith(s), s])),
  });
  await seedValidRequests(server);
});
afterAll(async () => {
  await server.close();
});

/** Every row of the database but the tokens' last use: what a refused request must leave as it was. */
function dump(): string {
  const db = new Database(join(server.dataDir, SQLITE_FILE), { readonly: true });
  try {
    const tables = db
      .prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'api_tokens' ORDER BY name",
      )
      .pluck()
      .all() as string[];
    return JSON.stringify(tables.map((t) => [t, db.prepare(`SELECT * FROM "${t}"`).raw().all()]));
  } finally {
    db.close();
  }
}

/** What the API shows of both queues. */
async function queues(): Promise<unknown> {
  return [
    await ok(server, 'getQueue', Q),
    await ok(server, 'getQueue', { repo: REPO, targetBranch: 'scratch' }),
  ];
}

describe('the route table', () => {
  it('names a permission for every operation not known to be open to every token, and for every merge-queue or webhook write', () => {
    for (const op of ops) {
      const def = routes[op];
      if (OPEN.has(op)) expect(def.permission, op).toBeNull();
      else expect(def.permission, `${op} changes something: it needs a permission`).not.toBeNull();
      if (!def.retrySafe && def.tag !== 'flaky-tests') expect(def.permission, op).not.toBeNull();
    }
  });

  it("the OpenAPI document names each operation's permission and its 403", async () => {
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as {
      paths: Record<
        string,
        Record<string, { 'x-railyard-permission': string | null; responses: Record<string, unknown> }>
      >;
    };
    const operation = doc.paths['/v1/createQueue'].post;
    expect(operation['x-railyard-permission']).toBe('settings');
    expect(operation.responses['403']).toBeDefined();
    expect(doc.paths['/v1/getQueue'].post['x-railyard-permission']).toBeNull();
    expect(doc.paths['/v1/getQueue'].post.responses['403']).toBeUndefined();
  });
});

describe('a token without the permission', () => {
  for (const op of ops) {
    const needs = routes[op].permission;
    if (needs === null) {
      it(`${op}: a token without permissions may call it`, async () => {
        const a = await call(server, op, validRequests[op], { token: tokenWith([]) });
        expect(a.status, a.text).not.toBe(403);
        expect(a.status, a.text).toBeLessThan(500);
      });
      continue;
    }
    it(`${op}: 403 INSUFFICIENT_PERMISSIONS for every token without "${needs}", nothing changed`, async () => {
      const before = dump();
      const shown = await queues();
      const others = [[], ...ALL_PERMISSIONS.filter((p) => p !== needs).map((p) => [p])] as Permission[][];
      for (const permissions of others) {
        const a = await call(server, op, validRequests[op], { token: tokenWith(permissions) });
        expect(a.status, `${tokenWith(permissions)}: ${a.text}`).toBe(403);
        expect(a.headers.get('x-railyard-error-code')).toBe('insufficient_permissions');
        expect(a.headers.get('content-type')).toBe('text/plain; charset=utf-8');
        expect(a.text).toBe(
          `INSUFFICIENT_PERMISSIONS: ${op} needs the "${needs}" permission, which this token does not have (railyard token create --permission ${needs})`,
        );
      }
      expect(dump()).toBe(before);
      expect(await queues()).toEqual(shown);
    });
  }
});

describe('what a submission asks for', () => {
  const submit = (token: string, body: Record<string, unknown>) =>
    call(server, 'submitPullRequest', { ...Q, ...body }, { token });
  const entry = async (n: number) => {
    const q = (await ok(server, 'getQueue', Q)) as {
      enqueuedPullRequests: { prNumber: number; priorityValue: number; noBatch: boolean }[];
    };
    return q.enqueuedPullRequests.find((p) => p.prNumber === n);
  };

  it('noBatch: true needs skip_batching; a priority other than the default needs priority; the default does not', async () => {
    const merge = tokenWith(['merge']);
    const noBatch = await submit(merge, { pr: { number: 5 }, noBatch: true });
    expect(noBatch.status).toBe(403);
    expect(noBatch.text).toContain('noBatch: true needs the "skip_batching" permission');
    const high = await submit(merge, { pr: { number: 5 }, priority: 'high' });
    expect(high.status).toBe(403);
    expect(high.text).toContain('a priority other than the default needs the "priority" permission');
    expect(await entry(5)).toBeUndefined();
    // What a tool that always sends the default priority does: merge is enough.
    expect((await submit(merge, { pr: { number: 5 }, priority: 'medium', noBatch: false })).status).toBe(200);
    expect(await entry(5)).toMatchObject({ priorityValue: 100, noBatch: false });
    expect((await submit(tokenWith(['merge', 'priority']), { pr: { number: 6 }, priority: 10 })).status).toBe(
      200,
    );
    expect(await entry(6)).toMatchObject({ priorityValue: 10 });
  });

  it("changing a queued PR's priority needs priority, in either direction; resubmitting it unchanged does not", async () => {
    const merge = tokenWith(['merge']);
    expect((await submit(server.token, { pr: { number: 7 }, priority: 'urgent' })).status).toBe(200);
    const lower = await submit(merge, { pr: { number: 7 }, priority: 'medium' });
    expect(lower.status).toBe(403);
    expect(lower.text).toContain(`changing a queued pull request's priority needs the "priority" permission`);
    expect(await entry(7)).toMatchObject({ priorityValue: 0 });
    expect((await submit(merge, { pr: { number: 7 }, priority: 0 })).status).toBe(200);
    expect((await submit(merge, { pr: { number: 7 } })).status).toBe(200);
    expect(await entry(7)).toMatchObject({ priorityValue: 0 });
  });

  it('listQueues tells the token what it may change (the dashboard hides the rest)', async () => {
    expect((await ok(server, 'listQueues', {}, tokenWith([]))).permissions).toEqual([]);
    expect((await ok(server, 'listQueues', {}, tokenWith(['merge', 'priority']))).permissions).toEqual([
      'merge',
      'priority',
    ]);
    expect((await ok(server, 'listQueues', {})).permissions).toEqual(ALL_PERMISSIONS);
  });
});
