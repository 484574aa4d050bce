/** The git forge's source: PR facts and landing state read from bare repositories under the git root. */
import { existsSync } from 'node:fs';
import type { Repo } from '../../contract/index.js';
import type { PrFacts } from '../../engine/types.js';
import type { PrChanges, PrLandingState, Source } from '../types.js';
import { git } from '../../git/exec.js';
import { repoPlaceProblem } from './place.js';
import { containedIn, getPullRequest, repoDirFor } from './repo.js';

/**
 * The git forge's source role (`railyard serve --git-root DIR`): maps a contract `Repo` to its
 * bare repository and reads PR facts from it. The other roles (runs.ts, lander.ts, events.ts)
 * find repositories through `repoDir(repo)`.
 */
export class GitForge implements Source {
  readonly kind = 'git';

  constructor(readonly gitRoot: string) {}

  /**
   * `DIR/<host>/<owner>/<name>.git`; throws on names that could escape the root, and on a
   * repository that is not a place of its own (a symlink to another owner's: see ./place.ts).
   */
  repoDir(repo: Repo): string {
    const dir = repoDirFor(this.gitRoot, repo.host, repo.owner, repo.name);
    if (existsSync(dir)) {
      const problem = repoPlaceProblem(this.gitRoot, dir);
      if (problem) throw new Error(`repo: ${repo.host}/${repo.owner}/${repo.name} is refused: ${problem}`);
    }
    return dir;
  }

  /** Whether the repository exists under the git root. */
  hasRepo(repo: Repo): boolean {
    try {
      return existsSync(this.repoDir(repo));
    } catch {
      return false;
    }
  }

  /** PR facts, or null when the repository or `refs/pull/N/head` does not exist. */
  async getPullRequest(repo: Repo, prNumber: number, queueBranch: string): Promise<PrFacts | null> {
    if (!this.hasRepo(repo)) return null;
    return getPullRequest(this.repoDir(repo), prNumber, queueBranch);
  }

  /**
   * Git has no record of merged pull requests: a PR counts as merged into `targetBranch` when its
   * head commit is in it, or when merging it would change nothing (it was squashed or rebased in).
   */
  async landingState(
    repo: Repo,
    prNumber: number,
    facts: PrFacts,
    targetBranch: string,
  ): Promise<PrLandingState> {
    const contained = await containedIn(this.repoDir(repo), facts.headSha, targetBranch);
    if (contained === 'head')
      return {
        state: 'merged',
        detail: `its head ${facts.headSha.slice(0, 12)} is already in ${targetBranch}`,
      };
    if (contained === 'changes')
      return { state: 'merged', detail: `its changes are already in ${targetBranch}` };
    return { state: 'open' };
  }

  /** `git diff --numstat` from the merge-base of the target and the PR's head to the head (binary files count 0 lines). */
  async changes(repo: Repo, facts: PrFacts, targetBranch: string): Promise<PrChanges | null> {
    if (!this.hasRepo(repo)) return null;
    const dir = this.repoDir(repo);
    const base = (await git(dir, ['merge-base', targetBranch, facts.headSha], { okCodes: [0, 1, 128] })).stdout.trim();
    if (!base) return null;
    const out = (await git(dir, ['diff', '--numstat', '--no-renames', base, facts.headSha])).stdout;
    const paths: string[] = [];
    let size = 0;
    for (const line of out.split('\n')) {
      const [added, removed, ...path] = line.split('\t');
      if (!path.length) continue;
      paths.push(path.join('\t'));
      size += (Number(added) || 0) + (Number(removed) || 0);
    }
    return { paths, size };
  }
}
