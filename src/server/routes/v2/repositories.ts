/**
 * The v2 repository operations: resolve a provider URL (`https://github.com/owner/name`) to the
 * repository's id, and read a repository by id. Railyard holds no repository rows: a repository
 * is known by its coordinates, and its id is derived from them (ids.ts).
 */
import type { Repo } from '../../../contract/index.js';
import type { V2OperationId } from '../../../contract/v2/routes.js';
import { isoTime } from '../../../contract/index.js';
import type { V2Context } from './context.js';
import { V2Error } from './errors.js';
import { pageOf } from './paging.js';
import type { V2Handler } from './types.js';

/** The repository a provider URL names (`https://host/owner/name`, `.git` and a trailing `/` allowed), or null. */
export function repoOfProviderUrl(text: string): Repo | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return null;
  const parts = url.pathname.split('/').filter(Boolean);
  if (parts.length < 2 || url.search || url.hash) return null;
  const last = parts.pop()!;
  const name = last.endsWith('.git') ? last.slice(0, -4) : last;
  const ok = (s: string) => /^[A-Za-z0-9_.-]{1,100}$/.test(s) && s !== '.' && s !== '..';
  if (!ok(name) || !parts.every(ok)) return null;
  return { host: url.host.toLowerCase(), owner: parts.join('/'), name };
}

const EPOCH = isoTime(0);

const PROVIDER_HOSTS: Record<string, 'github' | 'gitlab' | 'bitbucket'> = {
  'github.com': 'github',
  'gitlab.com': 'gitlab',
  'bitbucket.org': 'bitbucket',
};

export function repositoryHandlers(ctx: V2Context): Partial<Record<V2OperationId, V2Handler>> {
  // Railyard keeps no times for a repository: the epoch says "unknown" in Trunk's required fields.
  const present = (id: string, repo: Repo) => ({
    id,
    provider: PROVIDER_HOSTS[repo.host] ?? 'unknown',
    path: `${repo.owner}/${repo.name}`,
    host: repo.host in PROVIDER_HOSTS ? null : repo.host,
    url: ctx.links.repository(repo),
    defaultBranch: null,
    isPrivate: null,
    createdAt: EPOCH,
    updatedAt: EPOCH,
  });
  return {
    async 'repositories.resolveByProviderUrl'({ org, query }) {
      const repo = repoOfProviderUrl(query.providerUrl as string);
      if (!repo)
        throw new V2Error(
          404,
          'PROVIDER_URL_NOT_FOUND',
          `providerUrl: ${String(query.providerUrl)} names no repository (https://host/owner/name)`,
        );
      const id = ctx.remember(org, repo);
      return pageOf(
        [repo],
        () => id,
        (r) => present(id, r),
        'repositories.resolveByProviderUrl',
        query,
      );
    },
    async 'repositories.get'({ org, id }) {
      return present(id.toLowerCase(), await ctx.repository(org, id));
    },
  };
}
