/**
 * "Did you mean", through the real binary: piped (as here) a mistyped command or flag prints the
 * one meant and exits at once, never waiting for an answer.
 */
import { rm } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { isolatedEnv, railyard } from '../support/cli.js';

const env = isolatedEnv({ RAILYARD_TOKEN: 'unused', RAILYARD_API_URL: 'http://127.0.0.1:9/v1' });
afterAll(() => rm(env.HOME, { recursive: true, force: true }));

describe('did you mean', () => {
  it('a mistyped command names the one meant, with its arguments, and exits 127', async () => {
    const r = await railyard(['mq', 'stauts', '12'], env);
    expect(r.code).toBe(127);
    expect(r.stderr).toBe('Error: "mq stauts 12" is not a railyard command. Did you mean "railyard mq status 12"?\n');
    const topic = await railyard(['tokn', 'list'], env);
    expect(topic.stderr).toBe('Error: "tokn list" is not a railyard command. Did you mean "railyard token list"?\n');
  });

  it('a command with nothing near says where the list is', async () => {
    const r = await railyard(['frobnicate'], env);
    expect(r.code).toBe(127);
    expect(r.stderr).toBe('Error: "frobnicate" is not a railyard command. Run "railyard help" for the list.\n');
  });

  it('a mistyped flag names the flag meant (exit 2, one error line), also with --json and on serve', async () => {
    const r = await railyard(['mq', 'submit', '1', '--repo', 'acme/web', '--priorty', 'high'], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('Error: Nonexistent flag: --priorty (did you mean --priority?)\nSee: railyard mq submit --help\n');
    const json = await railyard(['mq', 'submit', '1', '--priorty=high', '--toke', 'x', '--json'], env);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toEqual({
      error: { message: 'Nonexistent flags: --priorty=high, --toke (did you mean --priority, --token?)' },
    });
    const serve = await railyard(['serve', '--prot', '0'], env);
    expect(serve.code).toBe(2);
    expect(serve.stderr).toContain('Nonexistent flag: --prot (did you mean --port?)');
    const far = await railyard(['mq', 'submit', '1', '--repo', 'acme/web', '--zzzzzz'], env);
    expect(far.stderr).toBe('Error: Nonexistent flag: --zzzzzz\nSee: railyard mq submit --help\n');
  });
});
