/**
 * Git over smart HTTP against a remote forge, shared by the GitHub and GitLab drivers: the bare
 * cache of a repository (created once, aside, and renamed into place), and fetch, push and
 * ls-remote with the token given through the environment (HTTP Basic `<user>:<token>`: never in a
 * URL, argv or config file). GitHub's user is `x-access-token`, GitLab's `oauth2`.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { git, type GitResult } from '../../git/exec.js';

/** Caches this process is creating: callers that ask at the same time share one creation. */
const creating = new Map<string, Promise<void>>();

/**
 * Creates the bare cache on first use. The poll and the first test run of a new queue ask for it
 * at about the same moment (and `git init` takes half a second on a loaded machine); two
 * `git init`s in one directory race on its files (`config.lock`, hooks) and one fails, which
 * failed the run (START_TEST_RUN_INVALID_EVENT). So a creation in progress is shared, and the
 * cache is made aside and renamed into place: nobody, in this process or another, sees a half-made one.
 */
export function ensureCache(dir: string): Promise<void> {
  if (existsSync(join(dir, 'HEAD'))) return Promise.resolve();
  let made = creating.get(dir);
  if (!made) {
    made = createCache(dir).finally(() => creating.delete(dir));
    creating.set(dir, made);
  }
  return made;
}

async function initCache(dir: string): Promise<void> {
  await git(dir, ['init', '--bare', '--quiet']);
  // Objects fetched from the forge are kept; the queue's own commits are referenced by test branches.
  await git(dir, ['config', 'gc.auto', '0']);
}

async function createCache(dir: string): Promise<void> {
  await mkdir(dirname(dir), { recursive: true });
  const aside = await mkdtemp(`${dir}.new-`);
  try {
    await initCache(aside);
    await rename(aside, dir);
    return;
  } catch (error) {
    await rm(aside, { recursive: true, force: true });
    if (existsSync(join(dir, 'HEAD'))) return; // another process made it meanwhile
    // Not there: rename failed because a half-made directory is in the way (a crash of an older version).
    if (!existsSync(dir)) throw error;
  }
  await initCache(dir);
}

/**
 * Git's authentication for one command (GIT_CONFIG_COUNT: the same as `-c http.extraHeader=…`, but
 * not visible in the process list and never written to a config file).
 */
export function authEnv(user: string, token: string): Record<string, string> {
  const basic = Buffer.from(`${user}:${token}`).toString('base64');
  return {
    GIT_CONFIG_COUNT: '1',
    GIT_CONFIG_KEY_0: 'http.extraHeader',
    GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
  };
}

/** A git error message with any URL credentials removed (clone URLs never carry them, but be safe). */
function scrub(error: unknown): unknown {
  if (error instanceof Error) error.message = error.message.replace(/\/\/[^/@\s]*@/g, '//');
  return error;
}

/** Fetch, push and ls-remote against one forge (its HTTP Basic user name). */
export interface RemoteGit {
  /** `git fetch <url> <refspecs…>` into the cache (forced updates: the cache mirrors the forge). */
  fetchRefs(dir: string, url: string, token: string, refspecs: readonly string[]): Promise<void>;
  /** `git push <url> <refspecs…>` with extra options (e.g. `--force-with-lease=…`). */
  pushRefs(dir: string, url: string, token: string, refspecs: readonly string[], options?: readonly string[]): Promise<void>;
  /** Branch heads on the forge (`git ls-remote --heads`): branch name → SHA. */
  remoteHeads(dir: string, url: string, token: string): Promise<Map<string, string>>;
}

export function remoteGit(user: string): RemoteGit {
  const remote = async (dir: string, token: string, args: string[]): Promise<GitResult> => {
    try {
      return await git(dir, args, { env: authEnv(user, token) });
    } catch (error) {
      throw scrub(error);
    }
  };
  return {
    async fetchRefs(dir, url, token, refspecs) {
      if (refspecs.length === 0) return;
      await remote(dir, token, ['fetch', '--quiet', '--no-tags', '--no-write-fetch-head', url, ...refspecs]);
    },
    async pushRefs(dir, url, token, refspecs, options = []) {
      if (refspecs.length === 0) return;
      // Not --quiet: a forge's reasons for refusing a push come as `remote:` lines.
      await remote(dir, token, ['push', '--no-verify', '--porcelain', ...options, url, ...refspecs]);
    },
    async remoteHeads(dir, url, token) {
      const r = await remote(dir, token, ['ls-remote', '--heads', url]);
      const heads = new Map<string, string>();
      for (const line of r.stdout.split('\n')) {
        const [sha, ref] = line.split('\t');
        if (sha && ref?.startsWith('refs/heads/')) heads.set(ref.slice('refs/heads/'.length), sha);
      }
      return heads;
    },
  };
}
