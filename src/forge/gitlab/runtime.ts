/**
 * What the roles of the GitLab driver share (one object per server), on top of the remote forges'
 * runtime (../shared/runtime.ts: options, target heads, state file `<dataDir>/gitlab/state.json`,
 * host, work in flight): the MR facts and client (source.ts), and the bare cache of each project
 * with git using the token.
 */
import type { Repo } from '../../contract/index.js';
import { headOf } from '../git/index.js';
import { RemoteRuntime, type PersistedBase, type RemoteDriverOptions, type RepoCtx } from '../shared/runtime.js';
import { ensureCache, fetchRefs } from './git.js';
import type { GitLabSource } from './source.js';

export { repoKey, TEST_BRANCH_RE, type RepoCtx } from '../shared/runtime.js';

export interface GitLabDriverOptions extends RemoteDriverOptions {
  token: string;
}

export class GitLabRuntime extends RemoteRuntime<PersistedBase, GitLabDriverOptions> {
  constructor(
    readonly source: GitLabSource,
    options: GitLabDriverOptions,
  ) {
    // State files written before the drivers shared their runtime name the note ids `notes`.
    super(options, 'gitlab', { comments: {}, closed: {} }, (read) => ({
      ...(read as Partial<PersistedBase>),
      comments: { ...(read.notes as Record<string, number> | undefined), ...(read.comments as Record<string, number> | undefined) },
    }));
  }

  get client() {
    return this.source.client;
  }

  serves(repo: Repo): boolean {
    return this.source.serves(repo);
  }

  get paused(): boolean {
    return this.client.paused;
  }

  async ctx(repo: Repo): Promise<RepoCtx> {
    const dir = this.source.cacheDir(repo);
    await ensureCache(dir);
    const url = this.source.cloneUrl(repo);
    return { repo, dir, url, git: (op) => op(dir, url, this.options.token) };
  }

  /** Fetches the target branch and the heads of `mrs` (`refs/merge-requests/N/head`) into the cache; returns the target head. */
  fetch(c: RepoCtx, branch: string, mrs: readonly number[]): Promise<string | null> {
    // One fetch at a time into the cache: concurrent ones updating the same ref fail (shared/runtime.ts).
    return this.oneFetchAtATime(c.dir, async () => {
      await c.git((dir, url, token) =>
        fetchRefs(dir, url, token, [
          `+refs/heads/${branch}:refs/heads/${branch}`,
          ...mrs.map((n) => `+refs/merge-requests/${n}/head:refs/merge-requests/${n}/head`),
        ]),
      );
      return headOf(c.dir, branch);
    });
  }
}
