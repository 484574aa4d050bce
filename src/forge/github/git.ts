/**
 * Git against GitHub: where the bare cache of a repository lives, and fetch / push / ls-remote with
 * HTTP Basic `x-access-token:<token>` (as GitHub expects for App and personal tokens), through the
 * shared remote git of the forge drivers (../shared/remote-git.ts).
 */
import { join } from 'node:path';
import { repoDirFor } from '../git/repo.js';
import { authEnv as basicAuthEnv, ensureCache, remoteGit } from '../shared/remote-git.js';

export { ensureCache };

/**
 * Where the bare cache of a GitHub repository lives: `<dataDir>/github/<host>/<owner>/<name>.git`.
 * It holds what the queue fetched (target branches, `refs/pull/N/head`) and the test commits it
 * built; nothing in it is secret (no token in its config or remotes).
 */
export function cacheDirFor(dataDir: string, host: string, owner: string, name: string): string {
  // A host may carry a port (GHES on a non-standard port): `host:8443` is kept as `host_8443`.
  return repoDirFor(join(dataDir, 'github'), host.replace(/:/g, '_'), owner, name);
}

/** Git's authentication for one command against GitHub. */
export const authEnv = (token: string): Record<string, string> => basicAuthEnv('x-access-token', token);

export const { fetchRefs, pushRefs, remoteHeads } = remoteGit('x-access-token');
