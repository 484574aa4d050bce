/**
 * The landing steps the remote forges (GitHub, GitLab) share, before each moves the target its own
 * way (a fast-forward-only ref update on GitHub, a push with the expected old value on GitLab):
 * read the target; a run already landed is `merged` (asked again after a restart); a target moved
 * by someone else restarts everything, while in parallel mode a move by another lane rebuilds this
 * lane's commit on top of it (and pushes it again); and every PR is read again and must still be
 * what was tested (the same head, open, based on the target, nothing on the forge holding it) —
 * otherwise its new facts go to the engine and nothing lands. Never land an untested combination.
 * Called again after a blip: what the attempt before landed (`rt.landing`, also a rebuilt commit)
 * is `merged` — never rebuilt and landed a second time.
 */
import { findEntry, isTerminal, type Entry, type TestRun } from '../../engine/index.js';
import { buildTestCommit, isAncestor, testBranchName, unitOf } from '../git/index.js';
import type { DriverQueue, MergeOutcome } from '../types.js';
import type { RemoteGit } from './remote-git.js';
import type { PersistedBase, RemoteRuntime, RepoCtx } from './runtime.js';

/** What to land: the target's head as read, and the commit that goes on it. */
export interface LandingPlan {
  c: RepoCtx;
  head: string;
  sha: string;
}

/** The shared steps; a MergeOutcome means there is nothing to push (landed already, moved, or a PR changed). */
export async function prepareLanding(
  rt: RemoteRuntime<PersistedBase>,
  pushRefs: RemoteGit['pushRefs'],
  queue: DriverQueue,
  run: TestRun,
  prNumbers: readonly number[],
  /** Whether PR `n` is still what was tested (read again from the forge); `refresh` feeds its facts when not. */
  stillTested: (n: number, entry: Entry) => Promise<boolean>,
  refresh: (q: DriverQueue, n: number) => Promise<void>,
): Promise<LandingPlan | MergeOutcome> {
  const branch = queue.model.branch;
  let sha = run.sha;
  if (!sha) return 'error';
  const c = await rt.ctx(queue.repo);
  const head = await rt.fetch(c, branch, []);
  if (!head) return 'error';
  if (head === sha || (await isAncestor(c.dir, sha, head))) return 'merged'; // landed already (asked again after a restart)
  // An attempt before this one (its answer lost to a blip) landed what it rebuilt on another lane.
  const tried = rt.triedToLand(run.id);
  if (tried !== undefined && tried !== sha && (head === tried || (await isAncestor(c.dir, tried, head))))
    return 'merged';
  if (!(await isAncestor(c.dir, head, sha))) {
    // The target moved since the run was built: someone else did it, everything restarts. In
    // parallel mode another lane did it: this lane's PRs land on top of it (built and pushed again).
    if (queue.model.config.mode !== 'parallel' || !rt.own(queue.repo).has(head)) return 'target_moved';
    const prs = [...prNumbers];
    await rt.fetch(c, branch, prs);
    const rebuilt = await buildTestCommit({
      repoDir: c.dir,
      targetBranch: branch,
      baseSha: head,
      units: prs.map((pr) => unitOf(findEntry(queue.model, pr) as Entry, queue.model)),
      mergeMethod: run.mergeMethod,
      branchName: testBranchName(prs, run.id),
    });
    sha = rebuilt.sha;
    const pushed = sha;
    await c.git((dir, url, token) => pushRefs(dir, url, token, [`+${pushed}:refs/heads/${rebuilt.branch}`]));
  }
  // A PR pushed to, closed, retargeted, made a draft or held by the forge since it was tested is taken out first.
  for (const n of prNumbers) {
    const entry = findEntry(queue.model, n);
    if (!entry || isTerminal(entry.state)) continue;
    if (!(await stillTested(n, entry))) {
      await refresh(queue, n);
      return 'target_moved';
    }
  }
  return { c, head, sha };
}

/** Whether `prepareLanding` answered an outcome rather than a plan. */
export function isOutcome(p: LandingPlan | MergeOutcome): p is MergeOutcome {
  return typeof p === 'string' || 'refused' in p;
}
