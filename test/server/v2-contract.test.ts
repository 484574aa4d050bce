// The v2 API against Trunk's published schemas (issue 39): every answer the real server gives in
// a scenario that calls every v2 operation — successes and errors — validates against the schema
// Trunk's openapi-v2.json names for it (test/fixtures/trunk/openapi-v2.json, ajv).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { v2Routes, type V2OperationId } from '../../src/contract/v2/routes.js';
import { serversPerTest } from '../support/hooks.js';
import type { TestServer } from '../support/server.js';
import { trunkSchemas, v2, type V2Answer } from '../support/v2.js';

const startServer = serversPerTest();
const schemas = trunkSchemas();

interface TrunkOperation {
  method: string;
  path: string;
  parameters?: { name: string; in: string; required: boolean }[];
  requestBody?: { content: Record<string, { schema: { $ref: string } }> };
  responses: Record<string, { content?: Record<string, { schema: { $ref: string } }> }>;
}

/** The operations of Trunk's description (test/fixtures/trunk/openapi-v2.json), by operationId. */
const TRUNK_OPERATIONS = (() => {
  const doc = JSON.parse(
    readFileSync(new URL('../fixtures/trunk/openapi-v2.json', import.meta.url), 'utf8'),
  ) as {
    paths: Record<string, Record<string, TrunkOperation & { operationId: string }>>;
  };
  const byId = new Map<string, TrunkOperation>();
  for (const [path, methods] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(methods)) byId.set(op.operationId, { ...op, method, path });
  return byId;
})();
const trunkOperation = (op: string) => TRUNK_OPERATIONS.get(op);
const schemaName = (ref: string | undefined) => ref?.replace('#/components/schemas/', '') ?? null;

/** Query keys Trunk's description names only in prose: `sort`/`direction` take their one value. */
const PROSE_QUERY = new Set(['sort', 'direction']);

describe("the v2 route table against Trunk's paths", () => {
  it('serves every operation of the description, each at its method and path, with its statuses, bodies and query parameters', () => {
    expect(new Set(Object.keys(v2Routes))).toEqual(new Set(TRUNK_OPERATIONS.keys()));
    const problems: string[] = [];
    for (const [id, def] of Object.entries(v2Routes)) {
      const trunk = trunkOperation(id);
      if (!trunk) continue;
      const ours = `${def.method} /v2${def.path.replace(/:(\w+)/g, '{$1}')}`;
      if (ours !== `${trunk.method.toUpperCase()} ${trunk.path}`)
        problems.push(`${id}: served at ${ours}, Trunk's is ${trunk.method.toUpperCase()} ${trunk.path}`);
      const success = Object.keys(trunk.responses).find((status) => status.startsWith('2'));
      if (String(def.status) !== success) problems.push(`${id}: answers ${def.status}, Trunk's ${success}`);
      const content = success ? trunk.responses[success]!.content : undefined;
      const answer = schemaName(content ? Object.values(content)[0]?.schema.$ref : undefined);
      if (def.response !== answer) problems.push(`${id}: answers ${def.response}, Trunk's ${answer}`);
      if (trunk.requestBody && def.body === null) problems.push(`${id}: takes no body, Trunk's takes one`);
      const declared = (trunk.parameters ?? []).filter((p) => p.in === 'query');
      const accepted = new Set(
        def.query ? Object.keys((def.query as unknown as { shape: Record<string, unknown> }).shape) : [],
      );
      for (const p of declared)
        if (!accepted.has(p.name)) problems.push(`${id}: does not take Trunk's query parameter ${p.name}`);
      const names = new Set(declared.map((p) => p.name));
      for (const key of accepted)
        if (!names.has(key) && !PROSE_QUERY.has(key)) problems.push(`${id}: takes ${key}, not Trunk's`);
    }
    expect(problems).toEqual([]);
  });
});

interface Seen {
  op: V2OperationId;
  answer: V2Answer;
}

/** Polls until `check` holds (the engine moves on its own clock): never a fixed sleep. */
async function until(what: string, check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("v2 answers follow Trunk's schemas", () => {
  it('every operation, successes and errors', async () => {
    const s: TestServer = await startServer({ sandbox: { testSeconds: 0.2 } });
    const seen: Seen[] = [];
    const call = async (op: V2OperationId, path: string, body?: unknown, token?: string | null) => {
      const answer = await v2(s, v2Routes[op].method, path, body, token);
      seen.push({ op, answer });
      return answer;
    };

    const repo = await call(
      'repositories.resolveByProviderUrl',
      `/repositories?providerUrl=${encodeURIComponent('https://github.com/acme/web')}`,
    );
    const repositoryId = repo.body.data[0].id as string;
    await call('repositories.get', `/repositories/${repositoryId}`);
    const created = await call('mergeQueues.create', '/merge-queues', {
      repositoryId,
      targetBranch: 'main',
      mode: 'queue',
      concurrency: 2,
    });
    expect(created.status).toBe(201);
    const q = created.body.id as string;
    await call('mergeQueues.create', '/merge-queues', { repositoryId, targetBranch: 'main' }); // 409
    await call(
      'mergeQueues.list',
      `/merge-queues?repositoryId=${repositoryId}&targetBranch=main&includeTotal=true`,
    );
    await call('mergeQueues.get', `/merge-queues/${q}`);
    await call('mergeQueues.updateConfig', `/merge-queues/${q}/config`, {
      allowBatching: false,
      requiredStatuses: ['build', 'test'],
    });
    await call('mergeQueues.updateConfig', `/merge-queues/${q}/config`, { batch: true }); // 400
    await call('mergeQueues.pause', `/merge-queues/${q}/pause`);
    const pr1 = await call('mergeQueues.submitPullRequest', `/merge-queues/${q}/pull-requests`, {
      number: 1,
    });
    const pr2 = await call('mergeQueues.submitPullRequest', `/merge-queues/${q}/pull-requests`, {
      number: 2,
      priorityName: 'high',
    });
    await call('mergeQueues.submitPullRequest', `/merge-queues/${q}/pull-requests`, { number: 1 }); // 409
    await call('mergeQueues.listPullRequests', `/merge-queues/${q}/pull-requests?limit=1&includeTotal=true`);
    await call('pullRequests.resolveByCoordinates', `/pull-requests?repositoryId=${repositoryId}&number=2,1`);
    await call(
      'pullRequests.resolveByCoordinates',
      `/pull-requests?repositoryId=${repositoryId}&branch=sandbox%2Fpr-1`,
    );
    await call('pullRequests.get', `/pull-requests/${pr1.body.id}`);
    await call('pullRequests.reprioritize', `/pull-requests/${pr2.body.id}/reprioritize`, {
      priorityValue: 0,
    });
    await call('pullRequests.updateQueueEntry', `/pull-requests/${pr2.body.id}/queue-entry`, {
      allowBatching: false,
    });
    await call('pullRequests.restartTests', `/pull-requests/${pr2.body.id}/restart-tests`); // 422: pending
    await call('mergeQueues.order', `/merge-queues/${q}/order`);
    await call('mergeQueues.graph', `/merge-queues/${q}/graph?includeImpactedTargets=true`);
    await call('pullRequests.dequeue', `/pull-requests/${pr2.body.id}/dequeue`);
    await call('pullRequests.dequeue', `/pull-requests/${pr2.body.id}/dequeue`); // 409
    await call('impactedTargets.upload', '/impacted-targets', {
      repositoryId,
      targetBranch: 'main',
      sha: pr1.body.sha,
      number: 1,
      impactedTargets: ['//web'],
    });
    await call('mergeQueues.resume', `/merge-queues/${q}/resume`);
    await until(
      '#1 merged',
      async () => (await v2(s, 'GET', `/pull-requests/${pr1.body.id}`)).body.queueEntry.state === 'merged',
    );
    const runs = await call('mergeQueues.listVerificationRuns', `/merge-queues/${q}/verification-runs`);
    expect(runs.body.data.length).toBeGreaterThan(0);
    await call('mergeQueueVerificationRuns.get', `/merge-queue-verification-runs/${runs.body.data[0].id}`);
    await call('mergeQueueVerificationRuns.get', '/merge-queue-verification-runs/nope'); // 404
    await call('pullRequests.listVerificationRuns', `/pull-requests/${pr1.body.id}/verification-runs`);
    await call(
      'mergeQueues.listTestingResults',
      `/merge-queues/${q}/testing-results?since=${new Date(Date.now() - 3_600_000).toISOString()}`,
    );
    await call(
      'pullRequests.queueEntryHistory',
      `/pull-requests/${pr1.body.id}/queue-entry-history?direction=newest`,
    );
    await call(
      'pullRequests.queueEntryHistoryBatch',
      `/queue-entry-history?pullRequestIds=${pr1.body.id},${pr2.body.id}`,
    );
    await call('mergeQueues.organizationMetrics', `/merge-queues/metrics?repositoryId=${repositoryId}`);
    await call('mergeQueues.metrics', `/merge-queues/${q}/metrics`);
    await call('mergeQueues.switchModes', `/merge-queues/${q}/switch-modes`, { mode: 'graph' });
    await call('mergeQueues.drain', `/merge-queues/${q}/drain`);
    await call('mergeQueues.get', `/merge-queues/${q}`, undefined, null); // 401
    await call('mergeQueues.get', '/merge-queues/unknown'); // 404
    await call('pullRequests.get', '/pull-requests/not-a-uuid'); // 400
    await until('the queue settled', async () => {
      const a = await v2(s, 'GET', `/merge-queues/${q}`);
      return a.body.mode === 'graph' || a.body.state !== 'switchingModes';
    });
    const deleted = await call('mergeQueues.delete', `/merge-queues/${q}`);
    expect(deleted.status).toBe(204);

    // Every operation of the table was called, and every answer is what Trunk's schemas say.
    expect(new Set(seen.map((x) => x.op))).toEqual(new Set(Object.keys(v2Routes)));
    const problems: string[] = [];
    for (const { op, answer } of seen) {
      const def = v2Routes[op];
      if (answer.status >= 400) {
        problems.push(
          ...schemas.validate('ErrorResponse', answer.body).map((p) => `${op} ${answer.status}: ${p}`),
        );
        continue;
      }
      expect(answer.status, `${op}: ${JSON.stringify(answer.body)}`).toBe(def.status);
      if (def.response === null) expect(answer.body, op).toBeUndefined();
      else problems.push(...schemas.validate(def.response, answer.body).map((p) => `${op}: ${p}`));
      expect(answer.headers.get('x-request-id'), op).toBeTruthy();
    }
    expect(problems).toEqual([]);
    // Every status met is one Trunk's description declares for that operation.
    const undeclared = seen
      .filter(({ op, answer }) => !(String(answer.status) in (trunkOperation(op)?.responses ?? {})))
      .map(({ op, answer }) => `${op} ${answer.status}`);
    expect(undeclared).toEqual([]);
    // The errors met on the way carry Trunk's codes.
    const codes = seen
      .filter((x) => x.answer.status >= 400)
      .map((x) => `${x.answer.status} ${x.answer.body.error.code}`);
    expect(codes).toEqual([
      '409 QUEUE_ALREADY_EXISTS',
      '400 VALIDATION_FAILED',
      '409 PR_ALREADY_ENQUEUED',
      '422 PR_TESTS_NOT_RESTARTABLE',
      '409 PR_NOT_IN_ACTIVE_STATE',
      '404 VERIFICATION_RUN_NOT_FOUND',
      '401 AUTHENTICATION_REQUIRED',
      '404 MERGE_QUEUE_NOT_FOUND',
      '400 VALIDATION_FAILED',
    ]);
  });
});
