/**
 * The git forge's lander: fast-forwards the target branch to a tested commit with a
 * compare-and-swap (`update-ref` with the old value). In parallel mode, a target moved by another
 * lane of the same queue is not a reason to restart: the lane's PRs are rebuilt on top of it.
 */
import { findEntry, type Entry, type TestRun } from '../../engine/index.js';
import { gitNetworkFailure } from '../shared/blips.js';
import type { DriverQueue, Lander, MergeOutcome } from '../types.js';
import { buildTestCommit, unitOf } from './build.js';
import type { GitForge } from './source.js';
import { casUpdateBranch, headOf, isAncestor, pruneTestBranches, testBranchName } from './repo.js';

/** Target SHAs the queue produced itself, per repository directory (the watcher ignores those moves). */
export class OwnHeads {
  private readonly heads = new Map<string, Set<string>>();

  of(key: string): Set<string> {
    let set = this.heads.get(key);
    if (!set) this.heads.set(key, (set = new Set()));
    return set;
  }
}

export class GitLander implements Lander {
  constructor(
    private readonly forge: GitForge,
    private readonly own: OwnHeads,
    private readonly log: (message: string, error?: unknown) => void,
  ) {}

  /**
   * Local repositories rarely blip: a ref lock held by another git process for a moment, or a
   * repository on a network file system that failed on the way (src/forge/shared/blips.ts).
   */
  blip(error: unknown): string | null {
    const stderr = (error as { stderr?: unknown } | null)?.stderr;
    const text = `${typeof stderr === 'string' ? stderr : ''}\n${error instanceof Error ? error.message : ''}`;
    if (/Unable to create '[^']*\.lock': File exists/i.test(text)) return 'git found the branch locked by another git process';
    const git = gitNetworkFailure(error);
    return git ? `git failed on the way (${git})` : null;
  }

  async land(queue: DriverQueue, run: TestRun, prNumbers: readonly number[]): Promise<MergeOutcome> {
    const repoDir = this.forge.repoDir(queue.repo);
    const branch = queue.model.branch;
    let sha = run.sha;
    if (!sha) return 'error';
    const head = await headOf(repoDir, branch);
    if (!head) return 'error';
    if (head === sha || (await isAncestor(repoDir, sha, head))) return 'merged'; // landed already (asked again after a restart)
    if (!(await isAncestor(repoDir, head, sha))) {
      // The target moved since the run was built. Someone else did it: everything restarts. In
      // parallel mode another lane of the queue did it: this lane's PRs land on top of it.
      if (queue.model.config.mode !== 'parallel' || !this.own.of(repoDir).has(head)) return 'target_moved';
      const units = prNumbers.map((pr) => unitOf(findEntry(queue.model, pr) as Entry));
      const rebuilt = await buildTestCommit({
        repoDir,
        targetBranch: branch,
        baseSha: head,
        units,
        mergeMethod: run.mergeMethod,
        branchName: testBranchName(prNumbers, run.id),
      });
      sha = rebuilt.sha;
    }
    this.own.of(repoDir).add(sha);
    const moved = await casUpdateBranch(repoDir, branch, head, sha);
    if (!moved) return 'target_moved';
    // Test branches of runs that are over are of no use any more.
    const keep = queue.model.runs.filter((r) => r.status === 'in_progress').map((r) => r.id);
    await pruneTestBranches(repoDir, keep).catch((error: unknown) => this.log(`pruning test branches of ${repoDir} failed`, error));
    return 'merged';
  }
}
