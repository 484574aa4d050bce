/** The CLI configuration file (`railyard config`): where it lives, reading and writing its values. */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Repo } from '../contract/index.js';
import { parseRepoRef, repoProblem } from '../contract/repo-ref.js';
import { ConfigError } from '../input-error.js';

export const CONFIG_KEYS = ['api-url', 'token', 'org', 'repo', 'api-version'] as const;
export type ConfigKey = (typeof CONFIG_KEYS)[number];
export type Config = Partial<Record<ConfigKey, string>>;

export { DEFAULT_API_URL } from '../contract/constants.js';

/** `$XDG_CONFIG_HOME/railyard/config.json`, default `~/.config/railyard/config.json`. */
export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config');
  return join(base, 'railyard', 'config.json');
}

export { ConfigError };

export async function readConfig(path = configPath()): Promise<Config> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw error;
  }
  try {
    const parsed = JSON.parse(text) as unknown;
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
    return Object.fromEntries(
      Object.entries(parsed as Record<string, unknown>).filter(
        (e): e is [ConfigKey, string] =>
          (CONFIG_KEYS as readonly string[]).includes(e[0]) && typeof e[1] === 'string',
      ),
    );
  } catch (error) {
    throw new ConfigError(
      `config file ${path} is not valid JSON (${(error as Error).message}): fix or delete it`,
    );
  }
}

/** Writes the config atomically with mode 0600 (it may hold a token). */
export async function writeConfig(config: Config, path = configPath()): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(config, null, 2) + '\n', { mode: 0o600 });
  await chmod(tmp, 0o600);
  await rename(tmp, path);
}

/** Parses `host/owner/name` or `owner/name` (host github.com). */
export function parseRepo(text: string): Repo {
  const repo = parseRepoRef(text);
  if (!repo)
    throw new ConfigError(`--repo: expected host/owner/name or owner/name, got ${JSON.stringify(text)}`);
  // The server knows which forge serves the host; here a namespace path is taken for any owner.
  const problem = repoProblem(repo, true, '--repo');
  if (problem) throw new ConfigError(problem);
  return repo;
}

/** A path segment the git forge accepts (src/forge/git/repo.ts). */
const GIT_ROOT_SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/**
 * host/owner/name of a local repository path (or file:// URL) laid out as under a Railyard git root,
 * `DIR/<host>/<owner>/<name>.git` (`railyard serve --git-root DIR`), or null. The path must name a
 * bare repository: it ends in `.git`, or is one (HEAD and objects/ in it), or `<path>.git` exists.
 */
export function repoFromLocalPath(path: string): Repo | null {
  const trimmed = resolve(path); // normalised, no trailing separator
  const parts = trimmed.split(/[/\\]/).filter(Boolean);
  if (parts.length < 3) return null;
  const [host, owner, last] = parts.slice(-3) as [string, string, string];
  const name = last.replace(/\.git$/, '');
  const bare =
    last.endsWith('.git') ||
    existsSync(`${trimmed}.git`) ||
    (existsSync(join(trimmed, 'HEAD')) && existsSync(join(trimmed, 'objects')));
  if (!bare || ![host, owner, name].every((s) => GIT_ROOT_SEGMENT.test(s) && !s.includes('..'))) return null;
  return { host, owner, name };
}

/** host/owner/name of a git remote URL (https, ssh, scp-like, or a git-root path / file:// URL), or null. */
export function repoFromRemoteUrl(url: string, cwd = process.cwd()): Repo | null {
  const trimmed = url.trim();
  if (/^file:\/\//i.test(trimmed)) {
    try {
      return repoFromLocalPath(fileURLToPath(trimmed));
    } catch {
      return null;
    }
  }
  if (isAbsolute(trimmed) || /^\.\.?[/\\]/.test(trimmed)) return repoFromLocalPath(resolve(cwd, trimmed));
  let match = /^[a-z+]+:\/\/(?:[^@/]+@)?([^/:]+)(?::\d+)?\/(.+?)(?:\.git)?\/?$/i.exec(trimmed);
  if (!match) match = /^(?:[^@]+@)?([^:/]+):(.+?)(?:\.git)?\/?$/.exec(trimmed);
  if (!match) return null;
  const path = match[2].split('/').filter(Boolean);
  if (path.length < 2) return null;
  return { host: match[1], owner: path.slice(0, -1).join('/'), name: path[path.length - 1] };
}

/** The `origin` remote of the git checkout around `cwd`, if any. */
export function repoFromGitOrigin(cwd = process.cwd()): Repo | null {
  try {
    const url = execFileSync('git', ['remote', 'get-url', 'origin'], {
      cwd,
      stdio: ['ignore', 'pipe', 'ignore'],
      encoding: 'utf8',
    });
    return repoFromRemoteUrl(url, cwd);
  } catch {
    return null;
  }
}

/** Parses "90s", "5m", "1.5h", "2d" or plain seconds into milliseconds. */
export function parseDuration(text: string, flag: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/i.exec(text.trim());
  if (!match) throw new ConfigError(`${flag}: expected a duration like 30s, 5m, 2h or 7d, got "${text}"`);
  const unit = (match[2] ?? 's').toLowerCase();
  const factor = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[unit] as number;
  return Number(match[1]) * factor;
}

/** A point in time: an ISO 8601 date-time, or a duration back from `now` ("24h" = 24 hours ago). */
export function parseTime(text: string, flag: string, now = Date.now()): string {
  if (/^\s*\d+(?:\.\d+)?\s*(ms|s|m|h|d)\s*$/i.test(text))
    return new Date(now - parseDuration(text, flag)).toISOString();
  const at = Date.parse(text);
  if (Number.isNaN(at))
    throw new ConfigError(
      `${flag}: expected an ISO 8601 date-time or a duration back from now (24h, 7d), got "${text}"`,
    );
  return new Date(at).toISOString();
}
