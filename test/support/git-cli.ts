/**
 * git for the tests of the forge emulators (github-emulator-fixture.ts, gitlab-emulator-fixture.ts):
 * no user or system config, a fixed identity, no prompts, run without blocking the event loop (the
 * emulator answers in this process), with a token sent as HTTP Basic the way the forge takes it.
 */
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

/**
 * `git(cwd, args, token?)`, answering its trimmed stdout, and `gitFails`, answering the stderr of
 * a git that must fail; a token goes as HTTP Basic `<user>:<token>` (GitHub's user is
 * x-access-token, GitLab's oauth2).
 */
export function gitWithTokenAs(user: string) {
  async function git(cwd: string, args: string[], token?: string): Promise<string> {
    const auth = token
      ? ['-c', `http.extraHeader=Authorization: Basic ${Buffer.from(`${user}:${token}`).toString('base64')}`]
      : [];
    const { stdout } = await run('git', [...auth, ...args], { cwd, env: GIT_ENV });
    return stdout.trim();
  }

  async function gitFails(cwd: string, args: string[], token?: string): Promise<string> {
    try {
      await git(cwd, args, token);
    } catch (e) {
      return String((e as { stderr?: string }).stderr ?? e);
    }
    throw new Error(`git ${args.join(' ')} succeeded`);
  }

  return { git, gitFails };
}
