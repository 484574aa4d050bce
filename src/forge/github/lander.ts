/**
 * The GitHub driver's lander: the target is fast-forwarded to the tested commit with
 * `PATCH git/refs/heads/{target}` and `force: false` (GitHub refuses a move that is not a fast
 * forward: the compare-and-swap). Before landing, every PR's head and open state are read again:
 * a PR pushed to or closed since it was tested is taken out instead.
 */
import { findEntry, isTerminal, type Entry, type TestRun } from '../../engine/index.js';
import { buildTestCommit, isAncestor, testBranchName, unitOf } from '../git/index.js';
import type { DriverQueue, Lander, MergeOutcome } from '../types.js';
import { statusOf } from './client.js';
import type { GitHubPull } from './facts.js';
import { pushRefs } from './git.js';
import { repoKey, type GitHubRuntime } from './runtime.js';

export class GitHubLander implements Lander {
  constructor(
    private readonly rt: GitHubRuntime,
    /** Feeds a PR's new facts to the queue (the events role). */
    private readonly refreshPr: (q: DriverQueue, prNumber: number, given?: GitHubPull) => Promise<void>,
  ) {}

  async land(queue: DriverQueue, run: TestRun, prNumbers: readonly number[]): Promise<MergeOutcome> {
    const branch = queue.model.branch;
    let sha = run.sha;
    if (!sha) return 'error';
    const c = await this.rt.ctx(queue.repo);
    const head = await this.rt.fetch(c, branch, []);
    if (!head) return 'error';
    if (head === sha || (await isAncestor(c.dir, sha, head))) return 'merged'; // landed already (asked again after a restart)
    if (!(await isAncestor(c.dir, head, sha))) {
      // The target moved since the run was built: someone else did it, everything restarts. In
      // parallel mode another lane did it: this lane's PRs land on top of it (built and pushed again).
      if (queue.model.config.mode !== 'parallel' || !this.rt.own(queue.repo).has(head)) return 'target_moved';
      const prs = [...prNumbers];
      await this.rt.fetch(c, branch, prs);
      const rebuilt = await buildTestCommit({
        repoDir: c.dir,
        targetBranch: branch,
        baseSha: head,
        units: prs.map((pr) => unitOf(findEntry(queue.model, pr) as Entry)),
        mergeMethod: run.mergeMethod,
        branchName: testBranchName(prs, run.id),
      });
      sha = rebuilt.sha;
      await c.git((dir, url, token) => pushRefs(dir, url, token, [`+${sha}:refs/heads/${rebuilt.branch}`]));
    }
    // Never land a head other than the one tested: a PR pushed to (or closed) since is taken out first.
    for (const n of prNumbers) {
      const entry = findEntry(queue.model, n);
      if (!entry || isTerminal(entry.state)) continue;
      const pull = await this.rt.forge.fetchPull(queue.repo, n);
      if (!pull || pull.head.sha !== entry.pr.headSha || pull.state !== 'open') {
        await this.refreshPr(queue, n, pull ?? undefined);
        return 'target_moved';
      }
    }
    this.rt.own(queue.repo).add(sha);
    try {
      await this.rt.forge.client.request(
        c.owner,
        c.name,
        'PATCH /repos/{owner}/{repo}/git/refs/heads/{branch}',
        { branch, sha, force: false },
        { urgent: true },
      );
    } catch (error) {
      // 422 "Update is not a fast forward": someone pushed meanwhile. Nothing merged.
      if (statusOf(error) === 422) return 'target_moved';
      throw error;
    }
    this.rt.targetHeads.set(`${repoKey(queue.repo)} ${branch}`, sha);
    return 'merged';
  }
}
