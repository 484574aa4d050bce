/**
 * The owner bound of a request's repository (decisions.md "Round 3"): the contract's schema takes
 * owners up to the widest bound any forge has (255, a GitLab namespace path); here each is held
 * to the bound of the forge serving its host, 39 (GitHub's) unless that forge widens it. Run on
 * the raw input, before the schema, so a 10 MB owner is told 39 like a 40-character one.
 */
import { ownerTooLong, REPO_OWNER_MAX } from '../../contract/index.js';
import type { Source } from '../../forge/types.js';

/** `repo.owner: must be at most 39 characters`, or null: for `repo: {host, owner}` and for `repo: "owner/name"` with `repoHost`. */
export function repoOwnerProblem(forge: Source, input: unknown): string | null {
  if (typeof input !== 'object' || input === null) return null;
  const { repo, repoHost } = input as { repo?: unknown; repoHost?: unknown };
  const bound = (host: string) => forge.ownerMaxLength?.(host) ?? REPO_OWNER_MAX;
  if (typeof repo === 'object' && repo !== null) {
    const { host, owner } = repo as { host?: unknown; owner?: unknown };
    if (typeof host === 'string' && typeof owner === 'string') return ownerTooLong(owner.trim(), bound(host.trim()));
  } else if (typeof repo === 'string') {
    const owner = repo.trim().slice(0, repo.trim().lastIndexOf('/'));
    return ownerTooLong(owner, bound(typeof repoHost === 'string' ? repoHost : 'github.com'), 'repo (its owner)');
  }
  return null;
}
