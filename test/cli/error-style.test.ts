/**
 * One error style through the built CLI: `Error: …` on one line naming what is missing or wrong,
 * for a missing argument, a flag value oclif's parser refused, a command's own check, a mistyped
 * flag of `serve` (no help dumped after it), and a mistyped webhook event (did you mean).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { isolatedEnv, railyard } from '../support/cli.js';

let env: Record<string, string>;

beforeAll(() => {
  // Nothing listens there: every error below is the CLI's own, before any request.
  env = isolatedEnv({
    RAILYARD_API_URL: 'http://127.0.0.1:9/v1',
    RAILYARD_TOKEN: 'no-server',
    RAILYARD_ORG: 'acme',
  });
});

async function refused(args: string[]) {
  const result = await railyard(args, env);
  expect(result.stdout, args.join(' ')).toBe('');
  expect(result.stderr, args.join(' ')).not.toContain('›');
  return result;
}

describe('a missing argument', () => {
  it('is named, with how the command is called', async () => {
    const cases: Array<[string[], string]> = [
      [['mq', 'submit'], 'Error: missing the pull request number: railyard mq submit <pr>'],
      [
        ['mq', 'status', '--repo', 'acme/web'],
        'Error: missing the pull request number: railyard mq status <pr>',
      ],
      [
        ['flaky', 'quarantine', '--always'],
        'Error: missing the test id (UUID): railyard flaky quarantine <testId>',
      ],
      [['webhook', 'deliveries'], 'Error: missing the endpoint id (ep_…): railyard webhook deliveries <id>'],
      [
        ['webhook', 'delete'],
        'Error: missing the endpoint id (ep_…), as webhook list shows it: railyard webhook delete <id>',
      ],
    ];
    for (const [args, line] of cases) {
      const result = await refused(args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr.split('\n')[0], args.join(' ')).toBe(line);
    }
  });

  it('a missing required flag is named as a flag', async () => {
    const result = await refused(['webhook', 'create']);
    expect(result.code).toBe(2);
    expect(result.stderr.split('\n')[0]).toBe('Error: --url: required');
  });
});

describe("oclif's ` ›   Error:` style", () => {
  it('is gone from flag values the parser refuses and from a command’s own checks', async () => {
    const concurrency = await refused(['mq', 'queue', 'update', '--repo', 'acme/web', '--concurrency', '0']);
    expect(concurrency.code).toBe(2);
    expect(concurrency.stderr).toBe(
      'Error: --concurrency: expected an integer greater than or equal to 1 but received: 0\nSee: railyard mq queue update --help\n',
    );
    const replay = await refused(['webhook', 'replay', 'abc']);
    expect(replay.code).toBe(2);
    expect(replay.stderr).toBe('Error: DELIVERY_ID: expected a delivery number, got "abc"\n');
  });

  it('`serve --sandbx` names the flag meant and prints no help after it', async () => {
    const result = await refused(['serve', '--sandbx']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      'Error: Nonexistent flag: --sandbx (did you mean --sandbox?)\nSee: railyard serve --help\n',
    );
  });
});

describe('webhook create --event', () => {
  it('names the event meant for a typo, and Trunk’s spelling of canceled', async () => {
    const result = await refused([
      'webhook',
      'create',
      '--url',
      'https://hooks.example.com/x',
      '--event',
      'pull_request.cancelled',
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      'Error: --event: unknown event "pull_request.cancelled" (did you mean pull_request.canceled? Trunk spells it "canceled")\n',
    );
    const typo = await refused([
      'webhook',
      'create',
      '--url',
      'https://hooks.example.com/x',
      '--event',
      'pull_request.mergd',
    ]);
    expect(typo.stderr).toBe(
      'Error: --event: unknown event "pull_request.mergd" (did you mean pull_request.merged?)\n',
    );
  });

  it('an event nowhere near any gets one short line saying where the list is', async () => {
    const result = await refused([
      'webhook',
      'create',
      '--url',
      'https://hooks.example.com/x',
      '--event',
      'deploy',
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      'Error: --event: unknown event "deploy" (pull_request.*, pull_request_batch.*, test_case.*, v2.test_case.status_changed, webhook.test, merge_queue.*; docs/webhooks.md lists them)\n',
    );
  });
});
