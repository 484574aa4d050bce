// Scoped tokens on /v2: every operation of the v2 route table that needs a permission answers 403
// INSUFFICIENT_PERMISSIONS in Trunk's envelope to a key without it (before its input is read) and
// changes nothing; the key that has it gets past the check. The same tokens and permissions as /v1.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_PERMISSIONS, type Permission } from '../../src/contract/permissions.js';
import { v2Routes, type V2Permission } from '../../src/contract/v2/routes.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { v2 } from '../support/v2.js';

const tokenWith = (permissions: Permission[]) => `v2tok-${permissions.join('-') || 'none'}`;
const sets: Permission[][] = [[], ...ALL_PERMISSIONS.map((p) => [p])];
const WEB = encodeURIComponent('https://github.com/acme/web');
const guarded = Object.values(v2Routes).filter((def) => def.permission !== null);

let server: TestServer;
let queueId: string;

/** What a refused call must leave as it was: the queues and their pull requests, as v2 lists them. */
async function state(): Promise<string> {
  const queues = await v2(server, 'GET', '/merge-queues?limit=100');
  const prs = await v2(server, 'GET', `/merge-queues/${queueId}/pull-requests?limit=100`);
  return JSON.stringify([queues.body, prs.body]);
}

beforeAll(async () => {
  server = await startTestServer({
    sandbox: { testSeconds: 3600 },
    tokens: { 'test-token': 'local', ...Object.fromEntries(sets.map((s) => [tokenWith(s), 'local'])) },
    permissions: Object.fromEntries(sets.map((s) => [tokenWith(s), s])),
  });
  const repo = await v2(server, 'GET', `/repositories?providerUrl=${WEB}`);
  const created = await v2(server, 'POST', '/merge-queues', {
    repositoryId: repo.body.data[0].id,
    targetBranch: 'main',
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  queueId = created.body.id;
  const submitted = await v2(server, 'POST', `/merge-queues/${queueId}/pull-requests`, { number: 7 });
  expect(submitted.status, JSON.stringify(submitted.body)).toBe(201);
});
afterAll(async () => {
  await server.close();
});

describe('v2: scoped tokens', () => {
  it('the route table guards the writes: queue settings, submit, restart, dequeue, reprioritize, impacted targets', () => {
    expect(guarded.map((d) => `${d.method} ${d.path} ${d.permission}`).sort()).toEqual(
      expect.arrayContaining([
        'POST /merge-queues settings',
        'DELETE /merge-queues/:id settings',
        'POST /merge-queues/:id/pull-requests merge',
        'POST /pull-requests/:id/dequeue merge',
        'PUT /impacted-targets merge',
      ]),
    );
  });

  for (const def of guarded) {
    it(`${def.method} ${def.path}: 403 INSUFFICIENT_PERMISSIONS without "${def.permission}", nothing changed`, async () => {
      const before = await state();
      const path = def.path.replace(':id', queueId);
      for (const permissions of sets.filter((s) => !s.includes(def.permission as Permission))) {
        const answer = await v2(server, def.method, path, {}, tokenWith(permissions));
        expect(
          [answer.status, answer.body?.error?.code],
          `${tokenWith(permissions)}: ${JSON.stringify(answer.body)}`,
        ).toEqual([403, 'INSUFFICIENT_PERMISSIONS']);
        expect(answer.body.error.message).toContain(`"${def.permission as V2Permission}"`);
      }
      expect(await state()).toBe(before);
      // The key that has it gets past the check (to the input's own answer).
      const allowed = await v2(server, def.method, path, {}, tokenWith([def.permission as Permission]));
      expect(allowed.body?.error?.code).not.toBe('INSUFFICIENT_PERMISSIONS');
    });
  }

  it('a read-only key reads; a merge key submits but may not change the queue', async () => {
    expect((await v2(server, 'GET', `/merge-queues/${queueId}`, undefined, tokenWith([]))).status).toBe(200);
    const submitted = await v2(
      server,
      'POST',
      `/merge-queues/${queueId}/pull-requests`,
      { number: 8 },
      tokenWith(['merge']),
    );
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(201);
    const paused = await v2(
      server,
      'POST',
      `/merge-queues/${queueId}/pause`,
      undefined,
      tokenWith(['merge']),
    );
    expect([paused.status, paused.body.error.code]).toEqual([403, 'INSUFFICIENT_PERMISSIONS']);
    expect(
      (await v2(server, 'POST', `/merge-queues/${queueId}/pause`, undefined, tokenWith(['settings']))).status,
    ).toBe(200);
  });
});
