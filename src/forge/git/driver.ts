/**
 * The git forge driver (`serve --git-root DIR`): bare repositories on disk, PRs as
 * `refs/pull/N/head` (source.ts), test commits and checks (runs.ts), landing (lander.ts) and
 * polling for changes made outside the queue (events.ts).
 */
import { chmodSync, existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { checksRootPath, type CheckIsolationOptions } from '../../runner/index.js';
import type { ForgeDriver } from '../types.js';
import { GitEvents } from './events.js';
import { GitForge } from './source.js';
import { GitLander, OwnHeads } from './lander.js';
import { GitRuns } from './runs.js';

/** How checks are isolated and limited (src/runner/isolation.ts); parentDir defaults to the OS temp dir. */
export type GitChecksOptions = CheckIsolationOptions & { timeoutMs?: number; maxOutputBytes?: number };

export interface GitDriverOptions {
  /** Bare repositories under `<gitRoot>/<host>/<owner>/<name>.git`. */
  gitRoot: string;
  /** Check logs and worktrees go under it. */
  dataDir: string;
  /** How often repositories are polled (default 1000 ms). */
  pollMs?: number;
  checks?: GitChecksOptions;
  log?: (message: string, error?: unknown) => void;
}

export function createGitDriver(options: GitDriverOptions): ForgeDriver {
  const log = options.log ?? ((message: string, error?: unknown) => console.error(message, error ?? ''));
  const root = resolve(options.gitRoot);
  if (!existsSync(root) || !statSync(root).isDirectory())
    throw new Error(`--git-root: ${root} is not a directory`);
  const forge = new GitForge(root);
  const own = new OwnHeads();
  // Checks run code from pull requests: the data dir (database, logs of every run) is the server's alone.
  const dataDir = resolve(options.dataDir);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  chmodSync(dataDir, 0o700);
  // Under bwrap a check sees no repository but its own checkout, nor other checks' directories,
  // wherever they live (a git root under /opt is masked, not mounted read-only).
  const checksRoot = checksRootPath(options.checks?.parentDir ?? tmpdir(), dataDir);
  const checks = { ...options.checks, hide: [dataDir, root, checksRoot, ...(options.checks?.hide ?? [])] };
  // What a server of this data dir killed mid-run left behind goes now, not only when a check runs.
  rmSync(checksRoot, { recursive: true, force: true });
  const runs = new GitRuns(forge, dataDir, checks);
  const events = new GitEvents(forge, own, options.pollMs ?? 1000, log);
  return {
    kind: 'git',
    source: forge,
    builder: runs,
    ci: runs,
    lander: new GitLander(forge, own, log),
    events,
    async close() {
      await events.close();
      await runs.close();
    },
  };
}
