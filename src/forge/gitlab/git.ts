/**
 * Git over smart HTTP against GitLab: authentication through the environment (HTTP Basic with the
 * token as password, user `oauth2`; never in a URL, argv or config file) and where the bare cache of
 * a project lives: `<dataDir>/gitlab/<host>/<group>/<subgroup>/<project>.git`.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { withoutTrailingSlashes } from '../../contract/common.js';
import type { Repo } from '../../contract/index.js';
import { git, type GitResult } from '../git/exec.js';
import { invalidGitLabRepo } from './repo.js';

/** Git's authentication for one command (GIT_CONFIG_COUNT: `-c http.extraHeader=…` without showing it in ps). */
export function authEnv(token: string): Record<string, string> {
  const basic = Buffer.from(`oauth2:${token}`).toString('base64');
  return {
    GIT_CONFIG_COUNT: '1',
    GIT_CONFIG_KEY_0: 'http.extraHeader',
    GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
  };
}

/** The bare cache of a project; throws when the repo's names could escape the directory. */
export function cacheDirFor(dataDir: string, repo: Repo): string {
  const bad = invalidGitLabRepo(repo);
  if (bad) throw new Error(bad);
  if (!/^[A-Za-z0-9.-]+(:\d+)?$/.test(repo.host))
    throw new Error(`repo.host: "${repo.host}" is not a host name`);
  return join(dataDir, 'gitlab', repo.host.replace(/:/g, '_'), ...repo.owner.split('/'), `${repo.name}.git`);
}

/** The clone URL of a project under a GitLab base URL (which may carry a relative URL root). */
export function cloneUrlOf(baseUrl: string, repo: Pick<Repo, 'owner' | 'name'>): string {
  return `${withoutTrailingSlashes(baseUrl)}/${repo.owner}/${repo.name}.git`;
}

/** Caches being created in this process: callers asking at the same time share one creation. */
const creating = new Map<string, Promise<void>>();

/** Creates the bare cache on first use (made aside and renamed into place: nobody sees a half-made one). */
export function ensureCache(dir: string): Promise<void> {
  if (existsSync(join(dir, 'HEAD'))) return Promise.resolve();
  let made = creating.get(dir);
  if (!made) {
    made = (async () => {
      await mkdir(dirname(dir), { recursive: true });
      const aside = await mkdtemp(`${dir}.new-`);
      try {
        await git(aside, ['init', '--bare', '--quiet']);
        await git(aside, ['config', 'gc.auto', '0']);
        await rename(aside, dir);
      } catch (error) {
        await rm(aside, { recursive: true, force: true });
        if (!existsSync(join(dir, 'HEAD'))) throw error;
      }
    })().finally(() => creating.delete(dir));
    creating.set(dir, made);
  }
  return made;
}

/** A git error with any URL credentials removed (clone URLs never carry them, but be safe). */
function scrub(error: unknown): unknown {
  if (error instanceof Error) error.message = error.message.replace(/\/\/[^/@\s]*@/g, '//');
  return error;
}

async function remote(dir: string, token: string, args: string[]): Promise<GitResult> {
  try {
    return await git(dir, args, { env: authEnv(token) });
  } catch (error) {
    throw scrub(error);
  }
}

/** `git fetch <url> <refspecs…>` into the cache (forced updates: the cache mirrors GitLab). */
export async function fetchRefs(
  dir: string,
  url: string,
  token: string,
  refspecs: readonly string[],
): Promise<void> {
  if (refspecs.length === 0) return;
  await remote(dir, token, ['fetch', '--quiet', '--no-tags', '--no-write-fetch-head', url, ...refspecs]);
}

/** `git push <url> <refspecs…>` with extra options (e.g. `--force-with-lease=…`). */
export async function pushRefs(
  dir: string,
  url: string,
  token: string,
  refspecs: readonly string[],
  options: readonly string[] = [],
): Promise<void> {
  if (refspecs.length === 0) return;
  // Not --quiet: GitLab's reasons for refusing a push come as `remote:` lines.
  await remote(dir, token, ['push', '--no-verify', '--porcelain', ...options, url, ...refspecs]);
}

/** Branch heads on GitLab (`git ls-remote --heads`): branch → SHA. */
export async function remoteHeads(dir: string, url: string, token: string): Promise<Map<string, string>> {
  const r = await remote(dir, token, ['ls-remote', '--heads', url]);
  const heads = new Map<string, string>();
  for (const line of r.stdout.split('\n')) {
    const [sha, ref] = line.split('\t');
    if (sha && ref?.startsWith('refs/heads/')) heads.set(ref.slice('refs/heads/'.length), sha);
  }
  return heads;
}
