/**
 * The `railyard.pr-N.base` settings of a repository's git config, read by every poll of the git
 * forge: one `git config` process per poll while the config is unchanged cost a process spawn
 * (milliseconds of CPU for a large server process) per repository per second. The parse is kept
 * while the text of every file git reads config from (and the environment that names them) is
 * unchanged; config that includes other files is read by git every time.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { git } from '../../git/exec.js';

const cache = new Map<string, { stamp: string; bases: ConfiguredBases }>();
const CACHE_MAX = 1_000;

function readOrNull(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/**
 * What decides `git config --get-regexp`'s answer for `repoDir`: the repository's config, the
 * global, XDG and system files and the GIT_CONFIG* environment. Null (do not cache) when a file
 * includes others or the repository has per-worktree config: their contents are not looked at here.
 */
function configStamp(repoDir: string): string | null {
  const env = process.env;
  const home = env.HOME ?? '';
  const xdg = env.XDG_CONFIG_HOME || (home ? path.join(home, '.config') : '');
  const files = [
    path.join(repoDir, 'config'),
    env.GIT_CONFIG_GLOBAL ?? (home ? path.join(home, '.gitconfig') : ''),
    xdg ? path.join(xdg, 'git', 'config') : '',
    env.GIT_CONFIG_SYSTEM ?? '/etc/gitconfig',
  ];
  const contents = files.map((f) => (f ? readOrNull(f) : null));
  if (contents.some((c) => c !== null && /\[\s*include|worktreeconfig/i.test(c))) return null;
  const vars = Object.keys(env)
    .filter((k) => k.startsWith('GIT_CONFIG') || k === 'HOME' || k === 'XDG_CONFIG_HOME')
    .sort()
    .map((k) => `${k}=${env[k]}`);
  return JSON.stringify([vars, files, contents]);
}

export interface ConfiguredBases {
  /** PR number → base branch, for snapshots (the first line of the value, trimmed). */
  byNumber: Map<number, string>;
  /** Exact key (`railyard.pr-N.base` as git prints it) → its last value, as `git config --get` answers. */
  byKey: Map<string, string>;
}

async function readBases(repoDir: string): Promise<ConfiguredBases> {
  // -z: "key\nvalue\0" per entry ("key\0" for a key without value), values exactly as set.
  const r = await git(repoDir, ['config', '-z', '--get-regexp', '^railyard\\.pr-[0-9]+\\.base$'], { okCodes: [0, 1] });
  const byNumber = new Map<number, string>();
  const byKey = new Map<string, string>();
  for (const entry of r.stdout.split('\0')) {
    if (!entry) continue;
    const nl = entry.indexOf('\n');
    const key = nl < 0 ? entry : entry.slice(0, nl);
    const value = nl < 0 ? '' : entry.slice(nl + 1);
    byKey.set(key, value);
    const m = /^railyard\.pr-(\d+)\.base$/.exec(key);
    const first = value.split('\n')[0]!.trim();
    if (m && first) byNumber.set(Number(m[1]), first);
  }
  return { byNumber, byKey };
}

/** The repository's `railyard.pr-N.base` settings: one `git config` while no config file changed. */
export async function configuredBases(repoDir: string): Promise<ConfiguredBases> {
  const stamp = configStamp(repoDir);
  const hit = stamp === null ? undefined : cache.get(repoDir);
  if (hit && hit.stamp === stamp) return hit.bases;
  const bases = await readBases(repoDir);
  // Stamped before git read the files: a change made meanwhile differs from the stamp next time.
  if (stamp !== null) {
    if (!cache.has(repoDir) && cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
    cache.set(repoDir, { stamp, bases });
  }
  return bases;
}
