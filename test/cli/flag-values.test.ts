/**
 * The flag values `serve` and the GitLab forge read alike (src/flag-values.ts): their one-line
 * errors, and secrets from the environment taken out of it before anything can refuse the start.
 */
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { secretFile, secretOf, seconds, takeSecrets } from '../../src/flag-values.js';
import { githubOptions } from '../../src/forge/github/description.js';
import { gitlabSettings } from '../../src/forge/gitlab/description.js';
import { cleanupsAfterEach } from '../support/hooks.js';

const cleanup = cleanupsAfterEach();

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'railyard-test-'));
  cleanup(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

describe('secretFile', () => {
  it('reads the secret trimmed of its line end', async () => {
    const file = join(await tempDir(), 'token');
    await writeFile(file, '  s3cret-value\n');
    await expect(secretFile('gitlab-token-file', file)).resolves.toBe('s3cret-value');
  });

  it('names the flag, the path and the reason of a file it cannot read, never its content', async () => {
    const dir = await tempDir();
    await expect(secretFile('github-token-file', join(dir, 'missing'))).rejects.toThrow(
      `--github-token-file: cannot read ${join(dir, 'missing')} (ENOENT)`,
    );
    await expect(secretFile('gitlab-webhook-secret-file', dir)).rejects.toThrow(
      `--gitlab-webhook-secret-file: cannot read ${dir} (EISDIR)`,
    );
    if (process.getuid?.() !== 0) {
      const locked = join(dir, 'locked');
      await writeFile(locked, 'do-not-print-me');
      await chmod(locked, 0o000);
      const error = await secretFile('github-private-key-file', locked).catch((e: Error) => e);
      expect(String(error)).toContain(`--github-private-key-file: cannot read ${locked} (EACCES)`);
      expect(String(error)).not.toContain('do-not-print-me');
    }
  });

  it('refuses an empty or blank file, naming the flag and the path', async () => {
    const file = join(await tempDir(), 'blank');
    await writeFile(file, ' \n\n');
    await expect(secretFile('gitlab-token-file', file)).rejects.toThrow(`--gitlab-token-file: ${file} is empty`);
  });
});

describe('seconds', () => {
  it('accepts whole and fractional seconds at or above the minimum', () => {
    expect(seconds('github-poll-seconds', '30', 0.05)).toBe(30);
    expect(seconds('gitlab-poll-seconds', '0.05', 0.05)).toBe(0.05);
    expect(seconds('gitlab-ci-start-seconds', '0', 0)).toBe(0);
  });

  it.each(['', ' ', 'soon', '-1', '0.01', 'Infinity', 'NaN'])('refuses %j in one line naming the flag and the minimum', (text) => {
    expect(() => seconds('gitlab-poll-seconds', text, 0.05)).toThrow(
      `--gitlab-poll-seconds: expected a number of seconds >= 0.05, got "${text}"`,
    );
  });
});

describe('secrets from a file or the environment', () => {
  it('takeSecrets returns the values and deletes them from the environment', () => {
    const env: NodeJS.ProcessEnv = { A: 'a-secret', KEEP: 'x' };
    expect(takeSecrets(env, ['A', 'B'])).toEqual({ A: 'a-secret', B: undefined });
    expect(env).toEqual({ KEEP: 'x' });
  });

  it('secretOf prefers the file, then the environment value (trimmed, blank = none)', async () => {
    const file = join(await tempDir(), 'secret');
    await writeFile(file, 'from-file\n');
    await expect(secretOf('gitlab-token-file', file, 'from-env')).resolves.toBe('from-file');
    await expect(secretOf('gitlab-token-file', undefined, ' from-env \n')).resolves.toBe('from-env');
    await expect(secretOf('gitlab-token-file', undefined, '  ')).resolves.toBeNull();
    await expect(secretOf('gitlab-token-file', undefined, undefined)).resolves.toBeNull();
  });

  const gitlab = { 'gitlab-url': 'https://gitlab.example.com', 'gitlab-poll-seconds': '30', 'gitlab-ci-start-seconds': '0' };
  const github = {
    'github-api-url': 'https://api.github.com',
    'github-host': 'github.com',
    'github-poll-seconds': '30',
    'github-ci-start-seconds': '0',
    'github-write-interval-ms': 0,
    'github-merge-api': false,
  };
  /** Starts the forge's settings from these flags over an environment holding both its secrets. */
  const start = (forge: 'gitlab' | 'github', flags: Record<string, unknown>) => {
    const prefix = forge === 'gitlab' ? 'RAILYARD_GITLAB' : 'RAILYARD_GITHUB';
    const env: NodeJS.ProcessEnv = { [`${prefix}_TOKEN`]: 'token-must-not-stay', [`${prefix}_WEBHOOK_SECRET`]: 'hook-must-not-stay', PATH: '/bin' };
    const started = forge === 'gitlab' ? gitlabSettings({ ...gitlab, ...flags }, env) : githubOptions({ ...github, ...flags }, env);
    return { env, error: started.then(() => null, (e: Error) => e) };
  };
  // Each start below is refused; the secrets must be gone from the environment all the same.
  it.each([
    ['gitlab', 'a URL that is not one', { 'gitlab-url': 'not a url' }, /--gitlab-url: expected an http\(s\) URL/],
    ['gitlab', 'a URL with credentials', { 'gitlab-url': 'https://u:p@gitlab.example.com' }, /--gitlab-url: must not carry credentials/],
    ['gitlab', 'a bad host', { 'gitlab-host': 'bad host/x' }, /--gitlab-host: "bad host\/x" is not a host name/],
    ['gitlab', 'an unreadable token file', { 'gitlab-token-file': '/nonexistent/token' }, /--gitlab-token-file: cannot read/],
    ['gitlab', 'bad poll seconds', { 'gitlab-poll-seconds': 'soon' }, /--gitlab-poll-seconds/],
    ['github', 'a URL that is not one', { 'github-api-url': 'ftp://api.example' }, /--github-api-url: expected an http\(s\) URL/],
    ['github', 'a bad host', { 'github-host': 'bad host/x' }, /--github-host: "bad host\/x" is not a host name/],
    ['github', 'an app id without its key', { 'github-app-id': 7 }, /--github-app-id and --github-private-key-file go together/],
    ['github', 'bad poll seconds', { 'github-poll-seconds': 'soon' }, /--github-poll-seconds/],
  ] as const)('serve --%s refused for %s: its secrets are already out of the environment, and not in the error', async (forge, _what, flags, message) => {
    const { env, error } = start(forge, flags);
    expect(String(await error)).toMatch(message);
    expect(String(await error)).not.toMatch(/must-not-stay/);
    expect(env).toEqual({ PATH: '/bin' });
  });

  it('reads the token and hook secret from the environment it empties (GitLab and GitHub alike)', async () => {
    const glEnv: NodeJS.ProcessEnv = { RAILYARD_GITLAB_TOKEN: ' glpat-1 ', RAILYARD_GITLAB_WEBHOOK_SECRET: 'hook-1' };
    await expect(gitlabSettings(gitlab, glEnv)).resolves.toMatchObject({ token: 'glpat-1', webhookSecret: 'hook-1', host: 'gitlab.example.com' });
    expect(glEnv).toEqual({});
    const ghEnv: NodeJS.ProcessEnv = { RAILYARD_GITHUB_TOKEN: 'ghp-1' };
    await expect(githubOptions(github, ghEnv)).resolves.toMatchObject({ auth: { kind: 'token', token: 'ghp-1' }, webhookSecret: null });
    expect(ghEnv).toEqual({});
  });
});
