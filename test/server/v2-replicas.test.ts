// v2 ids across replicas (issue 39): two servers on one PostgreSQL database give a queue and a pull
// request the same ids, and each reads and changes what the other made through them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serversPerTest } from '../support/hooks.js';
import {
  sharedPostgres,
  skipWithoutPostgres,
  startPostgres,
  type PostgresCluster,
} from '../support/postgres.js';
import { v2 } from '../support/v2.js';

const startServer = serversPerTest();

describe.skipIf(skipWithoutPostgres())('v2 on two replicas', () => {
  let cluster: PostgresCluster | undefined;
  beforeAll(async () => {
    cluster = sharedPostgres() ?? (await startPostgres());
  });
  afterAll(async () => {
    await cluster?.close();
  });

  it('one id for a queue and a pull request on every replica', async () => {
    const databaseUrl = await cluster!.createDatabase(undefined, { migrated: true });
    const a = await startServer({ databaseUrl });
    const b = await startServer({ databaseUrl });
    const url = encodeURIComponent('https://github.com/acme/web');
    const repoA = (await v2(a, 'GET', `/repositories?providerUrl=${url}`)).body.data[0].id;
    expect((await v2(b, 'GET', `/repositories?providerUrl=${url}`)).body.data[0].id).toBe(repoA);
    const q = (await v2(a, 'POST', '/merge-queues', { repositoryId: repoA, targetBranch: 'main' })).body
      .id as string;
    await v2(a, 'POST', `/merge-queues/${q}/pause`);
    const pr = (await v2(a, 'POST', `/merge-queues/${q}/pull-requests`, { number: 8 })).body;
    // Replica b finds both by the ids a gave, and its write is what a reads next.
    expect((await v2(b, 'GET', `/merge-queues/${q}`)).body).toMatchObject({ id: q, state: 'paused' });
    const onB = await v2(b, 'POST', `/pull-requests/${pr.id}/reprioritize`, { priorityName: 'urgent' });
    expect([onB.status, onB.body.id, onB.body.queueEntry.mergeQueueId]).toEqual([200, pr.id, q]);
    expect((await v2(a, 'GET', `/pull-requests/${pr.id}`)).body.queueEntry.priorityValue).toBe(0);
  });
});
