import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { GitForge } from '../forge/git/index.js';
import { SandboxForge } from '../forge/sandbox.js';
import type { Forge } from '../forge/types.js';
import { GitExecutor } from './executors/git.js';
import { SandboxExecutor, type SandboxOutcomes } from './executors/sandbox.js';
import { QueueWorkers } from './workers.js';

export interface BackendOptions {
  dataDir: string;
  /** Bare repositories under DIR/<host>/<owner>/<name>.git; without it, the sandbox. */
  gitRoot?: string;
  sandbox?: Partial<SandboxOutcomes>;
  /** Clock ticks and repository polls (ms); default 1000 / 500. */
  tickMs?: number;
  pollMs?: number;
  log?: (message: string, error?: unknown) => void;
}

export const DEFAULT_SANDBOX: SandboxOutcomes = { testSeconds: 5, failPrs: new Set(), failureRate: 0, seed: 1 };

/** Where PRs come from and who runs tests and merges: the git forge + runner, or the sandbox. */
export async function createBackend(options: BackendOptions): Promise<{ forge: Forge; workers: QueueWorkers }> {
  if (options.gitRoot !== undefined) {
    const root = resolve(options.gitRoot);
    if (!existsSync(root) || !statSync(root).isDirectory()) throw new Error(`--git-root: ${root} is not a directory`);
    const forge = new GitForge(root);
    const executor = new GitExecutor(forge, { dataDir: resolve(options.dataDir), pollMs: options.pollMs ?? 500, log: options.log });
    return { forge, workers: new QueueWorkers(executor, { tickMs: options.tickMs, log: options.log }) };
  }
  const executor = new SandboxExecutor({ ...DEFAULT_SANDBOX, ...options.sandbox });
  return { forge: new SandboxForge(), workers: new QueueWorkers(executor, { tickMs: options.tickMs, log: options.log }) };
}
