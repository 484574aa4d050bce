import { chmodSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { GitForge } from '../forge/git/index.js';
import { SandboxForge } from '../forge/sandbox.js';
import type { Forge } from '../forge/types.js';
import { GitHubClient, GitHubForge, type GitHubAuth } from '../forge/github/index.js';
import { GitExecutor, type GitExecutorOptions } from './executors/git.js';
import { GitHubExecutor } from './executors/github.js';
import { SandboxExecutor, type SandboxOutcomes } from './executors/sandbox.js';
import { QueueWorkers } from './workers.js';

export interface BackendOptions {
  dataDir: string;
  /** Bare repositories under DIR/<host>/<owner>/<name>.git; without it, the sandbox. */
  gitRoot?: string;
  sandbox?: Partial<SandboxOutcomes>;
  /** Repositories on GitHub (serve --github). */
  github?: GitHubBackendOptions;
  /** Git forge: how checks are isolated and limited (`serve --checks-*`). */
  checks?: GitExecutorOptions['checks'];
  /** Clock ticks and repository polls (ms); default 1000 / 500. */
  tickMs?: number;
  pollMs?: number;
  log?: (message: string, error?: unknown) => void;
}

export interface GitHubBackendOptions {
  apiUrl: string;
  host: string;
  auth: GitHubAuth;
  webhookSecret: string | null;
  pollMs: number;
  ciStartMs: number;
  writeIntervalMs: number;
}

export const DEFAULT_SANDBOX: SandboxOutcomes = { testSeconds: 5, failPrs: new Set(), failureRate: 0, seed: 1 };

/** Where PRs come from and who runs tests and merges: the git forge + runner, or the sandbox. */
export async function createBackend(options: BackendOptions): Promise<{ forge: Forge; workers: QueueWorkers }> {
  if (options.github) {
    const gh = options.github;
    const dataDir = resolve(options.dataDir);
    const log = options.log ?? ((message: string, error?: unknown) => console.error(message, error instanceof Error ? error.message : (error ?? '')));
    const client = new GitHubClient({ apiUrl: gh.apiUrl, auth: gh.auth, writeIntervalMs: gh.writeIntervalMs, log: (m) => log(m) });
    // Webhooks keep PR facts current; without them, a read is as fresh as the last poll.
    const forge = new GitHubForge(client, { host: gh.host, dataDir, freshMs: gh.webhookSecret !== null ? 10_000 : gh.pollMs });
    const executor = new GitHubExecutor(forge, { dataDir, pollMs: gh.pollMs, ciStartMs: gh.ciStartMs, webhookSecret: gh.webhookSecret, log });
    return { forge, workers: new QueueWorkers(executor, { tickMs: options.tickMs, log }) };
  }
  if (options.gitRoot !== undefined) {
    const root = resolve(options.gitRoot);
    if (!existsSync(root) || !statSync(root).isDirectory()) throw new Error(`--git-root: ${root} is not a directory`);
    const forge = new GitForge(root);
    // Checks run code from pull requests: the data dir (database, logs of every run) is the server's alone.
    const dataDir = resolve(options.dataDir);
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    chmodSync(dataDir, 0o700);
    const checks = { ...options.checks, hide: [dataDir, ...(options.checks?.hide ?? [])] };
    const executor = new GitExecutor(forge, { dataDir, pollMs: options.pollMs ?? 500, log: options.log, checks });
    return { forge, workers: new QueueWorkers(executor, { tickMs: options.tickMs, log: options.log }) };
  }
  const executor = new SandboxExecutor({ ...DEFAULT_SANDBOX, ...options.sandbox });
  return { forge: new SandboxForge(), workers: new QueueWorkers(executor, { tickMs: options.tickMs, log: options.log }) };
}
