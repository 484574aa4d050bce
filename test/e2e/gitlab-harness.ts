/**
 * End-to-end harness for `railyard serve --gitlab`: the real built binary as a child process,
 * talking to the GitLab emulator of test/support/gitlab over real HTTP and real git.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN } from '../support/cli.js';
import { startGitLabEmulator, type GitLabEmulator } from '../support/gitlab/index.js';
import type { TestServer } from '../support/server.js';
import { ok } from '../server/helpers.js';

export const PROJECT = 'acme/platform/app';
export const API_TOKEN = 'e2e-api-token';
export const GL_TOKEN = 'glpat-e2e-secret-token';
export const HOOK_SECRET = 'e2e-hook-secret';

export interface RailyardProcess extends TestServer {
  output(): string;
  stop(): Promise<void>;
  kill(): Promise<void>;
}

const cleanups: Array<() => Promise<void> | void> = [];
const emulators: GitLabEmulator[] = [];

export async function cleanup(): Promise<void> {
  const violations: string[] = [];
  for (const gl of emulators.splice(0)) {
    await gl.idle().catch(() => undefined);
    violations.push(...gl.schemaViolations);
  }
  for (const c of cleanups.splice(0).reverse()) {
    try {
      await c();
    } catch {
      /* keep cleaning */
    }
  }
  if (violations.length)
    throw new Error(`the emulator's answers broke the GitLab shapes:\n${violations.join('\n')}`);
}

export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export async function emulator(): Promise<GitLabEmulator> {
  const gl = await startGitLabEmulator();
  cleanups.push(() => gl.close());
  emulators.push(gl);
  gl.addToken(GL_TOKEN, { username: 'railyard-bot' });
  return gl;
}

export async function startRailyard(
  gl: GitLabEmulator,
  opts: { webhooks: boolean; dataDir: string; pollSeconds?: number; ciStartSeconds?: number },
): Promise<RailyardProcess> {
  const secrets = tempDir('railyard-secrets-');
  writeFileSync(join(secrets, 'token'), GL_TOKEN + '\n');
  const args = [
    BIN,
    'serve',
    '--gitlab',
    '--port',
    '0',
    '--data-dir',
    opts.dataDir,
    '--token',
    API_TOKEN,
    '--gitlab-url',
    gl.url,
    '--gitlab-host',
    gl.host,
    '--gitlab-token-file',
    join(secrets, 'token'),
    '--gitlab-poll-seconds',
    String(opts.pollSeconds ?? 0.2),
    '--gitlab-ci-start-seconds',
    String(opts.ciStartSeconds ?? 30),
  ];
  if (opts.webhooks) {
    writeFileSync(join(secrets, 'hook'), HOOK_SECRET);
    args.push('--gitlab-webhook-secret-file', join(secrets, 'hook'));
  }
  const child: ChildProcess = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH ?? '', HOME: secrets, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  let alive = true;
  void exited.then(() => (alive = false));
  const port = await new Promise<string>((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error(`railyard serve did not start: ${out}`)), 30_000);
    const check = () => {
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)\/v1/.exec(out);
      if (m) {
        clearTimeout(deadline);
        resolve(m[1]!);
      } else if (!alive) {
        clearTimeout(deadline);
        reject(new Error(`railyard serve exited: ${out}`));
      } else setTimeout(check, 25);
    };
    check();
  });
  const url = `http://127.0.0.1:${port}`;
  if (opts.webhooks) gl.setWebhook(`${url}/webhooks/gitlab`, HOOK_SECRET);
  const stop = async () => {
    if (!alive) return;
    child.kill('SIGTERM');
    await exited;
  };
  const proc: RailyardProcess = {
    url: `${url}/v1`,
    token: API_TOKEN,
    org: 'local',
    dataDir: opts.dataDir,
    output: () => out,
    stop,
    close: stop,
    async kill() {
      if (!alive) return;
      child.kill('SIGKILL');
      await exited;
    },
  };
  cleanups.push(stop);
  if (process.env.RAILYARD_E2E_DEBUG) cleanups.push(() => console.log(`--- railyard output ---\n${out}`));
  return proc;
}

export const repoOf = (gl: GitLabEmulator) => ({ host: gl.host, owner: 'acme/platform', name: 'app' });

export async function createQueue(
  server: TestServer,
  gl: GitLabEmulator,
  settings: Record<string, unknown> = {},
) {
  await ok(server, 'createQueue', { repo: repoOf(gl), targetBranch: 'main' });
  if (Object.keys(settings).length)
    await ok(server, 'updateQueue', { repo: repoOf(gl), targetBranch: 'main', ...settings });
}

export async function submit(
  server: TestServer,
  gl: GitLabEmulator,
  iid: number,
  extra: Record<string, unknown> = {},
) {
  return ok(server, 'submitPullRequest', {
    repo: repoOf(gl),
    targetBranch: 'main',
    pr: { number: iid },
    ...extra,
  });
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Pr = any;

export async function waitFor(
  server: TestServer,
  gl: GitLabEmulator,
  iid: number,
  done: (pr: Pr) => boolean,
  timeoutMs = 30_000,
): Promise<Pr> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pr = await ok(server, 'getSubmittedPullRequest', {
      repo: repoOf(gl),
      targetBranch: 'main',
      pr: { number: iid },
    });
    if (done(pr)) return pr;
    if (Date.now() > deadline) throw new Error(`!${iid} is still ${pr.state} (${pr.stateReason ?? ''})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export const settled = (pr: Pr) => ['merged', 'failed', 'cancelled'].includes(pr.state);

export async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** CI on test branches: one `test` job, passing unless the decider says otherwise. */
export function ciOnTestBranches(
  gl: GitLabEmulator,
  outcome: (branch: string) => 'success' | 'failed' = () => 'success',
  delayMs = 100,
) {
  gl.setCi(PROJECT, (push) =>
    push.branch.startsWith('railyard-merge/')
      ? [{ name: 'test', status: outcome(push.branch), delayMs }]
      : [],
  );
}
