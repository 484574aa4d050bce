/**
 * The GitLab driver's lander: the target branch is moved to the tested commit by a git push that
 * carries the expected old value (`--force-with-lease=refs/heads/<target>:<old>` of a fast-forward:
 * a compare-and-swap that git and GitLab enforce). Before landing, every MR's head and state are
 * read again: an MR pushed to or closed since it was tested is taken out instead. A refused push
 * whose target did not move was refused by a rule (a protected branch the token may not push to):
 * the run fails quoting GitLab's message, never a retry loop.
 */
import { findEntry, isTerminal, type Entry, type TestRun } from '../../engine/index.js';
import { buildTestCommit, isAncestor, testBranchName, unitOf } from '../git/index.js';
import type { DriverQueue, Lander, MergeOutcome } from '../types.js';
import { pushRefs, remoteHeads } from './git.js';
import { repoKey, type GitLabRuntime } from './runtime.js';

/** GitLab's own words in a refused push (`remote: GitLab: …`), else git's last line. */
export function refusalOf(error: unknown): string {
  const stderr = (error as { stderr?: unknown } | null)?.stderr;
  const text = `${typeof stderr === 'string' ? stderr : ''}\n${error instanceof Error ? error.message : String(error)}`;
  const gitlab = /GitLab: ([^\n]+)/.exec(text);
  if (gitlab) return gitlab[1]!.trim();
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  return lines[lines.length - 1] ?? text;
}

export class GitLabLander implements Lander {
  constructor(
    private readonly rt: GitLabRuntime,
    /** Feeds an MR's new facts to the queue (the events role). */
    private readonly refreshMr: (q: DriverQueue, iid: number) => Promise<void>,
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
      // Moved since the run was built: someone else did it, everything restarts. In parallel mode
      // another lane did it: this lane's MRs land on top of it (built and pushed again).
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
    // Never land a head other than the one tested: an MR pushed to (or closed) since is taken out first.
    for (const n of prNumbers) {
      const entry = findEntry(queue.model, n);
      if (!entry || isTerminal(entry.state)) continue;
      const mr = await this.rt.source.fetchMr(queue.repo, n);
      if (!mr || mr.sha !== entry.pr.headSha || mr.state !== 'opened' || mr.target_branch !== branch) {
        await this.refreshMr(queue, n);
        return 'target_moved';
      }
    }
    this.rt.own(queue.repo).add(sha);
    const landed = sha;
    try {
      await c.git((dir, url, token) =>
        pushRefs(
          dir,
          url,
          token,
          [`${landed}:refs/heads/${branch}`],
          [`--force-with-lease=refs/heads/${branch}:${head}`],
        ),
      );
    } catch (error) {
      const now = (await c.git((dir, url, token) => remoteHeads(dir, url, token))).get(branch);
      if (now !== head) return 'target_moved'; // someone pushed meanwhile: nothing merged
      const why = refusalOf(error);
      this.rt.log(`landing run ${run.id} on ${repoKey(queue.repo)} ${branch} was refused by GitLab: ${why}`);
      throw new Error(`GitLab refused the push to ${branch}: ${why}`);
    }
    this.rt.targetHeads.set(`${repoKey(queue.repo)} ${branch}`, landed);
    return 'merged';
  }
}
