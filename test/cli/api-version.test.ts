import { describe, expect, it } from 'vitest';
import { railyard } from '../support/cli.js';
import { sandboxForCli } from '../support/sandbox-cli.js';

// `--api-version v1|v2`: the same commands print the same things over the server's /v1 and its
// /v2, through the real binary against a real `railyard serve --sandbox` (runs take a minute, so
// what is testing stays testing while both versions read it).
const TOKEN = 'ry_api_version_test_token_0123456789abcdef01';
const sandbox = sandboxForCli('railyard-api-version-', TOKEN);

async function ry(args: string[], extra: Record<string, string> = {}) {
  const result = await railyard(args, { ...sandbox.env, ...extra });
  expect(result.code, `${args.join(' ')} → ${result.stderr}`).toBe(0);
  return result.stdout;
}

/** Relative times ("3 seconds ago") move between two runs: the rest must be the same. */
const steady = (text: string) =>
  text.replace(/\b\d{1,4} (?:second|minute)s? ago\b/g, 'AGO').replaceAll('just now', 'AGO');

/** The output of `args` over v1 and over v2. */
async function both(args: string[]): Promise<[string, string]> {
  const v1 = await ry([...args, '--api-version', 'v1']);
  const v2 = await ry([...args, '--api-version', 'v2']);
  return [v1, v2];
}

describe('--api-version v2: the same commands, the same output', () => {
  const REPO = ['--repo', 'acme/versions'];

  it('submit, status, list, cancel, history, queue get/update: v2 prints what v1 prints', async () => {
    // Writes on v2, reads on both.
    expect(await ry(['mq', 'queue', 'create', ...REPO, '--concurrency', '1', '--api-version', 'v2'])).toBe(
      'Created the main queue of github.com/acme/versions\n',
    );
    for (const [n, priority] of [
      ['1', 'medium'],
      ['2', 'low'],
      ['3', 'medium'],
      ['4', 'high'],
    ])
      expect(await ry(['mq', 'submit', n!, ...REPO, '--priority', priority!, '--api-version', 'v2'])).toBe(
        `Submitted #${n} to the main queue of github.com/acme/versions\n`,
      );
    expect(await ry(['mq', 'cancel', '3', ...REPO, '--api-version', 'v2'])).toBe(
      'Cancelled #3 in the main queue\n',
    );
    // A resubmission with a priority changes it, as on v1 (v2 itself answers 409 PR_ALREADY_ENQUEUED).
    await ry(['mq', 'submit', '2', ...REPO, '--priority', 'urgent', '--api-version', 'v2']);

    for (const args of [
      ['mq', 'list', ...REPO, '--json'],
      ['mq', 'list', ...REPO, '--state', 'pending', '--json'],
      ['mq', 'list', ...REPO, '--limit', '2', '--json'],
      ['mq', 'status', '1', ...REPO, '--json'],
      ['mq', 'status', '3', ...REPO, '--json'],
      ['mq', 'history', '3', ...REPO, '--json'],
      ['mq', 'queue', 'get', ...REPO, '--json'],
    ]) {
      const [v1, v2] = await both(args);
      expect(v2, args.join(' ')).toBe(v1);
    }
    for (const args of [
      ['mq', 'list', ...REPO],
      ['mq', 'status', '1', ...REPO],
      ['mq', 'status', '3', ...REPO],
      ['mq', 'queue', 'get', ...REPO],
    ]) {
      const [v1, v2] = await both(args);
      expect(steady(v2), args.join(' ')).toBe(steady(v1));
    }
    const list = JSON.parse(await ry(['mq', 'list', ...REPO, '--json', '--api-version', 'v2']));
    expect(
      list.pullRequests.map((p: { prNumber: number; state: string }) => `#${p.prNumber} ${p.state}`),
    ).toEqual(['#2 testing', '#4 pending', '#1 pending', '#3 cancelled']);

    // Settings: changed on v2, read back the same on both; the queue's state through pause/resume.
    const [u1, u2] = await both([
      'mq',
      'queue',
      'update',
      ...REPO,
      '--batching-min-size',
      '2',
      '--no-comments-enabled',
      '--json',
    ]);
    expect(u2).toBe(u1);
    expect(JSON.parse(u2)).toMatchObject({ batchingMinSize: 2, commentsEnabled: false });
    expect(await ry(['mq', 'queue', 'pause', ...REPO, '--api-version', 'v2'])).toBe(
      'The main queue is paused\n',
    );
    expect(JSON.parse(await ry(['mq', 'queue', 'get', ...REPO, '--json'])).state).toBe('paused');
    await ry(['mq', 'queue', 'resume', ...REPO, '--api-version', 'v2']);
  });

  it('the version comes from the flag, else RAILYARD_API_VERSION, else the config; anything else is a usage error', async () => {
    await ry(['mq', 'queue', 'create', '--repo', 'acme/chosen']);
    await ry(['mq', 'submit', '7', '--repo', 'acme/chosen', '--api-version', 'v2']);
    // A wrong version where each source gives it: the message names the value and the sources.
    const flag = await railyard(
      ['mq', 'status', '7', '--repo', 'acme/chosen', '--api-version', 'v3'],
      sandbox.env,
    );
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain('--api-version: expected v1 or v2, got "v3"');
    const fromEnv = await railyard(['mq', 'status', '7', '--repo', 'acme/chosen'], {
      ...sandbox.env,
      RAILYARD_API_VERSION: 'v9',
    });
    expect(fromEnv.code).toBe(2);
    expect(fromEnv.stderr).toContain('got "v9"');
    const badConfig = await railyard(['config', 'set', 'api-version', '2'], sandbox.env);
    expect(badConfig.code).toBe(2);
    expect(badConfig.stderr).toContain('api-version: expected v1 or v2, got "2"');

    // v2 from the config: a v1-only operation then fails naming itself; the flag overrides the config.
    await ry(['config', 'set', 'api-version', 'V2']);
    expect(JSON.parse(await ry(['config', 'get', '--json']))['api-version']).toBe('v2');
    const onlyV1 = await railyard(
      ['flaky', 'list-failing', '--repo', 'acme/chosen', '--org', 'local'],
      sandbox.env,
    );
    expect(onlyV1.code).toBe(1);
    expect(onlyV1.stderr).toContain(
      'listFailingTests: not an operation of the v2 API; use API version v1 for it',
    );
    const overridden = await railyard(
      ['flaky', 'list-failing', '--repo', 'acme/chosen', '--org', 'local', '--api-version', 'v1'],
      sandbox.env,
    );
    expect(overridden.code, overridden.stderr).toBe(0);
    expect(
      await ry(['flaky', 'list-quarantined', '--repo', 'acme/chosen', '--org', 'local'], {
        RAILYARD_API_VERSION: 'v1',
      }),
    ).toBe(
      await ry([
        'flaky',
        'list-quarantined',
        '--repo',
        'acme/chosen',
        '--org',
        'local',
        '--api-version',
        'v1',
      ]),
    );
    const unhealthy = await railyard(
      ['flaky', 'list-unhealthy', '--repo', 'acme/chosen', '--org', 'local'],
      sandbox.env,
    );
    expect(unhealthy.stderr).toContain(
      'listUnhealthyTests: not an operation of the v2 API; use API version v1 for it',
    );
    // A v1-only queue setting on v2: the setting is named, nothing is sent.
    const setting = await railyard(
      ['mq', 'queue', 'update', '--repo', 'acme/chosen', '--flaky-retries', '2'],
      sandbox.env,
    );
    expect(setting.code).toBe(1);
    expect(setting.stderr).toContain(
      'updateQueue: flakyRetries: not a setting of the v2 API; use API version v1 for it',
    );
    expect(JSON.parse(await ry(['mq', 'queue', 'get', '--repo', 'acme/chosen', '--json'])).flakyRetries).toBe(
      0,
    );
    // A queue that does not exist: the same kind of answer as v1's.
    const missing = await railyard(['mq', 'status', '1', '--repo', 'acme/nothing'], sandbox.env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(
      'getSubmittedPullRequest: not found (404): no merge queue for branch "main" in github.com/acme/nothing',
    );
    await ry(['config', 'unset', 'api-version']);
  });
});
