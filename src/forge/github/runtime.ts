/**
 * What the roles of the GitHub driver share (one object per server), on top of the remote forges'
 * runtime (../shared/runtime.ts: options, target heads, state file, host, work in flight): the
 * GitHub client and PR facts (source.ts), the bare cache of each repository and git with a current
 * token, and the draft PRs of test runs kept in `<dataDir>/github/state.json`.
 */
import type { Repo } from '../../contract/index.js';
import { headOf } from '../git/index.js';
import { RemoteRuntime, type PersistedBase, type RemoteDriverOptions, type RepoCtx as SharedRepoCtx } from '../shared/runtime.js';
import type { GitHubForge } from './source.js';
import { ensureCache, fetchRefs } from './git.js';

export { repoKey, TEST_BRANCH_RE } from '../shared/runtime.js';

export type GitHubDriverOptions = RemoteDriverOptions;

/** A repository's bare cache and git against GitHub (renewing an installation token once if GitHub refuses it). */
export interface RepoCtx extends SharedRepoCtx {
  owner: string;
  name: string;
}

interface Persisted extends PersistedBase {
  /** Test run id → number of its draft PR (open until the run ends). */
  draftPrs: Record<string, { repo: string; number: number }>;
}

export class GitHubRuntime extends RemoteRuntime<Persisted> {
  /** Runs landed through the merge API (GitHub shows their PR merged): run id → the commit GitHub made. */
  readonly mergedByApi = new Map<string, string>();

  constructor(
    readonly forge: GitHubForge,
    options: GitHubDriverOptions,
  ) {
    super(options, 'github', { comments: {}, draftPrs: {}, closed: {} });
  }

  serves(repo: Repo): boolean {
    return this.forge.serves(repo);
  }

  get paused(): boolean {
    return this.forge.client.paused;
  }

  async ctx(repo: Repo): Promise<RepoCtx> {
    const info = await this.forge.repoInfo(repo);
    const dir = this.forge.cacheDir(repo);
    await ensureCache(dir);
    const client = this.forge.client;
    const withToken = async <T>(op: (dir: string, url: string, token: string) => Promise<T>): Promise<T> => {
      try {
        return await op(dir, info.cloneUrl, await client.tokenFor(repo.owner, repo.name));
      } catch (error) {
        // An installation token that expired between reading it and using it: once more with a new one.
        if (!/could not read Username|Authentication failed|401/.test(String((error as Error).message)))
          throw error;
        return op(dir, info.cloneUrl, await client.tokenFor(repo.owner, repo.name, true));
      }
    };
    return { repo, owner: repo.owner, name: repo.name, dir, url: info.cloneUrl, git: withToken };
  }

  /** Fetches the target branch and the heads of `prs` into the cache; returns the target head. */
  fetch(c: SharedRepoCtx, branch: string, prs: readonly number[]): Promise<string | null> {
    // One fetch at a time into the cache: concurrent ones updating the same ref fail (shared/runtime.ts).
    return this.oneFetchAtATime(c.dir, async () => {
      await c.git((dir, url, token) =>
        fetchRefs(dir, url, token, [
          `+refs/heads/${branch}:refs/heads/${branch}`,
          ...prs.map((n) => `+refs/pull/${n}/head:refs/pull/${n}/head`),
        ]),
      );
      return headOf(c.dir, branch);
    });
  }
}
