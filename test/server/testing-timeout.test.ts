// testingTimeoutMinutes "auto" over real HTTP: set through updateQueue and `railyard mq queue
// update`, shown with the timeout in force; a bad value is refused naming the field.
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedEnv, railyard } from '../support/cli.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { call, Q } from './helpers.js';

let server: TestServer;
let env: Record<string, string>;

beforeAll(async () => {
  server = await startTestServer({ sandbox: { testSeconds: 3600 } });
  env = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: server.token });
  expect((await call(server, 'createQueue', Q)).status).toBe(200);
});
afterAll(async () => {
  await server?.close();
  if (env) await rm(env.HOME, { recursive: true, force: true });
});

describe('testingTimeoutMinutes "auto"', () => {
  it('is taken by updateQueue and the CLI, and the queue shows the timeout in force (60 until 10 runs passed)', async () => {
    const result = await railyard(
      ['mq', 'queue', 'update', '--repo', 'acme/web', '--testing-timeout-minutes', 'auto', '--json'],
      env,
    );
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      testingTimeoutMinutes: 'auto',
      testingTimeoutMinutesNow: 60,
    });
    expect((await call(server, 'getQueue', Q)).json).toMatchObject({
      testingTimeoutMinutes: 'auto',
      testingTimeoutMinutesNow: 60,
    });
    const fixed = await call(server, 'updateQueue', { ...Q, testingTimeoutMinutes: 45 });
    expect(fixed.json.testingTimeoutMinutes).toBe(45);
    expect(fixed.json.testingTimeoutMinutesNow).toBeUndefined();
  });

  it('refuses anything else, naming the field', async () => {
    const bad = await call(server, 'updateQueue', { ...Q, testingTimeoutMinutes: 'soon' });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('testingTimeoutMinutes');
    const cli = await railyard(
      ['mq', 'queue', 'update', '--repo', 'acme/web', '--testing-timeout-minutes', 'soon'],
      env,
    );
    expect(cli.code).not.toBe(0);
    expect(cli.stderr).toContain(
      '--testing-timeout-minutes: expected a whole number of minutes or "auto", got "soon"',
    );
  });
});
