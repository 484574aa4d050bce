/**
 * `railyard serve --gitlab` refuses bad or missing settings with one clear line naming the flag,
 * before listening and before creating anything in its data directory (issue 24 item 1).
 */
import { readdirSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { isolatedEnv, railyard, unwrapOclif as unwrap } from '../support/cli.js';
import { cleanup, tempDir } from './gitlab-harness.js';

afterEach(cleanup);

describe('serve --gitlab settings', () => {
  it.each([
    [[], {}, /--gitlab: give a token with api scope: --gitlab-token-file FILE or RAILYARD_GITLAB_TOKEN/],
    [['--gitlab-token-file', '/nonexistent/token'], {}, /--gitlab-token-file: cannot read \/nonexistent\/token \(ENOENT\)/],
    [['--gitlab-url', 'ftp://gitlab.example'], { RAILYARD_GITLAB_TOKEN: 't' }, /--gitlab-url: expected an http\(s\) URL/],
    [['--gitlab-url', 'not a url'], { RAILYARD_GITLAB_TOKEN: 't' }, /--gitlab-url: expected an http\(s\) URL/],
    [['--gitlab-url', 'https://user:pw@gitlab.example'], { RAILYARD_GITLAB_TOKEN: 't' }, /--gitlab-url: must not carry credentials/],
    [['--gitlab-host', 'bad host/x'], { RAILYARD_GITLAB_TOKEN: 't' }, /--gitlab-host: "bad host\/x" is not a host name/],
    [['--gitlab-poll-seconds', 'soon'], { RAILYARD_GITLAB_TOKEN: 't' }, /--gitlab-poll-seconds: expected a number of seconds/],
    [['--gitlab-webhook-secret-file', '/nonexistent/secret'], { RAILYARD_GITLAB_TOKEN: 't' }, /--gitlab-webhook-secret-file: cannot read \/nonexistent\/secret \(ENOENT\)/],
  ] as const)('%j is refused in one line, nothing created', async (args, env, message) => {
    const dataDir = tempDir('railyard-flags-');
    const r = await railyard(['serve', '--gitlab', '--port', '0', '--data-dir', dataDir, ...args], isolatedEnv(env));
    expect(r.code).toBe(2);
    const text = unwrap(r.stderr).trim();
    expect(text).toMatch(message); // oclif wraps long errors
    expect(text.split('\n').filter((l) => l.trim() !== '')).toHaveLength(1);
    expect(r.stdout).not.toMatch(/listening/);
    expect(readdirSync(dataDir)).toEqual([]);
  });

  it('an unreadable secret file (a directory: unreadable even as root) is refused naming the flag, printing no secret', async () => {
    const dir = tempDir('railyard-flags-');
    const data = tempDir('railyard-flags-data-');
    const r = await railyard(
      ['serve', '--gitlab', '--port', '0', '--data-dir', data, '--gitlab-webhook-secret-file', dir],
      isolatedEnv({ RAILYARD_GITLAB_TOKEN: 'glpat-x-secret' }),
    );
    expect(r.code).toBe(2);
    expect(unwrap(r.stderr)).toMatch(/--gitlab-webhook-secret-file: cannot read .* \(EISDIR\)/);
    expect(r.stderr + r.stdout).not.toContain('glpat-x-secret');
    expect(readdirSync(data)).toEqual([]);
  });
});
