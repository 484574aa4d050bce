/** The flag values `serve` and the GitLab forge read alike (src/flag-values.ts): their one-line errors. */
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { secretFile, seconds } from '../../src/flag-values.js';
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
