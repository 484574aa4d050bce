/**
 * How a check is kept from the server: checks are code from pull requests, so they run the way a
 * self-hosted CI runner runs a job. Each check gets a directory of its own outside the data dir
 * (a clone of the test commit, its HOME and TMPDIR), an environment built from an allowlist, and,
 * when the server runs as root, a uid of its own (from a small pool, so two checks running at once
 * cannot read or signal each other) that owns nothing of the server's. With `bwrap` (Debian's
 * bubblewrap) the check also runs in its own mount, pid, ipc and uts namespaces, seeing only the
 * system directories (read-only) and its own directory (writable). Limits and the start-up
 * prelude are in limits.ts, uid claims in identity.ts; docs/checks.md says what each mode protects
 * against.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants, realpathSync, statSync } from 'node:fs';
import { chmod, lchown, lstat, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { gitEnv } from '../git/exec.js';
import { RUNNER_ENV } from '../checks/config.js';
import { acquireIdentity, type CheckIdentity } from './identity.js';
import type { CheckLimits } from './limits.js';

const run = promisify(execFile);

export type ChecksSandbox = 'none' | 'bwrap';
export const CHECKS_SANDBOXES: readonly ChecksSandbox[] = ['none', 'bwrap'];

/** Per-check defaults: one hour, 16 MiB of output. */
export const DEFAULT_CHECK_TIMEOUT_MS = 60 * 60_000;
export const DEFAULT_CHECK_OUTPUT_BYTES = 16 * 1024 * 1024;

export interface CheckIsolationOptions {
  /** `none` (default): own directory, own uid when root, allowlisted environment. `bwrap`: also its own namespaces. */
  sandbox?: ChecksSandbox;
  /** Where the checks' directories go (default: the OS temp dir). Must not be inside the data dir. */
  parentDir?: string;
  /** Paths a check must never see even where system directories are mounted (bwrap): data dir, secret files. */
  hide?: readonly string[];
  /** First uid of the pool (root only). */
  uidBase?: number;
  /** Memory, processes, bwrap's /tmp and disk of each check (limits.ts; defaults DEFAULT_CHECK_LIMITS). */
  limits?: Partial<CheckLimits>;
}

export {
  acquireIdentity,
  killAllOf,
  removeFilesOf,
  DEFAULT_CHECK_UID_BASE,
  type CheckIdentity,
} from './identity.js';

// ------------------------------------------------------------------ directories

/**
 * The parent of every check directory of one server: `<parent>/railyard-checks-<hash of the data
 * dir>`, mode 0711 (a check reaches its own directory, lists nobody's). Emptied when created, so
 * what a server killed mid-run left is removed on its next start.
 */
export async function prepareChecksRoot(parent: string, dataDir: string): Promise<string> {
  const problem = checksDirProblem(parent, dataDir);
  if (problem) throw new Error(problem);
  const dir = checksRootPath(parent, dataDir);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true, mode: 0o711 });
  await chmod(dir, 0o711);
  return dir;
}

/** Where `prepareChecksRoot` puts the check directories of the server of `dataDir` (nothing is created). */
export function checksRootPath(parent: string, dataDir: string): string {
  const data = path.resolve(dataDir);
  return path.join(
    path.resolve(parent),
    `railyard-checks-${createHash('sha256').update(data).digest('hex').slice(0, 12)}`,
  );
}

/** Why checks cannot have their directories under `parent`, or null. */
export function checksDirProblem(parent: string, dataDir: string): string | null {
  const root = path.resolve(parent);
  const data = path.resolve(dataDir);
  if (root === data || root.startsWith(data + path.sep)) {
    return `--checks-dir: ${root} is inside the data dir ${data}: checks must not live where the database and logs are`;
  }
  return null;
}

/**
 * Other users may read the git root: checks running as a uid of their own (`--checks-sandbox
 * none`) could read every repository of it, other owners' included. Null when only its owner can.
 */
export function gitRootExposure(gitRoot: string): string | null {
  try {
    const mode = statSync(gitRoot).mode & 0o777;
    if ((mode & 0o005) === 0) return null;
    return `--git-root ${gitRoot} (mode ${mode.toString(8).padStart(4, '0')}) can be read by other users: checks, which run as uids of their own, could read every repository in it. chmod 0700 it (checks do not need it), or use --checks-sandbox bwrap`;
  } catch {
    return null;
  }
}

/** Why a check running as `uid` cannot reach `dir`, or null: every ancestor must be searchable by others. */
export function unreachableBy(dir: string, uid: number): string | null {
  let current = path.resolve(dir);
  for (;;) {
    const st = statSync(current);
    const searchable = st.uid === uid ? (st.mode & 0o100) !== 0 : (st.mode & 0o001) !== 0;
    if (!searchable) {
      return `${current} (mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}) cannot be entered by the checks' uid ${uid}: make it 0711 or put the checks elsewhere with --checks-dir`;
    }
    const up = path.dirname(current);
    if (up === current) return null;
    current = up;
  }
}

export interface CheckDir {
  /** The check's own directory (0700, owned by its uid). */
  dir: string;
  /** The clone of the test commit: the check's working directory. */
  work: string;
  home: string;
  tmp: string;
  remove(): Promise<void>;
}

async function gitIn(cwd: string, args: string[]): Promise<void> {
  await run('git', args, { cwd, env: gitEnv(), maxBuffer: 16 * 1024 * 1024 });
}

/** chown -R that leaves alone files shared with the bare repository (hard links of its objects). */
async function chownTree(dir: string, uid: number, gid: number): Promise<void> {
  const st = await lstat(dir);
  await lchown(dir, uid, gid);
  if (!st.isDirectory()) return;
  for (const name of await readdir(dir)) {
    const p = path.join(dir, name);
    const s = await lstat(p);
    if (s.isDirectory()) await chownTree(p, uid, gid);
    else if (!(s.isFile() && s.nlink > 1)) await lchown(p, uid, gid);
  }
}

/**
 * A directory for one check under `root`: `work/` is a clone of `repoDir` checked out at `sha`
 * (detached; git hard-links the objects, which stay the bare repository's and read-only, and copies
 * them when the checks dir is on another filesystem than the git root), `home/` and `tmp/` are empty. Owned by `identity` when there is one. The check needs
 * no access to the git root: the clone is complete, with the history of every branch.
 */
export async function createCheckDir(
  root: string,
  repoDir: string,
  sha: string,
  identity: CheckIdentity | null,
): Promise<CheckDir> {
  const dir = await mkdtemp(path.join(root, 'check-'));
  const remove = async () => {
    await rm(dir, { recursive: true, force: true, maxRetries: 2 }).catch(() => undefined);
  };
  try {
    const work = path.join(dir, 'work');
    await gitIn(dir, ['clone', '--quiet', '--no-checkout', '--', repoDir, work]);
    await gitIn(work, ['-c', 'advice.detachedHead=false', 'checkout', '--quiet', '--detach', sha]);
    const home = path.join(dir, 'home');
    const tmp = path.join(dir, 'tmp');
    await mkdir(home, { mode: 0o700 });
    await mkdir(tmp, { mode: 0o700 });
    await chmod(dir, 0o700);
    if (identity) await chownTree(dir, identity.uid, identity.gid);
    return { dir, work, home, tmp, remove };
  } catch (error) {
    await remove();
    throw error;
  }
}

// ------------------------------------------------------------------ environment

/** Names a railyard.json may not set (it refuses them): they would undo the isolation or lie about the check. */
const RESERVED_ENV = new Set(RUNNER_ENV);

export function reservedEnvName(name: string): boolean {
  return RESERVED_ENV.has(name);
}

/**
 * The whole environment of a check: PATH and LANG of the server, HOME and TMPDIR of its own,
 * CI=true, RAILYARD_SHA and RAILYARD_CHECK, and what railyard.json declares. Nothing else of the
 * server's environment (tokens, database URL, GitHub credentials) reaches it.
 */
export function checkEnv(
  base: { home: string; tmp: string; sha: string; check: string },
  declared: Record<string, string> = {},
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH || '/usr/local/bin:/usr/bin:/bin',
    LANG: process.env.LANG || 'C.UTF-8',
    USER: 'railyard-check',
    LOGNAME: 'railyard-check',
    GIT_TERMINAL_PROMPT: '0',
  };
  for (const [k, v] of Object.entries(declared)) if (!RESERVED_ENV.has(k)) env[k] = v;
  Object.assign(env, {
    HOME: base.home,
    TMPDIR: base.tmp,
    CI: 'true',
    RAILYARD_SHA: base.sha,
    RAILYARD_CHECK: base.check,
  });
  return env;
}

// ------------------------------------------------------------------ the command

/** System directories a sandboxed check sees, read-only (when they exist). */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc', '/opt'];

/**
 * `sh -c <command>`, or the same inside bubblewrap seeing only the system, `dir.dir` and tmpfs
 * /tmp, /var/tmp and /dev/shm of `tmpMib` each. What `hide` names (data dir, git root, checks root,
 * secret files) is masked wherever it lives under a mounted system directory.
 */
export function checkCommand(
  sandbox: ChecksSandbox,
  dir: CheckDir,
  command: string,
  hide: readonly string[] = [],
  tmpMib = 1024,
): { file: string; args: string[] } {
  const sh = ['sh', '-c', command];
  if (sandbox === 'none') return { file: 'sh', args: sh.slice(1) };
  const args = [
    '--die-with-parent',
    '--unshare-user',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
  ];
  for (const d of SYSTEM_DIRS) args.push('--ro-bind-try', d, d);
  const size = String(tmpMib * 1024 * 1024);
  args.push('--proc', '/proc', '--dev', '/dev');
  for (const t of ['/tmp', '/var/tmp', '/dev/shm']) args.push('--size', size, '--tmpfs', t);
  for (const h of new Set(hide.flatMap((p) => [path.resolve(p), realOrSelf(p)]))) {
    if (!SYSTEM_DIRS.some((d) => h === d || h.startsWith(d + '/'))) continue;
    let isDir = false;
    try {
      isDir = statSync(h).isDirectory();
    } catch {
      continue;
    }
    if (isDir) args.push('--tmpfs', h);
    else args.push('--ro-bind', '/dev/null', h);
  }
  args.push('--bind', dir.dir, dir.dir, '--chdir', dir.work, '--', ...sh);
  return { file: 'bwrap', args };
}

function realOrSelf(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

/**
 * Whether checks can run here as configured: bubblewrap installed and able to make its
 * namespaces (as the checks' uid), the pool's uid usable. Null when fine, else the problem and
 * the fix, in one line.
 */
export async function isolationProblem(options: CheckIsolationOptions): Promise<string | null> {
  let identity: CheckIdentity | null;
  try {
    identity = await acquireIdentity(options.uidBase);
  } catch (error) {
    return (error as Error).message;
  }
  try {
    const ids = identity ? { uid: identity.uid, gid: identity.gid } : {};
    const env = { PATH: process.env.PATH || '/usr/bin:/bin' };
    const cwd = os.tmpdir();
    // Every check starts through a bash prelude that drops to its uid with setpriv (limits.ts).
    const drop = identity
      ? ['setpriv', `--reuid=${identity.uid}`, `--regid=${identity.gid}`, '--clear-groups', '--']
      : [];
    try {
      await run('bash', ['-c', 'exec "$@"', 'railyard-check', ...drop, 'true'], { env, cwd });
    } catch (error) {
      return `checks: cannot start a check through bash${identity ? ` and setpriv (util-linux) as uid ${identity.uid}` : ''} (${(error as Error).message.split('\n')[0]}): install them, or choose a uid this system maps with --checks-uid-base`;
    }
    if ((options.sandbox ?? 'none') === 'bwrap') {
      try {
        accessSync('/usr/bin/bwrap', constants.X_OK);
      } catch {
        try {
          await run('bwrap', ['--version'], { env });
        } catch {
          return '--checks-sandbox bwrap: bubblewrap is not installed (Debian: apt-get install bubblewrap), or use --checks-sandbox none';
        }
      }
      try {
        await run(
          'bwrap',
          [
            '--unshare-user',
            '--unshare-pid',
            '--ro-bind',
            '/',
            '/',
            '--dev',
            '/dev',
            '--proc',
            '/proc',
            'true',
          ],
          { env, cwd: '/', ...ids },
        );
      } catch (error) {
        const why = String((error as { stderr?: string }).stderr || (error as Error).message)
          .trim()
          .split('\n')[0];
        return `--checks-sandbox bwrap: bubblewrap cannot create its namespaces here (${why}): allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1) or use --checks-sandbox none`;
      }
    } else if (identity) {
      try {
        await run('true', [], { env, cwd, ...ids });
      } catch (error) {
        return `checks: cannot run a check as uid ${identity.uid} (${(error as Error).message}): choose a uid this system maps with --checks-uid-base`;
      }
    }
    return null;
  } finally {
    identity?.release();
  }
}
