/**
 * Names a waiting PR's conflict on the remote forges (GitHub, GitLab): they say only that a PR
 * conflicts with its base, so the target and the PR's head are fetched into the repository's bare
 * cache and merged there (`git merge-tree`, as the git forge does): the files, and the target's
 * commit (and landed PR) that last changed them, for the sentence every view shows. Asked again
 * only when the PR's head or the target's head moved. The same merge tells whether a waiting PR
 * the forge last called mergeable still merges after the target moved (`mergesInCache`), so a
 * landing does not cost a read of every PR waiting behind it.
 */
import type { Repo } from '../../contract/index.js';
import type { PrConflict } from '../../engine/index.js';
import { git, mergeabilityOf } from '../git/index.js';
import type { ForgePrFacts } from '../types.js';
import { repoKey, type PersistedBase, type RemoteRuntime } from './runtime.js';

const CACHE_MAX = 10_000;

export class ConflictNames {
  /** `<repoKey>#<pr>` → what the last look found, for that head and that target head. */
  private readonly known = new Map<string, { head: string; target: string; conflict: PrConflict }>();

  constructor(private readonly rt: RemoteRuntime<PersistedBase>) {}

  /** `facts` with the conflict's files when the forge says the PR conflicts (unchanged when git cannot tell). */
  async name<F extends ForgePrFacts>(repo: Repo, prNumber: number, facts: F): Promise<F> {
    if (
      !facts.open ||
      facts.mergeability !== 'not_mergeable' ||
      !facts.conflict ||
      facts.conflict.files?.length
    )
      return facts;
    const key = `${repoKey(repo)}#${prNumber}`;
    const hit = this.known.get(key);
    const targetNow = this.rt.targetHeads.get(`${repoKey(repo)} ${facts.baseBranch}`);
    if (hit && hit.head === facts.headSha && hit.target === targetNow)
      return { ...facts, conflict: hit.conflict };
    try {
      const c = await this.rt.ctx(repo);
      const target = await this.rt.fetch(c, facts.baseBranch, [prNumber]);
      if (!target) return facts;
      const check = await mergeabilityOf(c.dir, facts.headSha, target);
      if (check.mergeability !== 'not_mergeable' || !check.conflict?.files?.length) return facts;
      if (this.known.size >= CACHE_MAX) this.known.delete(this.known.keys().next().value!);
      this.known.set(key, { head: facts.headSha, target, conflict: check.conflict });
      return { ...facts, conflict: check.conflict };
    } catch (error) {
      this.rt.log(`naming the conflict of PR #${prNumber} of ${repoKey(repo)} failed`, error);
      return facts;
    }
  }
}

/** Whether every commit of `shas` is in the repository (one `git cat-file --batch-check`). */
async function present(dir: string, shas: readonly string[]): Promise<boolean> {
  const r = await git(dir, ['cat-file', '--batch-check'], { input: shas.join('\n') + '\n' });
  return !/ missing$/m.test(r.stdout);
}

/**
 * Whether PR `prNumber` (head `headSha`) merges onto `target` (a head of `branch`) without
 * conflict, merged in the bare cache; when the cache lacks the PR's head (or the target), one fetch
 * brings them with the heads of `fetchWith` (the other waiting PRs: one fetch for a round, not one
 * per PR, since fetches into the cache go one at a time and a landing waits behind them). False
 * when it conflicts or git cannot tell (the caller asks the forge then).
 */
export async function mergesInCache(
  rt: RemoteRuntime<PersistedBase>,
  repo: Repo,
  prNumber: number,
  branch: string,
  headSha: string,
  target: string,
  fetchWith: readonly number[] = [],
): Promise<boolean> {
  try {
    const c = await rt.ctx(repo);
    if (!(await present(c.dir, [headSha, target]))) {
      await rt.fetch(c, branch, [...new Set([prNumber, ...fetchWith])]);
      if (!(await present(c.dir, [headSha, target]))) return false;
    }
    return (await mergeabilityOf(c.dir, headSha, target)).mergeability === 'mergeable';
  } catch (error) {
    rt.log(`merging PR #${prNumber} of ${repoKey(repo)} onto ${branch} in the cache failed`, error);
    return false;
  }
}
