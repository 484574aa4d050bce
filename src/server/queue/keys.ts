/**
 * The names of a queue: repository identity is case-insensitive (as on GitHub), so keys and
 * stored names are lower case; a queue is found by organisation, repository and target branch;
 * messages name a repository the way its users write it.
 */
import type { Repo } from '../../contract/index.js';

/** Repository identity is case-insensitive (as on GitHub): keys and stored names are lower case. */
export function normaliseRepo(repo: Repo): Repo {
  return {
    host: repo.host.trim().toLowerCase(),
    owner: repo.owner.trim().toLowerCase(),
    name: repo.name.trim().toLowerCase(),
  };
}

/** The key of a queue in memory and in the writer's locks: organisation, repository, target branch. */
export function queueKey(org: string, repo: Repo, branch: string): string {
  return `${org}\n${repo.host}\n${repo.owner}\n${repo.name}\n${branch}`;
}

/** `owner/name` on github.com, `host/owner/name` elsewhere: how messages name a repository. */
export const describeRepo = (repo: Repo) =>
  repo.host === 'github.com' ? `${repo.owner}/${repo.name}` : `${repo.host}/${repo.owner}/${repo.name}`;
