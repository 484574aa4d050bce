/**
 * The git forge as `railyard serve` knows it (`serve --git-root DIR`): its flags (the root and how
 * checks are isolated and limited); its settings from them, refusing a checks directory or an
 * isolation that cannot hold and warning when checks could read the server's data. It has no web
 * pages: the server links to its dashboard. The driver is imported only when picked.
 */
import type { ForgeDescription } from '../types.js';
import type { GitChecksOptions } from './driver.js';

export interface GitSettings {
  /** Bare repositories under `<gitRoot>/<host>/<owner>/<name>.git`. */
  gitRoot: string;
  checks?: GitChecksOptions;
  /** Which check limits hold on this machine and which do not (printed at start). */
  checkLimits?: string[];
}

export const git: ForgeDescription<GitSettings> = {
  kind: 'git',
  picker: 'git-root',
  hint: '--git-root DIR (bare git repositories)',
  examples: [
    {
      description: "Two organisations over one git root: each owns its GitHub owner's repositories",
      command:
        '<%= config.bin %> serve --git-root /srv/git --org-token acme="$ACME_TOKEN" --org-token globex="$GLOBEX_TOKEN" ' +
        '--org-repos acme=github.com/acme/* --org-repos globex=github.com/globex/*',
    },
  ],
  flags: {
    'git-root': {
      type: 'string',
      description:
        'Serve the bare repositories at DIR/<host>/<owner>/<name>.git: PR N is refs/pull/N/head, checks come from railyard.json',
      helpValue: 'DIR',
    },
    'checks-sandbox': {
      type: 'string',
      description:
        'Git root: how checks (code from pull requests) are isolated. none: a directory and, when serving as root, a uid of their own, ' +
        'an allowlisted environment; bwrap: also inside bubblewrap (apt-get install bubblewrap), seeing only system directories and their checkout',
      options: ['none', 'bwrap'],
      default: 'none',
    },
    'checks-dir': {
      type: 'string',
      description:
        'Git root: where each check gets its directory (checkout, HOME, TMPDIR); never inside --data-dir (default: the OS temp dir)',
      helpValue: 'DIR',
    },
    'checks-timeout-minutes': {
      type: 'integer',
      description: 'Git root: wall-clock limit of one check (0 = none)',
      default: 60,
      min: 0,
    },
    'checks-output-mib': {
      type: 'integer',
      description: 'Git root: output kept per check; the rest is cut with a note in its log',
      default: 16,
      min: 1,
    },
    'checks-memory-mib': {
      type: 'integer',
      description: 'Git root: memory of one check, all its processes (killed above it; see docs/checks.md)',
      default: 4096,
      min: 16,
    },
    'checks-processes': {
      type: 'integer',
      description: 'Git root: processes and threads of one check at once (killed at it)',
      default: 1024,
      min: 8,
    },
    'checks-tmp-mib': {
      type: 'integer',
      description: "Git root, --checks-sandbox bwrap: size of a check's /tmp, /var/tmp and /dev/shm each",
      default: 1024,
      min: 1,
    },
    'checks-disk-mib': {
      type: 'integer',
      description: "Git root: disk of one check's own directory (checkout, HOME, TMPDIR; killed above it)",
      default: 20480,
      min: 1,
    },
    'checks-uid-base': {
      type: 'integer',
      description:
        'Git root, serving as root: checks run as uids from this one up (one per running check), never as root',
      default: 61184,
      min: 1,
    },
  },
  async settings(flags, { dataDir, secretFiles, warn }) {
    const checks: GitChecksOptions = {
      sandbox: flags['checks-sandbox'] as 'none' | 'bwrap',
      parentDir: flags['checks-dir'] as string | undefined,
      uidBase: flags['checks-uid-base'] as number,
      timeoutMs: (flags['checks-timeout-minutes'] as number) * 60_000,
      maxOutputBytes: (flags['checks-output-mib'] as number) * 1024 * 1024,
      limits: {
        memoryMib: flags['checks-memory-mib'] as number,
        processes: flags['checks-processes'] as number,
        tmpMib: flags['checks-tmp-mib'] as number,
        diskMib: flags['checks-disk-mib'] as number,
      },
      hide: secretFiles,
    };
    const gitRoot = flags['git-root'] as string;
    const { checksDirProblem, DEFAULT_CHECK_LIMITS, describeLimits, gitRootExposure, isolationProblem } =
      await import('../../runner/index.js');
    const problem =
      checksDirProblem(checks.parentDir ?? (await import('node:os')).tmpdir(), dataDir) ??
      (await isolationProblem(checks));
    if (problem) throw new Error(problem);
    const exposed = checks.sandbox === 'none' && process.getuid?.() === 0 ? gitRootExposure(gitRoot) : null;
    if (exposed) warn(`warning: ${exposed}`);
    if (checks.sandbox === 'none' && process.getuid?.() !== 0) {
      warn(
        "warning: checks run code from pull requests as this server's own user, who can read --data-dir (the database, every run's logs): " +
          'use --checks-sandbox bwrap, or run the server as root so that each check runs as a uid of its own',
      );
    }
    const checkLimits = await describeLimits(
      { ...DEFAULT_CHECK_LIMITS, ...checks.limits },
      checks.sandbox ?? 'none',
    );
    return { gitRoot, checks, checkLimits };
  },
  startup: (settings) =>
    settings.checkLimits ? [`Check limits (--checks-*): ${settings.checkLimits.join('; ')}`] : [],
  driver: async (settings, common) =>
    (await import('./driver.js')).createGitDriver({
      gitRoot: settings.gitRoot,
      dataDir: common.dataDir,
      pollMs: common.pollMs ?? 500,
      log: common.log,
      checks: settings.checks,
    }),
};
