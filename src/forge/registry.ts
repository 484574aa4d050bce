/**
 * The forge drivers a server can run. `railyard serve` passes its forge settings; the first
 * driver whose settings are present is used, the sandbox otherwise. Adding a forge is one folder
 * under src/forge/ plus one line in DRIVERS (and its settings in ForgeSettings).
 */
import { createGitDriver, type GitChecksOptions } from './git/driver.js';
import { createGitHubDriver, type GitHubSettings } from './github/driver.js';
import { createGitLabDriver, type GitLabSettings } from './gitlab/driver.js';
import { createSandboxDriver, type SandboxOutcomes } from './sandbox/index.js';
import type { ForgeDriver } from './types.js';

export { DEFAULT_SANDBOX } from './sandbox/index.js';
export type { GitHubSettings, SandboxOutcomes };

/** What every driver may use. */
export interface DriverCommon {
  /** The server's data directory (caches, check logs, driver state). */
  dataDir: string;
  /** How often repositories are polled (ms), for drivers that poll and have no setting of their own. */
  pollMs?: number;
  log?: (message: string, error?: unknown) => void;
}

/** The settings of each forge; the one given picks the driver. */
export interface ForgeSettings {
  /** Repositories on GitHub (serve --github). */
  github?: GitHubSettings;
  /** Projects on GitLab (serve --gitlab). */
  gitlab?: GitLabSettings;
  /** Bare repositories under DIR/<host>/<owner>/<name>.git (serve --git-root). */
  gitRoot?: string;
  /** Git forge: how checks are isolated and limited (`serve --checks-*`). */
  checks?: GitChecksOptions;
  /** Simulated runs (serve --sandbox, the default). */
  sandbox?: Partial<SandboxOutcomes>;
}

interface DriverEntry {
  kind: string;
  /** The driver, or undefined when its settings are absent. */
  create(settings: ForgeSettings, common: DriverCommon): ForgeDriver | undefined;
}

export const DRIVERS: readonly DriverEntry[] = [
  { kind: 'github', create: (s, c) => (s.github ? createGitHubDriver(s.github, c) : undefined) },
  { kind: 'gitlab', create: (s, c) => (s.gitlab ? createGitLabDriver(s.gitlab, c) : undefined) },
  { kind: 'git', create: (s, c) => (s.gitRoot !== undefined ? createGitDriver({ gitRoot: s.gitRoot, dataDir: c.dataDir, pollMs: c.pollMs ?? 500, log: c.log, checks: s.checks }) : undefined) },
  { kind: 'sandbox', create: (s) => createSandboxDriver(s.sandbox) },
];

/** The driver the settings ask for (the sandbox when none does). */
export function createDriver(settings: ForgeSettings, common: DriverCommon): ForgeDriver {
  for (const entry of DRIVERS) {
    const driver = entry.create(settings, common);
    if (driver) return driver;
  }
  throw new Error('no forge driver');
}
