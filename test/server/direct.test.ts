// `direct` submissions over real HTTP: the `direct` permission guards them on /v1 and /v2 (403
// naming it, nothing submitted), and a direct PR is marked so in its answers and its history,
// and through `railyard mq submit --direct`.
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedEnv, railyard } from '../support/cli.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { v2 } from '../support/v2.js';
import { call, Q } from './helpers.js';

const MERGE_ONLY = 'merge-only-token';
const WEB = encodeURIComponent('https://github.com/acme/web');
let server: TestServer;
let env: Record<string, string>;

beforeAll(async () => {
  server = await startTestServer({
    sandbox: { testSeconds: 3600 },
    tokens: { 'test-token': 'local', [MERGE_ONLY]: 'local' },
    permissions: { [MERGE_ONLY]: ['merge', 'priority', 'skip_batching'] },
  });
  env = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: server.token });
  expect((await call(server, 'createQueue', Q)).status).toBe(200);
});
afterAll(async () => {
  await server?.close();
  if (env) await rm(env.HOME, { recursive: true, force: true });
});

describe('direct submissions', () => {
  it('v1: 403 naming the permission for a token without `direct`; with it the PR is marked direct, in its history too', async () => {
    const refused = await call(
      server,
      'submitPullRequest',
      { ...Q, pr: { number: 1 }, direct: true },
      { token: MERGE_ONLY },
    );
    expect(refused.status).toBe(403);
    expect(refused.text).toContain(
      'INSUFFICIENT_PERMISSIONS: direct: true needs the "direct" permission, which this token does not have (railyard token create --permission direct)',
    );
    expect((await call(server, 'getSubmittedPullRequest', { ...Q, pr: { number: 1 } })).status).toBe(404);
    // direct: false is what a submission does anyway.
    expect(
      (
        await call(
          server,
          'submitPullRequest',
          { ...Q, pr: { number: 2 }, direct: false },
          { token: MERGE_ONLY },
        )
      ).status,
    ).toBe(200);

    expect((await call(server, 'submitPullRequest', { ...Q, pr: { number: 1 }, direct: true })).status).toBe(
      200,
    );
    const pr = (await call(server, 'getSubmittedPullRequest', { ...Q, pr: { number: 1 } })).json;
    expect(pr).toMatchObject({ prNumber: 1, direct: true });
    const other = (await call(server, 'getSubmittedPullRequest', { ...Q, pr: { number: 2 } })).json;
    expect(other.direct).toBeUndefined();
    const listed = (await call(server, 'getQueue', Q)).json.enqueuedPullRequests;
    expect(
      listed.map((p: { prNumber: number; direct?: boolean }) => [p.prNumber, p.direct ?? false]),
    ).toEqual([
      [2, false],
      [1, true],
    ]);
    const history = (await call(server, 'getPullRequestHistory', { ...Q, pr: { number: 1 } })).json;
    expect(history.transitions[0]).toMatchObject({
      state: 'not_ready',
      detail:
        "direct: submitted past the forge's pull-request requirements (mergeability, branch rules); still tested",
    });
  });

  it('v2: INSUFFICIENT_PERMISSIONS without `direct`; submitted with it, the entry says direct: true', async () => {
    const repo = await v2(server, 'GET', `/repositories?providerUrl=${WEB}`);
    const queues = await v2(server, 'GET', `/merge-queues?repositoryId=${repo.body.data[0].id}`);
    const id = queues.body.data[0].id;
    const refused = await v2(
      server,
      'POST',
      `/merge-queues/${id}/pull-requests`,
      { number: 3, direct: true },
      MERGE_ONLY,
    );
    expect([refused.status, refused.body.error.code]).toEqual([403, 'INSUFFICIENT_PERMISSIONS']);
    expect(refused.body.error.message).toContain('"direct"');
    const made = await v2(server, 'POST', `/merge-queues/${id}/pull-requests`, { number: 3, direct: true });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect(made.body.queueEntry.direct).toBe(true);
    const plain = await v2(server, 'POST', `/merge-queues/${id}/pull-requests`, { number: 5 }, MERGE_ONLY);
    expect(plain.body.queueEntry.direct).toBe(false);
  });

  it('railyard mq submit --direct', async () => {
    const result = await railyard(['mq', 'submit', '4', '--repo', 'acme/web', '--direct'], env);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe('Submitted #4 direct to the main queue of github.com/acme/web\n');
    expect((await call(server, 'getSubmittedPullRequest', { ...Q, pr: { number: 4 } })).json.direct).toBe(
      true,
    );
    const status = await railyard(['mq', 'status', '4', '--repo', 'acme/web'], env);
    expect(status.stdout).toMatch(/direct\s+yes: admitted past the forge's pull-request requirements/);
  });
});
