/**
 * Git over smart HTTP against GitLab: authentication through the environment (HTTP Basic with the
 * token as password, user `oauth2`; never in a URL, argv or config file) and where the bare cache of
 * a project lives: `<dataDir>/gitlab/<host>/<group>/<subgroup>/<project>.git`.
 */
import { join } from 'node:path';
import { withoutTrailingSlashes } from '../../contract/common.js';
import type { Repo } from '../../contract/index.js';
import { invalidGitLabRepo } from './repo.js';

/** Git's authentication for one command (GIT_CONFIG_COUNT: `-c http.extraHeader=…` without showing it in ps). */
export function authEnv(token: string): Record<string, string> {
  const basic = Buffer.from(`oauth2:${token}`).toString('base64');
  return {
    GIT_CONFIG_COUNT: '1',
    GIT_CONFIG_KEY_0: 'http.extraHeader',
    GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
  };
}

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
