/**
 * Landing a squash or rebase PR through GitHub's merge API so GitHub shows it "Merged"
 * (docs/github.md "Merge methods", docs/decisions.md). Only with `serve --github-merge-api`, which
 * the team sets when the target's rules let nobody but Railyard push (branch protection
 * `restrictions`, or a ruleset whose bypass list is Railyard's App or user alone): then nothing but
 * the queue can move the target between the check and the merge. And only when it is safe: one PR,
 * tested alone as a single commit directly on the target head as it is now, and no other run of the
 * queue testing (a run built on this one would no longer fast-forward). The call pins the PR head
 * (`sha`); afterwards the new target commit must sit on the tested parent with exactly the tested
 * tree — if not, an untested tree landed: the queue pauses and says so loudly. Any refusal of the
 * call leaves the compare-and-swap ref update (lander.ts) to land the tested commit as before;
 * a blip of it is tried again, after checking whether GitHub merged the PR all the same.
 */
import { findEntry, type TestRun } from '../../engine/index.js';
import { git } from '../../git/exec.js';
import type { DriverQueue, MergeOutcome } from '../types.js';
import type { RepoCtx } from '../shared/runtime.js';
import { gitHubBlip, NO_RETRY } from './client.js';
import { repoKey, type GitHubRuntime } from './runtime.js';

/** Whether the merge API may land `run`: see the header. */
export async function mergeApiFits(queue: DriverQueue, run: TestRun, prNumbers: readonly number[], c: RepoCtx, head: string, sha: string): Promise<boolean> {
  if (run.mergeMethod === 'merge_commit' || prNumbers.length !== 1) return false;
  if (queue.model.runs.some((r) => r.id !== run.id && r.status === 'in_progress')) return false;
  const parent = (await git(c.dir, ['rev-parse', '--verify', '--quiet', `${sha}^`], { okCodes: [0, 1, 128] })).stdout.trim();
  return parent === head;
}

const treeOf = async (dir: string, rev: string) =>
  (await git(dir, ['rev-parse', '--verify', '--quiet', `${rev}^{tree}`], { okCodes: [0, 1, 128] })).stdout.trim();

/**
 * Merges PR `n` with the merge API on `head`; null when GitHub refused the call (land the tested
 * commit with the ref update instead), else the outcome. A blip (a 5xx, a dropped connection) is
 * thrown to be tried again — unless GitHub merged the PR all the same (read again): then that merge
 * is checked like an answered one, never merged a second time.
 */
export async function landWithMergeApi(
  rt: GitHubRuntime,
  queue: DriverQueue,
  run: TestRun,
  n: number,
  c: RepoCtx,
  head: string,
  sha: string,
): Promise<MergeOutcome | null> {
  const entry = findEntry(queue.model, n);
  if (!entry) return null;
  const message = (await git(c.dir, ['log', '-1', '--format=%B', sha])).stdout.trim();
  const [title = '', ...rest] = message.split('\n');
  let landed: string;
  try {
    const r = await rt.forge.client.request<{ sha: string; merged: boolean }>(
      queue.repo.owner,
      queue.repo.name,
      'PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge',
      {
        pull_number: n,
        sha: entry.pr.headSha,
        merge_method: run.mergeMethod === 'rebase' ? 'rebase' : 'squash',
        ...(run.mergeMethod === 'squash' ? { commit_title: title, commit_message: rest.join('\n').trim() } : {}),
        // Never sent again blindly (it may have merged): the lander checks first (NO_RETRY).
        ...NO_RETRY,
      },
      { urgent: true },
    );
    landed = r.data.sha;
  } catch (error) {
    if (gitHubBlip(error) === null) {
      rt.log(`the merge API did not land #${n} of ${repoKey(queue.repo)} (landing the tested commit instead)`, error);
      return null;
    }
    // A blip: GitHub may have merged all the same (it answered 502 after merging, or the connection dropped).
    const merged = await mergedByGitHub(rt, queue, n);
    if (merged === null) throw error; // tried again (src/server/workers.ts); GitHubLander asks first whether it merged meanwhile
    landed = merged;
  }
  return checkApiMerge(rt, queue, run, n, c, head, sha, landed);
}

/** The commit GitHub made when it merged PR `n`; null while it is not merged. */
export async function mergedByGitHub(rt: GitHubRuntime, queue: DriverQueue, n: number): Promise<string | null> {
  const pull = await rt.forge.fetchPull(queue.repo, n);
  return pull?.merged && pull.merge_commit_sha ? pull.merge_commit_sha : null;
}

/**
 * GitHub merged PR `n` as `landed`: it must be the target's head, on the tested parent `head`, with
 * the tested tree of `sha` — else an untested tree landed and the queue pauses, saying so.
 */
export async function checkApiMerge(
  rt: GitHubRuntime,
  queue: DriverQueue,
  run: TestRun,
  n: number,
  c: RepoCtx,
  head: string,
  sha: string,
  landed: string,
): Promise<MergeOutcome> {
  const branch = queue.model.branch;
  rt.own(queue.repo).add(landed);
  const now = await rt.fetch(c, branch, []);
  const parent = (await git(c.dir, ['rev-parse', '--verify', '--quiet', `${landed}^`], { okCodes: [0, 1, 128] })).stdout.trim();
  const same = now === landed && parent === head && (await treeOf(c.dir, landed)) === (await treeOf(c.dir, sha));
  if (!same) {
    const detail = `GitHub merged #${n} into ${branch} as ${landed.slice(0, 12)}, which is not the tested tree on the tested parent ${head.slice(0, 12)} (tested commit ${sha.slice(0, 12)}): check ${branch}; the queue is paused. Did something else push while --github-merge-api is set?`;
    rt.log(`ERROR: ${detail}`);
    rt.refused(run.id, detail);
    return { refused: true, detail, pauseQueue: true };
  }
  rt.targetHeads.set(`${repoKey(queue.repo)} ${branch}`, landed);
  if (rt.mergedByApi.size > 1000) rt.mergedByApi.delete(rt.mergedByApi.keys().next().value!);
  rt.mergedByApi.set(run.id, landed);
  return 'merged';
}
