/** git against the GitLab emulator for its own tests: a token as HTTP Basic, no user or system config. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);
const GIT_ENV = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_TERMINAL_PROMPT: '0',
  GIT_AUTHOR_NAME: 'Dev',
  GIT_AUTHOR_EMAIL: 'dev@example.com',
  GIT_COMMITTER_NAME: 'Dev',
  GIT_COMMITTER_EMAIL: 'dev@example.com',
};

export async function git(cwd: string, args: string[], token?: string): Promise<string> {
  const auth = token
    ? ['-c', `http.extraHeader=Authorization: Basic ${Buffer.from(`oauth2:${token}`).toString('base64')}`]
    : [];
  const { stdout } = await run('git', [...auth, ...args], { cwd, env: GIT_ENV });
  return stdout.trim();
}

export async function gitFails(cwd: string, args: string[], token?: string): Promise<string> {
  try {
    await git(cwd, args, token);
  } catch (e) {
    return String((e as { stderr?: string }).stderr ?? e);
  }
  throw new Error(`git ${args.join(' ')} succeeded`);
}
