/**
 * The forge drivers a server can run. `railyard serve` passes its forge settings; the first
 * driver whose settings are present is used, the sandbox otherwise. Adding a forge is one folder
 * under src/forge/ plus one line in DRIVERS (and its settings in ForgeSettings).
 *
 * A driver's module is imported only when its settings pick it: a server on the sandbox or the git
 * forge never loads Octokit or @gitbeaker (their module graphs were about a third of what a server
 * loaded at start, paid again by every test file that starts one).
 */
import type { GitChecksOptions } from './git/driver.js';
import type { GitHubSettings } from './github/driver.js';
import type { GitLabSettings } from './gitlab/driver.js';
import type { SandboxOutcomes } from './sandbox/index.js';
import type { ForgeDriver } from './types.js';

export { DEFAULT_SANDBOX } from './sandbox/ci.js';
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
  /** Whether the settings ask for this driver. */
  wanted(settings: ForgeSettings): boolean;
  /** The driver (its folder imported only now). */
  create(settings: ForgeSettings, common: DriverCommon): Promise<ForgeDriver>;
}

export const DRIVERS: readonly DriverEntry[] = [
  { kind: 'github', wanted: (s) => Boolean(s.github), create: async (s, c) => (await import('./github/driver.js')).createGitHubDriver(s.github!, c) },
  { kind: 'gitlab', wanted: (s) => Boolean(s.gitlab), create: async (s, c) => (await import('./gitlab/driver.js')).createGitLabDriver(s.gitlab!, c) },
  {
    kind: 'git',
    wanted: (s) => s.gitRoot !== undefined,
    create: async (s, c) =>
      (await import('./git/driver.js')).createGitDriver({ gitRoot: s.gitRoot!, dataDir: c.dataDir, pollMs: c.pollMs ?? 500, log: c.log, checks: s.checks }),
  },
  { kind: 'sandbox', wanted: () => true, create: async (s) => (await import('./sandbox/index.js')).createSandboxDriver(s.sandbox) },
];

/** The driver the settings ask for (the sandbox when none does). */
export async function createDriver(settings: ForgeSettings, common: DriverCommon): Promise<ForgeDriver> {
  const entry = DRIVERS.find((d) => d.wanted(settings));
  if (!entry) throw new Error('no forge driver');
  return entry.create(settings, common);
}
