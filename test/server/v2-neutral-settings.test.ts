// v2 queue settings the engine has no behaviour for (notReadyTimeoutMinutes, allowedBotSubmitters,
// batchingRules, testBranchConstructionMode): a queue reads their neutral value, a PATCH takes that
// value and refuses any other with a 400 naming the setting and the value it takes, changing
// nothing else of the same PATCH.
import { describe, expect, it } from 'vitest';
import { serversPerTest } from '../support/hooks.js';
import { v2 } from '../support/v2.js';

const startServer = serversPerTest();
const WEB = encodeURIComponent('https://github.com/acme/web');

describe('v2 settings without an engine behind them', () => {
  it('read as their neutral value; only it is accepted; any other is a 400 that changes nothing', async () => {
    const s = await startServer();
    const repo = await v2(s, 'GET', `/repositories?providerUrl=${WEB}`);
    const created = await v2(s, 'POST', '/merge-queues', {
      repositoryId: repo.body.data[0].id,
      targetBranch: 'main',
    });
    expect(created.status).toBe(201);
    const q = created.body.id as string;
    const neutral = {
      notReadyTimeoutMinutes: 0,
      allowedBotSubmitters: [],
      batchingRules: [],
      testBranchConstructionMode: 'renameTempBranch',
    };
    expect(created.body.config).toMatchObject(neutral);

    const accepted = await v2(s, 'PATCH', `/merge-queues/${q}/config`, { ...neutral, concurrency: 3 });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    expect(accepted.body.config).toMatchObject({ ...neutral, concurrency: 3 });

    const refused: [Record<string, unknown>, string][] = [
      [{ notReadyTimeoutMinutes: 120 }, 'notReadyTimeoutMinutes: this server supports only 0 (no timeout)'],
      [{ allowedBotSubmitters: ['renovate[bot]'] }, 'allowedBotSubmitters: this server supports only []'],
      [
        { batchingRules: [{ targetPattern: '//docs/...', policy: 'isolate' }] },
        'batchingRules: this server supports only []',
      ],
      [
        { testBranchConstructionMode: 'pushNewBranchFromTemp' },
        'testBranchConstructionMode: this server supports only renameTempBranch',
      ],
    ];
    for (const [body, message] of refused) {
      const answer = await v2(s, 'PATCH', `/merge-queues/${q}/config`, { ...body, concurrency: 7 });
      expect([answer.status, answer.body.error.code], JSON.stringify(body)).toEqual([
        400,
        'VALIDATION_FAILED',
      ]);
      expect(answer.body.error.message).toContain(message);
    }
    // None of the refused PATCHes changed anything, the concurrency sent beside them included.
    const after = await v2(s, 'GET', `/merge-queues/${q}`);
    expect(after.body.config).toMatchObject({ ...neutral, concurrency: 3 });
  });
});
