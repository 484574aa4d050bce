// The server's queues with stored state, over real HTTP, once on SQLite and once on PostgreSQL: the
// documented defaults, the flaky-aware settings and their bounds, updates, mode switches and deletion.
// Pull requests and organisations: behaviour-prs.test.ts; compression and HTTP edges: behaviour-http.test.ts.
import { describe, expect, it } from 'vitest';
import { eachDatabase } from '../support/hooks.js';
import { behaviourServers } from './behaviour-helpers.js';
import { call, ok, Q, REPO } from './helpers.js';

const { server, withQueue } = behaviourServers(() => database());

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
      await ok(s, 'createQueue', {
        repo: { ...REPO, name: 'api' },
        targetBranch: 'main',
        mode: 'PARALLEL',
        concurrency: '3',
      });
      const other = await ok(s, 'getQueue', { repo: { ...REPO, name: 'api' }, targetBranch: 'main' });
      expect(other).toMatchObject({ mode: 'parallel', concurrency: 3, bisectionConcurrency: 3 });
    });

    it('keeps the flaky-aware settings (extensions) and refuses values out of range, naming the field', async () => {
      const s = await withQueue();
      const set = {
        flakyPolicy: 'IGNORE_QUARANTINED',
        flakyReportGraceSeconds: 30,
        flakyRetries: 2,
        probationThreshold: 0.25,
      };
      expect(await ok(s, 'updateQueue', { ...Q, ...set })).toMatchObject({
        ...set,
        flakyPolicy: 'ignore_quarantined',
      });
      expect(await ok(s, 'getQueue', Q)).toMatchObject({
        flakyPolicy: 'ignore_quarantined',
        flakyRetries: 2,
        probationThreshold: 0.25,
      });
      for (const [field, value] of [
        ['flakyRetries', 4],
        ['flakyPolicy', 'sometimes'],
        ['probationThreshold', 1.5],
        ['flakyReportGraceSeconds', -1],
      ] as const) {
        const bad = await call(s, 'updateQueue', { ...Q, [field]: value });
        expect([bad.status, bad.text.split(':')[0]]).toEqual([400, field]);
      }
      expect(await ok(s, 'updateQueue', { ...Q, probationThreshold: null })).toMatchObject({
        probationThreshold: null,
        flakyRetries: 2,
      });
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
      const props =
        doc.paths['/v1/createQueue'].post.requestBody.content['application/json'].schema.properties;
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
        expect(a.text, op).toBe(
          'no merge queue for branch "nope" in acme/web for the token\'s organisation "local"',
        );
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
      expect(settings).toMatchObject({
        state: 'draining',
        mergeMethod: 'merge_commit',
        testingTimeoutMinutes: 0,
        requiredStatuses: ['ci/test'],
      });
      expect(settings).not.toHaveProperty('enqueuedPullRequests');
      // Absent fields are unchanged; [] is ignored; deleteRequiredStatuses drops the override.
      expect(await ok(s, 'updateQueue', { ...Q, requiredStatuses: [] })).toMatchObject({
        state: 'draining',
        requiredStatuses: ['ci/test'],
      });
      expect(await ok(s, 'updateQueue', { ...Q, deleteRequiredStatuses: true })).toMatchObject({
        requiredStatuses: null,
      });
      const bad = await call(s, 'updateQueue', { ...Q, concurrency: 0 });
      expect(bad.status).toBe(400);
      expect(bad.text).toMatch(/^concurrency: /);
    });

    it('switches modes through switching_modes when the queue is not empty', async () => {
      const s = await withQueue();
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 1 } });
      expect(await ok(s, 'updateQueue', { ...Q, mode: 'parallel' })).toMatchObject({
        state: 'switching_modes',
        mode: 'single',
      });
      await ok(s, 'cancelPullRequest', { ...Q, pr: { number: 1 } });
      expect(await ok(s, 'getQueue', Q)).toMatchObject({ state: 'running', mode: 'parallel' });
    });

    it('deletes an empty queue, refuses a non-empty one (400) and 404s afterwards', async () => {
      const s = await withQueue();
      for (const n of [1, 2, 3]) await ok(s, 'submitPullRequest', { ...Q, pr: { number: n } });
      const busy = await call(s, 'deleteQueue', Q);
      expect(busy.status).toBe(400);
      expect(busy.text).toBe(
        'queue for main in acme/web is not empty: cancel or merge its 3 pull requests first',
      );
      for (const n of [1, 2, 3]) await ok(s, 'cancelPullRequest', { ...Q, pr: { number: n } });
      await ok(s, 'deleteQueue', Q);
      expect((await call(s, 'getQueue', Q)).status).toBe(404);
      expect((await call(s, 'deleteQueue', Q)).status).toBe(404);
      await ok(s, 'createQueue', Q); // the branch is free again
    });
  });
}

const database = eachDatabase(persistenceSuite);
