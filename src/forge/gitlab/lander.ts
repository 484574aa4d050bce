/**
 * The GitLab driver's lander: the target branch is moved to the tested commit by a git push that
 * carries the expected old value (`--force-with-lease=refs/heads/<target>:<old>` of a fast-forward:
 * a compare-and-swap that git and GitLab enforce). Before landing, every MR's head and state are
 * read again: an MR pushed to or closed since it was tested is taken out instead. A refused push
 * whose target did not move was refused by a rule (a protected branch the token may not push to):
 * the run fails quoting GitLab's message (on the notes and in the history), never a retry loop. A push that failed on the network is
 * a blip (`blip`, tried again by the queue workers) — unless the target is at the tested commit
 * after all (the push reached GitLab before the connection dropped): then it landed, once.
 */
import type { TestRun } from '../../engine/index.js';
import { gitNetworkFailure, networkFailure, transientStatus } from '../shared/blips.js';
import { isOutcome, prepareLanding } from '../shared/landing.js';
import { statusOf } from './client.js';
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

  /**
   * A blip (src/forge/shared/blips.ts): GitLab answered 5xx, 408 or 429 (after the client's own
   * retries), a connection failed or dropped, or git could not reach GitLab. A refused push is not.
   */
  blip(error: unknown): string | null {
    const status = statusOf(error);
    if (status !== undefined) return transientStatus(status) ? `GitLab answered ${status}` : null;
    const network = networkFailure(error);
    if (network) return `the connection to GitLab failed (${network})`;
    const git = gitNetworkFailure(error);
    return git ? `git could not reach GitLab (${git})` : null;
  }

  async land(queue: DriverQueue, run: TestRun, prNumbers: readonly number[]): Promise<MergeOutcome> {
    const branch = queue.model.branch;
    const plan = await prepareLanding(
      this.rt,
      pushRefs,
      queue,
      run,
      prNumbers,
      async (n, entry) => {
        const facts = await this.rt.source.facts(queue.repo, n);
        return (
          facts !== null &&
          facts.open &&
          facts.headSha === entry.pr.headSha &&
          // A stacked MR targets the MR below it (it lands with it): still that one.
          facts.baseBranch === (entry.pr.stackedOn !== undefined ? entry.pr.baseBranch : branch) &&
          !facts.draft &&
          facts.block === null
        );
      },
      (q, n) => this.refreshMr(q, n),
    );
    if (isOutcome(plan)) return plan;
    const { c, head, sha } = plan;
    this.rt.own(queue.repo).add(sha);
    this.rt.landing(run.id, sha);
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
      if (now === landed) {
        // The push reached GitLab before the connection dropped: it landed, once.
        this.rt.log(
          `landing run ${run.id} on ${repoKey(queue.repo)} ${branch}: the push failed (${gitNetworkFailure(error) ?? refusalOf(error)}) but ${branch} is at the tested commit: landed`,
        );
        this.rt.targetHeads.set(`${repoKey(queue.repo)} ${branch}`, landed);
        return 'merged';
      }
      if (now !== head) return 'target_moved'; // someone pushed meanwhile: nothing merged
      if (gitNetworkFailure(error) !== null) throw error; // the network, not a rule: tried again (blip)
      const why = refusalOf(error);
      this.rt.log(`landing run ${run.id} on ${repoKey(queue.repo)} ${branch} was refused by GitLab: ${why}`);
      // GitLab's own words go on the MRs' notes and in their history (the run's refusal).
      const detail = `GitLab refused the push to ${branch}: ${why}`;
      this.rt.refused(run.id, detail);
      return { refused: true, detail, pauseQueue: false };
    }
    this.rt.targetHeads.set(`${repoKey(queue.repo)} ${branch}`, landed);
    return 'merged';
  }
}
