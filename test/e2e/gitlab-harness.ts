/**
 * End-to-end harness for `railyard serve --gitlab`: the real built binary as a child process,
 * talking to the GitLab emulator of test/support/gitlab over real HTTP and real git.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestContext } from 'vitest';
import { startGitLabEmulator, type CiJob, type GitLabEmulator } from '../support/gitlab/index.js';
import type { TestServer } from '../support/server.js';
import { ok } from '../server/helpers.js';
import * as shared from '../support/forge-e2e.js';
import {
  API_TOKEN,
  baseUrlOf,
  checkAtCleanup,
  spawnRailyard,
  tempDir,
  type Pr,
  type RailyardProcess,
} from '../support/forge-e2e.js';

export { API_TOKEN, settled, tempDir, type RailyardProcess } from '../support/forge-e2e.js';

export const PROJECT = 'acme/platform/app';
export const GL_TOKEN = 'glpat-e2e-secret-token';
export const HOOK_SECRET = 'e2e-hook-secret';

export const cleanup = (): Promise<void> => shared.cleanup('the GitLab shapes');

/** A test body with its own cleanups (checked against the GitLab shapes), for tests that run side by side. */
export const scoped = <C extends TestContext>(fn: (ctx: C) => Promise<void>) =>
  shared.ownCleanups('the GitLab shapes', fn);

export async function emulator(options: { pathPrefix?: string } = {}): Promise<GitLabEmulator> {
  const gl = await startGitLabEmulator(options);
  checkAtCleanup(gl);
  gl.addToken(GL_TOKEN, { username: 'railyard-bot' });
  return gl;
}

export async function startRailyard(
  gl: GitLabEmulator,
  opts: {
    webhooks: boolean;
    dataDir: string;
    pollSeconds?: number;
    ciStartSeconds?: number;
    extraArgs?: string[];
  },
): Promise<RailyardProcess> {
  const secrets = tempDir('railyard-secrets-');
  writeFileSync(join(secrets, 'token'), GL_TOKEN + '\n');
  const args = [
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
  args.push(...(opts.extraArgs ?? []));
  const proc = await spawnRailyard(args, secrets, opts.dataDir);
  if (opts.webhooks) gl.setWebhook(`${baseUrlOf(proc)}/webhooks/gitlab`, HOOK_SECRET);
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

export function submit(
  server: TestServer,
  gl: GitLabEmulator,
  iid: number,
  extra: Record<string, unknown> = {},
) {
  return shared.submitTo(server, repoOf(gl), iid, extra);
}

export function waitFor(
  server: TestServer,
  gl: GitLabEmulator,
  iid: number,
  done: (pr: Pr) => boolean,
  timeoutMs = 30_000,
): Promise<Pr> {
  return shared.waitForPr(server, repoOf(gl), iid, `!${iid}`, done, timeoutMs);
}

export function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 30_000,
): Promise<void> {
  return shared.until(what, check, timeoutMs, 50);
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

/**
 * One test's GitLab world: the emulator with PROJECT (a README), CI on the test branches (`jobs`
 * for each, or one job passing after `ciMs`, default 100 ms), `railyard serve --gitlab` with
 * hooks, and with `queue` its queue for `main`.
 */
export async function gitlabWorld(
  opts: { jobs?: CiJob[]; ciMs?: number; pollSeconds?: number; dataDir?: string; queue?: boolean } = {},
): Promise<{ gl: GitLabEmulator; server: RailyardProcess }> {
  const gl = await emulator();
  gl.createProject(PROJECT, { files: { 'README.md': 'app\n' } });
  const jobs = opts.jobs;
  if (jobs) gl.setCi(PROJECT, (push) => (push.branch.startsWith('railyard-merge/') ? jobs : []));
  else ciOnTestBranches(gl, () => 'success', opts.ciMs ?? 100);
  const server = await startRailyard(gl, {
    webhooks: true,
    dataDir: opts.dataDir ?? tempDir('railyard-gl-'),
    ...(opts.pollSeconds === undefined ? {} : { pollSeconds: opts.pollSeconds }),
  });
  if (opts.queue) await createQueue(server, gl);
  return { gl, server };
}

/** The queue's note on an MR ('' before there is one). */
export const ourNote = (gl: GitLabEmulator, iid: number, path = PROJECT): string =>
  gl.notes(path, iid).find((n) => n.body.includes('railyard:merge-queue'))?.body ?? '';
