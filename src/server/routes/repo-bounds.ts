/**
 * The names of a request's repository (decisions.md "Repository names"), checked on the raw input
 * before the schema: the host a DNS name with an optional port; the owner held to the rule and
 * bound of the forge serving its host (a GitHub account of at most 39 characters unless that
 * forge takes namespace paths, e.g. GitLab's `group/subgroup` of up to 255); the name
 * `[A-Za-z0-9_.-]{1,100}`, never `.` or `..`. A 10 MB owner is told its bound like a 40-character
 * one; a name that could become a path or URL component (`..`, `/`, `\`, control characters) is a
 * 400 naming the field.
 */
import {
  ownerTooLong,
  REPO_HOST_MAX,
  REPO_NAME_MAX,
  REPO_OWNER_MAX,
  repoHostProblem,
  repoNameProblem,
  repoOwnerRuleProblem,
} from '../../contract/index.js';
import type { Source } from '../../forge/types.js';

/** The first problem of `repo: {host, owner, name}` (`field` names it in the answer), or null. */
function objectProblem(forge: Source, repo: Record<string, unknown>, field: string): string | null {
  const { host, owner, name } = repo;
  if (typeof host !== 'string' || typeof owner !== 'string' || typeof name !== 'string') return null; // the schema says so
  const h = host.trim();
  const o = owner.trim();
  const bound = forge.ownerMaxLength?.(h) ?? REPO_OWNER_MAX;
  if (h === '' || o === '' || name.trim() === '') return null; // the schema's `required`/too-short message
  if ([h, o, name].some((s) => s.includes('\0'))) return null; // told after the schema, naming the field
  // Lengths past the schema's bounds are told as the schema tells them.
  if (h.length > REPO_HOST_MAX) return `${field}.host: must be at most ${REPO_HOST_MAX} characters`;
  if (name.trim().length > REPO_NAME_MAX) return `${field}.name: must be at most ${REPO_NAME_MAX} characters`;
  return (
    repoHostProblem(h, `${field}.host`) ??
    ownerTooLong(o, bound, `${field}.owner`) ??
    repoOwnerRuleProblem(o, bound > REPO_OWNER_MAX, `${field}.owner`) ??
    repoNameProblem(name.trim(), `${field}.name`)
  );
}

/**
 * The first problem of a request's repository names, or null: for `repo: {host, owner, name}`,
 * `repo: "owner/name"` with `repoHost`, and `repos: [{host, owner, name}, …]`.
 */
export function repoOwnerProblem(forge: Source, input: unknown): string | null {
  if (typeof input !== 'object' || input === null) return null;
  const { repo, repoHost, repos } = input as { repo?: unknown; repoHost?: unknown; repos?: unknown };
  if (typeof repo === 'object' && repo !== null)
    return objectProblem(forge, repo as Record<string, unknown>, 'repo');
  if (typeof repo === 'string') {
    const text = repo.trim();
    const at = text.lastIndexOf('/');
    if (at <= 0 || at === text.length - 1) return null; // the schema's "must be owner/name"
    const host = typeof repoHost === 'string' ? repoHost.trim() : 'github.com';
    const bound = forge.ownerMaxLength?.(host) ?? REPO_OWNER_MAX;
    const owner = text.slice(0, at);
    return (
      (typeof repoHost === 'string' && host !== '' ? repoHostProblem(host, 'repoHost') : null) ??
      ownerTooLong(owner, bound, 'repo (its owner)') ??
      repoOwnerRuleProblem(owner, bound > REPO_OWNER_MAX, 'repo (its owner)') ??
      repoNameProblem(text.slice(at + 1), 'repo (its name)')
    );
  }
  if (Array.isArray(repos))
    for (const [i, item] of repos.slice(0, 100).entries()) {
      if (typeof item !== 'object' || item === null) continue;
      const problem = objectProblem(forge, item as Record<string, unknown>, `repos.${i}`);
      if (problem !== null) return problem;
    }
  return null;
}
