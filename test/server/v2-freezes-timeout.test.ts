// v2 takes the settings v1 has beside Trunk's: freeze windows (x-railyard-freezes,
// x-railyard-freezeBypassPriority) and testingTimeoutMinutes "auto". The queue shows the freeze in
// force (x-railyard-frozen) and the timeout mode, testingTimeoutMinutes staying Trunk's number;
// a bad value is a 400 naming the field and changes nothing.
import { describe, expect, it } from 'vitest';
import { serversPerTest } from '../support/hooks.js';
import { trunkSchemas, v2 } from '../support/v2.js';

const startServer = serversPerTest();
const WEB = encodeURIComponent('https://github.com/acme/web');

async function newQueue(s: Awaited<ReturnType<typeof startServer>>): Promise<string> {
  const repo = await v2(s, 'GET', `/repositories?providerUrl=${WEB}`);
  const created = await v2(s, 'POST', '/merge-queues', {
    repositoryId: repo.body.data[0].id,
    targetBranch: 'main',
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.id as string;
}

describe('v2 queue config: freezes and the "auto" testing timeout', () => {
  it('takes freezes and a bypass priority, and shows the freeze in force', async () => {
    const s = await startServer();
    const q = await newQueue(s);
    const before = await v2(s, 'GET', `/merge-queues/${q}`);
    expect(before.body.config).toMatchObject({
      'x-railyard-freezes': [],
      'x-railyard-freezeBypassPriority': 0,
    });
    expect(before.body['x-railyard-frozen']).toBeUndefined();

    const now = Date.now();
    const start = new Date(now - 60_000).toISOString();
    const end = new Date(now + 3_600_000).toISOString();
    const later = { cron: '0 18 * * 5', durationMinutes: 120 };
    const patched = await v2(s, 'PATCH', `/merge-queues/${q}/config`, {
      'x-railyard-freezes': [{ start, end, reason: 'release' }, later],
      'x-railyard-freezeBypassPriority': 2,
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.config).toMatchObject({
      'x-railyard-freezes': [{ start, end, reason: 'release' }, later],
      'x-railyard-freezeBypassPriority': 2,
    });
    expect(patched.body['x-railyard-frozen']).toEqual({
      until: new Date(end).toISOString(),
      reason: 'release',
    });
    const got = await v2(s, 'GET', `/merge-queues/${q}`);
    expect(got.body['x-railyard-frozen']).toEqual({ until: new Date(end).toISOString(), reason: 'release' });
    expect(trunkSchemas().validate('MergeQueue', got.body)).toEqual([]);
    // The list shows it too.
    const listed = await v2(s, 'GET', `/merge-queues?repositoryId=${got.body.repositoryId}`);
    expect(listed.body.data[0]['x-railyard-frozen']).toBeDefined();

    const cleared = await v2(s, 'PATCH', `/merge-queues/${q}/config`, { 'x-railyard-freezes': [] });
    expect(cleared.body.config['x-railyard-freezes']).toEqual([]);
    expect(cleared.body['x-railyard-frozen']).toBeUndefined();
  });

  it('takes testingTimeoutMinutes "auto": the number shown is the timeout in force, the mode says auto', async () => {
    const s = await startServer();
    const q = await newQueue(s);
    const auto = await v2(s, 'PATCH', `/merge-queues/${q}/config`, { testingTimeoutMinutes: 'auto' });
    expect(auto.status, JSON.stringify(auto.body)).toBe(200);
    expect(auto.body.config).toMatchObject({
      testingTimeoutMinutes: 60,
      'x-railyard-testingTimeoutMode': 'auto',
    });
    expect(trunkSchemas().validate('MergeQueue', auto.body)).toEqual([]);
    const fixed = await v2(s, 'PATCH', `/merge-queues/${q}/config`, { testingTimeoutMinutes: 45 });
    expect(fixed.body.config).toMatchObject({
      testingTimeoutMinutes: 45,
      'x-railyard-testingTimeoutMode': 'fixed',
    });
  });

  it('refuses bad values with a 400 naming the field, changing nothing', async () => {
    const s = await startServer();
    const q = await newQueue(s);
    const refused: [Record<string, unknown>, string][] = [
      [{ testingTimeoutMinutes: 'soon' }, 'testingTimeoutMinutes'],
      [
        { 'x-railyard-freezes': [{ start: '2026-12-24T18:00', end: '2026-12-25T18:00Z' }] },
        'x-railyard-freezes[0].start: "2026-12-24T18:00" has no time zone',
      ],
      [
        { 'x-railyard-freezes': [{ start: '2026-12-24T18:00Z', end: '2026-12-24T17:00Z' }] },
        'x-railyard-freezes[0]: end (2026-12-24T17:00Z) must be after start (2026-12-24T18:00Z)',
      ],
      [
        { 'x-railyard-freezes': [{ cron: 'every friday', durationMinutes: 60 }] },
        'x-railyard-freezes[0].cron: "every friday" is not a cron expression',
      ],
      [{ 'x-railyard-freezeBypassPriority': 256 }, 'x-railyard-freezeBypassPriority'],
      [{ 'x-railyard-freezes': 'friday' }, 'x-railyard-freezes'],
    ];
    for (const [body, message] of refused) {
      const answer = await v2(s, 'PATCH', `/merge-queues/${q}/config`, { ...body, concurrency: 7 });
      expect([answer.status, answer.body.error?.code], JSON.stringify(body)).toEqual([
        400,
        'VALIDATION_FAILED',
      ]);
      expect(answer.body.error.message).toContain(message);
    }
    const after = await v2(s, 'GET', `/merge-queues/${q}`);
    expect(after.body.config).toMatchObject({
      concurrency: 1,
      'x-railyard-freezes': [],
      'x-railyard-testingTimeoutMode': 'fixed',
    });
  });
});
