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
