/** `railyard serve --github` refuses bad or missing settings with one clear line, before listening. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isolatedEnv, railyard, unwrapOclif as unwrap } from '../support/cli.js';
import { cleanup, tempDir } from './github-harness.js';

afterEach(cleanup);

describe('serve --github settings', () => {
  it.each([
    [[], {}, /--github: say how to authenticate/],
    [['--github-app-id', '7'], {}, /--github-app-id and --github-private-key-file go together/],
    [
      ['--github-token-file', '/nonexistent/token'],
      {},
      /--github-token-file: cannot read \/nonexistent\/token \(ENOENT\)/,
    ],
    [
      ['--github-api-url', 'ftp://x'],
      { RAILYARD_GITHUB_TOKEN: 't' },
      /--github-api-url: expected an http\(s\) URL/,
    ],
    [
      ['--github-api-url', 'https://user:pw@ghe.example/api/v3'],
      { RAILYARD_GITHUB_TOKEN: 't' },
      /must not carry credentials/,
    ],
    [
      ['--github-poll-seconds', 'soon'],
      { RAILYARD_GITHUB_TOKEN: 't' },
      /--github-poll-seconds: expected a number of seconds/,
    ],
  ] as const)('%j is refused', async (args, env, message) => {
    const dataDir = tempDir('railyard-flags-');
    const r = await railyard(
      ['serve', '--github', '--port', '0', '--data-dir', dataDir, ...args],
      isolatedEnv(env),
    );
    expect(r.code).toBe(2);
    expect(unwrap(r.stderr)).toMatch(message); // oclif wraps long errors
    expect(r.stdout).not.toMatch(/listening/);
  });

  it('a key file that is not a PEM key is refused without printing it', async () => {
    const dir = tempDir('railyard-flags-');
    writeFileSync(join(dir, 'key'), 'not-a-key-secret-material');
    const r = await railyard(
      [
        'serve',
        '--github',
        '--port',
        '0',
        '--data-dir',
        dir,
        '--github-app-id',
        '7',
        '--github-private-key-file',
        join(dir, 'key'),
      ],
      isolatedEnv(),
    );
    expect(r.code).toBe(2);
    expect(unwrap(r.stderr)).toMatch(/does not hold a PEM private key/);
    expect(r.stderr + r.stdout).not.toContain('not-a-key-secret-material');
  });
});
