/**
 * The GitHub driver's lander: the target is fast-forwarded to the tested commit with
 * `PATCH git/refs/heads/{target}` and `force: false` (GitHub refuses a move that is not a fast
 * forward: the compare-and-swap). Before landing, every PR is read again and must still be what was
 * tested: the same head, open, not a draft, based on the target, and not blocked by branch
 * protection; otherwise it is taken out instead (a webhook may have been lost or late). A 422 is
 * told apart by reading the target again: moved = someone pushed (runs restart); unchanged = a rule
 * refused it (the run fails quoting GitHub, or the queue pauses when no PR could land) — never a
 * loop of rebuilt test commits. With `--github-merge-api`, a squash/rebase PR may land through the
 * merge API instead, where that is safe (merge-api.ts). A blip (a 5xx, a dropped connection, a
 * secondary rate limit: `blip`) is thrown and the landing tried again by the queue workers; the
 * next attempt first reads the target (and, after a merge-API blip, the PR): what landed after all
 * is `merged`, never landed twice. Octokit's own retries are off for these calls (NO_RETRY).
 */
import type { TestRun } from '../../engine/index.js';
import { isOutcome, prepareLanding } from '../shared/landing.js';
import { checkApiMerge, landWithMergeApi, mergeApiFits, mergedByGitHub } from './merge-api.js';
import type { DriverQueue, Lander, MergeOutcome } from '../types.js';
import { gitHubBlip, NO_RETRY, statusOf } from './client.js';
import type { GitHubPull } from './facts.js';
import { pushRefs } from './git.js';
import { repoKey, type GitHubRuntime } from './runtime.js';

export class GitHubLander implements Lander {
  constructor(
    private readonly rt: GitHubRuntime,
    /** Feeds a PR's new facts to the queue (the events role). */
    private readonly refreshPr: (q: DriverQueue, prNumber: number, given?: GitHubPull) => Promise<void>,
    /** `--github-merge-api`: squash/rebase PRs through the merge API where safe (merge-api.ts). */
    private readonly mergeApi = false,
  ) {}

  /** Runs whose merge-API call failed on a blip: run id → what it was to land (asked first on the next attempt). */
  private readonly apiBlips = new Map<string, { n: number; head: string; sha: string }>();

  /** A blip of GitHub or the network (client.ts gitHubBlip): the workers try the landing again. */
  blip(error: unknown): string | null {
    return gitHubBlip(error);
  }

  async land(queue: DriverQueue, run: TestRun, prNumbers: readonly number[]): Promise<MergeOutcome> {
    const branch = queue.model.branch;
    // The merge API failed on a blip last time: GitHub may have merged meanwhile (never merge twice).
    const tried = this.apiBlips.get(run.id);
    if (tried) {
      const landed = await mergedByGitHub(this.rt, queue, tried.n);
      this.apiBlips.delete(run.id);
      if (landed !== null)
        return checkApiMerge(
          this.rt,
          queue,
          run,
          tried.n,
          await this.rt.ctx(queue.repo),
          tried.head,
          tried.sha,
          landed,
        );
    }
    // Read again (a webhook may have been lost or late); the read is handed to the events role when it changed.
    const pulls = new Map<number, GitHubPull | null>();
    const plan = await prepareLanding(
      this.rt,
      pushRefs,
      queue,
      run,
      prNumbers,
      async (n, entry) => {
        const pull = await this.rt.forge.fetchPull(queue.repo, n);
        pulls.set(n, pull);
        return (
          pull !== null &&
          pull.head.sha === entry.pr.headSha &&
          pull.state === 'open' &&
          !pull.merged &&
          !pull.draft &&
          // A stacked PR is based on the PR below it (it lands with it): still that one.
          pull.base.ref === (entry.pr.stackedOn !== undefined ? entry.pr.baseBranch : branch) &&
          (await this.rt.forge.protection.waitsFor(queue.repo, pull)) === undefined
        );
      },
      (q, n) => this.refreshPr(q, n, pulls.get(n) ?? undefined),
    );
    if (isOutcome(plan)) return plan;
    const { c, head, sha } = plan;
    if (this.mergeApi && (await mergeApiFits(queue, run, prNumbers, c, head, sha))) {
      let outcome: MergeOutcome | null;
      try {
        outcome = await landWithMergeApi(this.rt, queue, run, prNumbers[0]!, c, head, sha);
      } catch (error) {
        if (this.apiBlips.size > 1000) this.apiBlips.delete(this.apiBlips.keys().next().value!);
        this.apiBlips.set(run.id, { n: prNumbers[0]!, head, sha });
        throw error;
      }
      if (outcome) return outcome;
    }
    this.rt.own(queue.repo).add(sha);
    this.rt.landing(run.id, sha);
    try {
      await this.rt.forge.client.request(
        queue.repo.owner,
        queue.repo.name,
        'PATCH /repos/{owner}/{repo}/git/refs/heads/{branch}',
        // Never sent again blindly: after a blip the next attempt first finds whether it landed.
        { branch, sha, force: false, ...NO_RETRY },
        { urgent: true },
      );
    } catch (error) {
      if (statusOf(error) !== 422) throw error;
      // The same 422 for "someone pushed" and "a rule refused it": only the target, read again, tells.
      const now = await this.rt.fetch(c, branch, []);
      const message = messageOf(error);
      if (now !== head || /not a fast.?forward/i.test(message)) return 'target_moved';
      const pauseQueue = everyPrRefused(message);
      this.rt.log(
        `GitHub refused to move ${branch} of ${queue.repo.owner}/${queue.repo.name} to ${sha.slice(0, 12)} (the target did not move): ${message}${pauseQueue ? ' — pausing the queue: no PR can land until the rule lets Railyard push (docs/github.md, "What the queue does on your pull requests")' : ''}`,
      );
      const detail = `GitHub refused to update ${branch}: ${message}`;
      this.rt.refused(
        run.id,
        pauseQueue ? `${detail} The queue is paused until the rule lets Railyard push.` : detail,
      );
      return { refused: true, detail, pauseQueue };
    }
    this.rt.targetHeads.set(`${repoKey(queue.repo)} ${branch}`, sha);
    return 'merged';
  }
}

/** GitHub's message of a failed request, on one line. */
function messageOf(error: unknown): string {
  const data = (error as { response?: { data?: { message?: unknown } } }).response?.data;
  const text =
    typeof data?.message === 'string' ? data.message : error instanceof Error ? error.message : String(error);
  return text.replace(/\s+/g, ' ').trim();
}

/**
 * Whether a refusal concerns every PR (the queue may not push to the branch at all: a rule wants
 * every change through a pull request, or Railyard is not allowed) rather than this commit (e.g. a
 * required status check it lacks).
 */
function everyPrRefused(message: string): boolean {
  if (/status check/i.test(message)) return false;
  return /through a pull request|protected branch update failed|not (?:authorized|allowed)|permission|bypass|resource not accessible/i.test(
    message,
  );
}
