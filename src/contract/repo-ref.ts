/**
 * Reading a repository reference (`host/owner/name`, `owner/name`) without zod: the CLI's config
 * and --repo parsing import this, so a command that validates nothing never loads the schemas.
 * contract/common.ts re-exports it beside the Repo schema; it imports nothing of the contract.
 */

/** A repository as its reference names it: the same shape as the contract's Repo (common.ts). */
export interface RepoRef {
  host: string;
  owner: string;
  name: string;
}

/**
 * `host/owner/name` or `owner/name` (host github.com) as a Repo; a trailing `.git` is dropped and
 * the owner may hold more than one segment (GitLab groups: `gitlab.com/group/sub/app`). Null
 * when the text has fewer than two segments: the caller says which flag or input was wrong.
 */
export function parseRepoRef(text: string): RepoRef | null {
  const parts = text
    .trim()
    .replace(/\.git$/, '')
    .split('/')
    .filter(Boolean);
  if (parts.length === 2) return { host: 'github.com', owner: parts[0], name: parts[1] };
  if (parts.length >= 3)
    return { host: parts[0], owner: parts.slice(1, -1).join('/'), name: parts[parts.length - 1] };
  return null;
}

/**
 * A repository's host: a DNS name (`[a-z0-9.-]`, any letter case — hosts compare case-insensitively
 * — labels not empty, no trailing dot) with an optional `:port`.
 */
const HOST = /^[a-z0-9-]+(?:\.[a-z0-9-]+)*(?::(\d{1,5}))?$/i;
/** GitHub's account rule: letters, digits and hyphens (underscores for managed users), not starting with a hyphen. */
const ACCOUNT = /^[A-Za-z0-9][A-Za-z0-9_-]*$/;
/** A segment of a GitLab namespace path, and a repository name (not `.` or `..`). */
const SEGMENT = /^[A-Za-z0-9_.-]+$/;
const dots = (s: string) => s === '.' || s === '..';

/** Shown for a value a rule refused: its start, control characters escaped. */
function shown(value: string): string {
  return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
}

/** `field: …` when `host` is not a DNS name with an optional port, else null. */
export function repoHostProblem(host: string, field = 'repo.host'): string | null {
  const m = HOST.exec(host);
  if (!m || (m[1] !== undefined && Number(m[1]) > 65535))
    return `${field}: must be a DNS name (letters, digits, '.' and '-'; no empty label, no trailing dot) with an optional :port, got ${shown(host)}`;
  return null;
}

/**
 * `field: …` when `owner` breaks the rule of its forge, else null: a GitHub account (`namespace`
 * false), or a GitLab namespace path whose segments are `[A-Za-z0-9_.-]+` and not `.` or `..`.
 */
export function repoOwnerRuleProblem(owner: string, namespace: boolean, field = 'repo.owner'): string | null {
  if (namespace) {
    if (owner.split('/').every((s) => SEGMENT.test(s) && !dots(s))) return null;
    return `${field}: must be a namespace path whose segments are letters, digits, '_', '.' or '-' (not '.' or '..'), got ${shown(owner)}`;
  }
  if (ACCOUNT.test(owner)) return null;
  return `${field}: must be an account name (letters, digits, '-' or '_', not starting with '-'), got ${shown(owner)}`;
}

/** `field: …` when `name` is not `[A-Za-z0-9_.-]{1,100}` or is `.` or `..`, else null. */
export function repoNameProblem(name: string, field = 'repo.name'): string | null {
  if (name.length <= 100 && SEGMENT.test(name) && !dots(name)) return null;
  return `${field}: must be 1 to 100 letters, digits, '_', '.' or '-' (not '.' or '..'), got ${shown(name)}`;
}

/**
 * The first problem of a repository's names (`repo.host: …`), or null. `namespace`: the owner may
 * be a GitLab namespace path (the forge serving the host says so; a client that cannot know passes true).
 */
export function repoProblem(repo: RepoRef, namespace: boolean, field = 'repo'): string | null {
  return (
    repoHostProblem(repo.host, `${field}.host`) ??
    repoOwnerRuleProblem(repo.owner, namespace, `${field}.owner`) ??
    repoNameProblem(repo.name, `${field}.name`)
  );
}
