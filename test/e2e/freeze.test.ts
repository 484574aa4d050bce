import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../support/forge-e2e.js';
import { call, REPO } from '../server/helpers.js';
import { isolatedEnv, railyard } from '../support/cli.js';
import { startTestServer, type TestServer } from '../support/server.js';

// Freezes end to end: `railyard mq queue freeze` / `unfreeze` through the real binary against a
// real server over HTTP (sandbox forge, runs of a second), PRs submitted and read over the API.
let server: TestServer;
let env: Record<string, string>;

beforeAll(async () => {
  server = await startTestServer({ sandbox: { testSeconds: 1 } });
  env = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: server.token });
});
afterAll(async () => {
  await server?.close();
  if (env) await rm(env.HOME, { recursive: true, force: true });
});

const repoFlag = (name: string) => ['--repo', `${REPO.owner}/${name}`];
const queueOf = (name: string) => ({ repo: { ...REPO, name }, targetBranch: 'main' });

async function ry(args: string[]) {
  const result = await railyard(args, env);
  expect(result.code, `${args.join(' ')} → ${result.stderr}`).toBe(0);
  return result;
}

async function states(name: string, prs: number[]): Promise<Record<number, string>> {
  const out: Record<number, string> = {};
  for (const number of prs) {
    const res = await call(server, 'getSubmittedPullRequest', { ...queueOf(name), pr: { number } });
    out[number] = res.json?.state;
  }
  return out;
}

async function submit(name: string, number: number, priority?: string) {
  const res = await call(server, 'submitPullRequest', {
    ...queueOf(name),
    pr: { number },
    ...(priority ? { priority } : {}),
  });
  expect(res.status, res.text).toBe(200);
}

describe('railyard mq queue freeze', () => {
  it('a frozen queue tests but lands nothing, an urgent PR lands through the freeze, unfreezing lands the rest', async () => {
    const name = 'frozen';
    await ry(['mq', 'queue', 'create', ...repoFlag(name), '--concurrency', '2']);
    const frozen = await ry([
      'mq',
      'queue',
      'freeze',
      ...repoFlag(name),
      '--until',
      '2h',
      '--reason',
      'release 4.2',
    ]);
    expect(frozen.stdout).toMatch(
      /^The main queue is frozen until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \(release 4\.2\): pull requests are tested, and only those of priority 0 or lower land\n$/,
    );
    const queue = (await call(server, 'getQueue', queueOf(name))).json;
    expect(queue.frozen.reason).toBe('release 4.2');
    expect(Date.parse(queue.frozen.until) - Date.now()).toBeGreaterThan(119 * 60_000);

    await submit(name, 1);
    await submit(name, 2);
    await until(
      '#1 and #2 passed',
      async () => JSON.stringify(await states(name, [1, 2])) === '{"1":"tests_passed","2":"tests_passed"}',
    );
    // Passed, and still passed a few runs' time later: nothing lands.
    await new Promise((r) => setTimeout(r, 2_500));
    expect(await states(name, [1, 2])).toEqual({ 1: 'tests_passed', 2: 'tests_passed' });

    // Priority 0 lands during the freeze; the others are tested again on top of it and wait.
    await submit(name, 3, 'urgent');
    await until('#3 merged', async () => (await states(name, [3]))[3] === 'merged', 30_000);
    await until(
      '#1 and #2 passed again',
      async () => JSON.stringify(await states(name, [1, 2])) === '{"1":"tests_passed","2":"tests_passed"}',
      30_000,
    );

    const lifted = await ry(['mq', 'queue', 'unfreeze', ...repoFlag(name)]);
    expect(lifted.stdout).toBe('The main queue is no longer frozen: the pull requests that passed land\n');
    await until(
      '#1 and #2 merged',
      async () => JSON.stringify(await states(name, [1, 2])) === '{"1":"merged","2":"merged"}',
      30_000,
    );
    const after = (await call(server, 'getQueue', queueOf(name))).json;
    expect(after.frozen).toBeUndefined();
    expect(after.freezes).toEqual([]);
  });

  it('says what is wrong with a time or a window, and changes nothing', async () => {
    const name = 'bad-times';
    await ry(['mq', 'queue', 'create', ...repoFlag(name)]);
    const cases: [string[], string][] = [
      [
        ['--until', 'tomorrow'],
        '--until: "tomorrow" is not an ISO 8601 time such as 2026-12-24T18:00:00Z, or a duration from now such as 90m, 2h or 3d',
      ],
      [
        ['--until', '2026-12-24T18:00'],
        '--until: "2026-12-24T18:00" has no time zone: add Z for UTC (2026-12-24T18:00:00Z) or an offset (+01:00), or a duration from now such as 90m, 2h or 3d',
      ],
      [['--until', '2020-01-01T00:00:00Z'], '--until: 2020-01-01T00:00:00.000Z is not in the future'],
    ];
    for (const [flags, message] of cases) {
      const result = await railyard(['mq', 'queue', 'freeze', ...repoFlag(name), ...flags], env);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain(message);
    }
    const bad = await railyard(
      [
        'mq',
        'queue',
        'update',
        ...repoFlag(name),
        '--freezes',
        '[{"cron":"61 * * * *","durationMinutes":5}]',
      ],
      env,
    );
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/freezes\[0\]\.cron: "61 \* \* \* \*" is not a cron expression/);
    const api = await call(server, 'updateQueue', {
      ...queueOf(name),
      freezes: [{ start: '2026-12-24T18:00:00Z', end: '2026-12-24T17:00:00Z' }],
    });
    expect(api.status).toBe(400);
    expect(api.text).toContain(
      'freezes[0]: end (2026-12-24T17:00:00Z) must be after start (2026-12-24T18:00:00Z)',
    );
    expect((await call(server, 'getQueue', queueOf(name))).json.freezes).toEqual([]);
  });
});
