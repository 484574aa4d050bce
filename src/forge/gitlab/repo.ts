/**
 * How a GitLab project maps onto the v1 `repo` (docs/decisions.md, docs/gitlab.md):
 * `host/group/subgroup/project` is `repo.host` = host, `repo.owner` = the full namespace path
 * (`group/subgroup`, at most 255 characters), `repo.name` = the project's path. The REST API
 * addresses the project by that full path, URL-encoded (@gitbeaker encodes it).
 */
import type { Repo } from '../../contract/index.js';

/** GitLab's bound on a namespace's full path. */
export const NAMESPACE_MAX = 255;
/** GitLab's bound on a project path. */
export const PROJECT_PATH_MAX = 255;

/** A namespace or project path segment as GitLab allows it: starts with a letter, digit or `_`, no `..`. */
const SEGMENT_RE = /^[A-Za-z0-9_][A-Za-z0-9_.+-]*$/;

/** `group/subgroup/project`: the project's full path, as REST (encoded) and git URLs name it. */
export function projectPath(repo: Pick<Repo, 'owner' | 'name'>): string {
  return `${repo.owner}/${repo.name}`;
}

/** The `repo` of a project's full path on `host`; null when the path has no namespace. */
export function repoOfProject(host: string, pathWithNamespace: string): Repo | null {
  const parts = pathWithNamespace.split('/').filter(Boolean);
  if (parts.length < 2) return null;
  return { host, owner: parts.slice(0, -1).join('/'), name: parts[parts.length - 1]! };
}

/**
 * Why `repo` cannot name a GitLab project (one line naming the field), or null: every owner
 * segment and the name are GitLab path segments (no `..`, no `.git` / `.atom` ending), the owner
 * at most 255 characters.
 */
export function invalidGitLabRepo(repo: Pick<Repo, 'owner' | 'name'>): string | null {
  if (repo.owner.length > NAMESPACE_MAX)
    return `repo.owner: a GitLab namespace path is at most ${NAMESPACE_MAX} characters`;
  if (repo.name.length > PROJECT_PATH_MAX)
    return `repo.name: a GitLab project path is at most ${PROJECT_PATH_MAX} characters`;
  for (const segment of repo.owner.split('/')) {
    if (!validSegment(segment)) return `repo.owner: "${segment}" is not a GitLab group path (group/subgroup)`;
  }
  if (!validSegment(repo.name)) return `repo.name: "${repo.name}" is not a GitLab project path`;
  return null;
}

function validSegment(s: string): boolean {
  return SEGMENT_RE.test(s) && !s.includes('..') && !/\.(git|atom)$/i.test(s);
}
