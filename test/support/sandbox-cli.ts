/** A sandbox server for a test file that drives the built CLI: started before its tests, removed after them. */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll } from 'vitest';
import { isolatedEnv } from './cli.js';
import { spawnServe, type ServeProcess } from './serve.js';
import { tempDir } from './tmp.js';

/**
 * One `railyard serve --sandbox` (its runs lasting `testSeconds`) for a test file that drives the
 * CLI: started before the file's tests, removed after them, with a private env (HOME, config)
 * pointing the CLI at it under `token`. Read `serve` and `env` inside the tests.
 */
export function sandboxForCli(
  name: string,
  token: string,
  testSeconds = 60,
): { readonly serve: ServeProcess; readonly env: Record<string, string> } {
  let serve: ServeProcess | undefined;
  let env: Record<string, string> | undefined;
  let dataDir = '';
  beforeAll(async () => {
    dataDir = await tempDir(name);
    serve = await spawnServe(
      ['--data-dir', dataDir, '--sandbox', '--sandbox-test-seconds', String(testSeconds)],
      {
        ...process.env,
        RAILYARD_SERVER_TOKEN: token,
      },
    );
    env = isolatedEnv({ RAILYARD_API_URL: serve.url, RAILYARD_TOKEN: token });
  });
  afterAll(async () => {
    await serve?.kill();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    if (env) await rm(env.HOME!, { recursive: true, force: true });
  });
  return {
    get serve() {
      return serve!;
    },
    get env() {
      return env!;
    },
  };
}
