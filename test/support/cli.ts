/** Running the built CLI in tests with a private HOME and config. */
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { tempDirSync } from './tmp.js';

export const BIN = resolve(import.meta.dirname, '../../bin/run.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** A private HOME / XDG_CONFIG_HOME so tests never read or write the user's config (removed when the test file ends). */
export function isolatedEnv(extra: Record<string, string> = {}): Record<string, string> {
  const home = tempDirSync('railyard-home-');
  const env: Record<string, string> = {};
  for (const key of ['PATH', 'SYSTEMROOT', 'TMPDIR']) if (process.env[key]) env[key] = process.env[key] as string;
  return { ...env, HOME: home, XDG_CONFIG_HOME: join(home, '.config'), NO_COLOR: '1', ...extra };
}

/**
 * Runs the real `railyard` binary (built by `npm run build`) as a child process. `onOutput` is
 * called with everything printed so far each time it prints (to wait for a line, not a time).
 */
export function railyard(
  args: string[],
  env: Record<string, string>,
  input?: string,
  cwd?: string,
  onOutput?: (stdout: string, stderr: string) => void,
): Promise<CliResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env, cwd: cwd ?? env.HOME, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      onOutput?.(stdout, stderr);
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      onOutput?.(stdout, stderr);
    });
    child.on('error', reject);
    child.on('close', (code) => resolvePromise({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}

/** oclif wraps long error messages over lines that start with `›`: the text as one line, to match against. */
export function unwrapOclif(text: string): string {
  return text
    .split('\n')
    .map((line) => line.trim())
    .map((line) => (line.startsWith('›') ? line.slice(1).trim() : line))
    .filter(Boolean)
    .join(' ');
}
