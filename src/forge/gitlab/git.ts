/**
 * Git over smart HTTP against GitLab: authentication through the environment (HTTP Basic with the
 * token as password, user `oauth2`; the shared remote git of the forge drivers,
 * ../shared/remote-git.ts) and where the bare cache of a project lives:
 * `<dataDir>/gitlab/<host>/<group>/<subgroup>/<project>.git`.
 */
import { join } from 'node:path';
import { withoutTrailingSlashes } from '../../contract/common.js';
import type { Repo } from '../../contract/index.js';
import { authEnv as basicAuthEnv, ensureCache, remoteGit } from '../shared/remote-git.js';
import { invalidGitLabRepo } from './repo.js';

export { ensureCache };

/** Git's authentication for one command against GitLab. */
export const authEnv = (token: string): Record<string, string> => basicAuthEnv('oauth2', token);

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

export const { fetchRefs, pushRefs, remoteHeads } = remoteGit('oauth2');
