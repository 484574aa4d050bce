/**
 * The GitHub driver's reporter: what a pull request shows of the queue — the commit status
 * `railyard/merge-queue` on its head (statusCheckEnabled), ONE comment edited as its state changes
 * (commentsEnabled), the close of a PR landed squashed or rebased (GitHub cannot see those
 * merged), and a draft PR per test branch (createPrsForTestingBranches). Updates of one PR are
 * coalesced: a change that comes while one is sent is sent once more after it.
 */
import { findEntry, isTerminal, type Entry, type QueueModel, type TestRun } from '../../engine/index.js';
import type { DriverQueue, Reporter } from '../types.js';
import { QUEUE_STATUS_CONTEXT } from './checks.js';
import { statusOf } from './client.js';
import { repoKey, type GitHubRuntime } from './runtime.js';

/** GitHub's commit status for an entry: pending while it is in the queue, then success / failure / error. */
function statusFor(
  entry: Entry,
  model: QueueModel,
): { state: 'pending' | 'success' | 'failure' | 'error'; description: string } {
  const reason = entry.reason ? ` (${entry.reason})` : '';
  switch (entry.state) {
    case 'merged': {
      const run = model.runs.find((r) => r.id === entry.testRunId);
      return {
        state: 'success',
        description: `Merged into ${model.branch}${run?.sha ? ` as ${run.sha.slice(0, 7)}` : ''}`,
      };
    }
    case 'failed':
      return { state: 'failure', description: `Failed${reason}` };
    case 'cancelled':
      return { state: 'error', description: `Removed from the queue${reason}` };
    case 'not_ready':
      return {
        state: 'pending',
        description: 'Submitted, waiting until it is ready (draft, conflict or base branch)',
      };
    default:
      return { state: 'pending', description: `In the ${model.branch} merge queue` };
  }
}

function commentFor(entry: Entry, model: QueueModel): string {
  const run = entry.testRunId ? model.runs.find((r) => r.id === entry.testRunId) : undefined;
  const lines = [
    '<!-- railyard:merge-queue -->',
    `**Railyard merge queue** (\`${model.branch}\`): **${entry.state.replace('_', ' ')}**`,
  ];
  if (entry.state === 'pending' || entry.state === 'testing') {
    const active = model.entries.filter((e) => !isTerminal(e.state) && e.state !== 'not_ready');
    const position =
      active.filter(
        (e) =>
          e.priority.value < entry.priority.value ||
          (e.priority.value === entry.priority.value && e.seq < entry.seq),
      ).length + 1;
    lines.push('', `Position ${position} of ${active.length}.`);
  }
  if (run && !isTerminal(entry.state)) {
    const batch = run.prNumbers.filter((n) => n !== entry.prNumber);
    lines.push(
      '',
      `Test run \`${run.id}\`${run.branch ? ` on \`${run.branch}\`` : ''}${batch.length ? `, batched with ${batch.map((n) => `#${n}`).join(', ')}` : ''}${run.basePrNumbers.length ? `, on top of ${run.basePrNumbers.map((n) => `#${n}`).join(', ')}` : ''}.`,
    );
  }
  if (entry.state === 'not_ready')
    lines.push('', 'It enters the queue once it is mergeable, not a draft, and based on the target branch.');
  if (entry.state === 'merged' && run?.sha)
    lines.push('', `Landed on \`${model.branch}\` as ${run.sha} (test run \`${run.id}\`).`);
  if (
    (entry.state === 'failed' || entry.state === 'cancelled' || entry.state === 'pending_failure') &&
    entry.reason
  ) {
    lines.push(
      '',
      `Reason: \`${entry.reason}\`${run?.failureReason && run.failureReason !== entry.reason ? ` (test run: \`${run.failureReason}\`)` : ''}.`,
    );
    if (run) {
      const failed = Object.entries(run.checks)
        .filter(([, o]) => o === 'failure')
        .map(([n]) => `\`${n}\``);
      if (failed.length) lines.push(`Failed checks: ${failed.join(', ')}.`);
    }
  }
  return lines.join('\n');
}

export class GitHubReporter implements Reporter {
  /** Last commit status posted per `<queueId>#<pr>`. */
  private readonly posted = new Map<string, { sha: string; state: string }>();
  private readonly commentBodies = new Map<string, string>();
  private readonly presenting = new Map<string, { busy: Promise<void> | null; again: boolean; timer: NodeJS.Timeout | null }>();

  constructor(private readonly rt: GitHubRuntime) {}

  /** A run's test branch is on GitHub: a draft PR shows it, when the queue asks for one. */
  runStarted(queue: DriverQueue, run: TestRun, branch: string): void {
    if (queue.model.config.createPrsForTestingBranches) void this.rt.track(this.openDraftPr(queue, run, branch));
  }

  /** The engine changed an entry's state: its commit status and comment follow (coalesced). */
  stateChanged(queue: DriverQueue, prNumber: number): void {
    const key = `${queue.id}#${prNumber}`;
    let p = this.presenting.get(key);
    if (!p) this.presenting.set(key, (p = { busy: null, again: false, timer: null }));
    const slot = p;
    if (slot.busy) {
      slot.again = true;
      return;
    }
    if (slot.timer) return;
    slot.timer = setTimeout(() => {
      slot.timer = null;
      const go = async () => {
        do {
          slot.again = false;
          try {
            await this.present(queue, prNumber);
          } catch (error) {
            this.rt.log(`updating PR #${prNumber} of ${repoKey(queue.repo)} on GitHub failed`, error);
          }
        } while (slot.again && !this.rt.closed);
        slot.busy = null;
      };
      slot.busy = this.rt.track(go());
    }, 150);
  }

  private async present(queue: DriverQueue, prNumber: number): Promise<void> {
    const model = queue.model;
    const entry = findEntry(model, prNumber);
    if (!entry) return;
    const { owner, name } = queue.repo;
    const client = this.rt.forge.client;
    const key = `${queue.id}#${prNumber}`;
    const ckey = `${queue.org}\n${repoKey(queue.repo)}#${prNumber}`;
    const run = entry.testRunId ? model.runs.find((r) => r.id === entry.testRunId) : undefined;
    const landedQuietly = entry.state === 'merged' && run && run.mergeMethod !== 'merge_commit';

    // Squash / rebase: the landed commits are not the PR's, so GitHub cannot see it merged. Close it, naming the commit.
    if (landedQuietly && !this.rt.persisted.closed[ckey]) {
      this.rt.persisted.closed[ckey] = true;
      this.rt.save();
      if (!model.config.commentsEnabled) {
        await client.request(owner, name, 'POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
          issue_number: prNumber,
          body: `Merged by the Railyard merge queue: landed on \`${model.branch}\` as ${run.sha} (${run.mergeMethod}).`,
        });
      }
      await client.request(owner, name, 'PATCH /repos/{owner}/{repo}/pulls/{pull_number}', {
        pull_number: prNumber,
        state: 'closed',
      });
    }

    if (model.config.statusCheckEnabled) {
      const s = statusFor(entry, model);
      const last = this.posted.get(key);
      // On the head the queue knew; a PR pushed to while queued gets the verdict on the head it had.
      const sha = isTerminal(entry.state) && last ? last.sha : entry.pr.headSha;
      if (!last || last.sha !== sha || last.state !== s.state) {
        await client.request(owner, name, 'POST /repos/{owner}/{repo}/statuses/{sha}', {
          sha,
          state: s.state,
          description: s.description.slice(0, 140),
          context: QUEUE_STATUS_CONTEXT,
        });
        this.posted.set(key, { sha, state: s.state });
      }
    }

    if (model.config.commentsEnabled) {
      const body = commentFor(entry, model);
      if (this.commentBodies.get(ckey) === body) return;
      const id = this.rt.persisted.comments[ckey];
      const post = async () => {
        const r = await client.request<{ id: number }>(
          owner,
          name,
          'POST /repos/{owner}/{repo}/issues/{issue_number}/comments',
          { issue_number: prNumber, body },
        );
        this.rt.persisted.comments[ckey] = r.data.id;
        this.rt.save();
      };
      if (id === undefined) await post();
      else {
        try {
          await client.request(owner, name, 'PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}', {
            comment_id: id,
            body,
          });
        } catch (error) {
          if (statusOf(error) !== 404) throw error;
          await post(); // someone deleted it: start a new one
        }
      }
      this.commentBodies.set(ckey, body);
    }
  }

  private async openDraftPr(queue: DriverQueue, run: TestRun, branch: string): Promise<void> {
    try {
      const r = await this.rt.forge.client.request<{ number: number }>(
        queue.repo.owner,
        queue.repo.name,
        'POST /repos/{owner}/{repo}/pulls',
        {
          head: branch,
          base: queue.model.branch,
          draft: true,
          title: `Railyard test run ${run.id} (${[...run.basePrNumbers, ...run.prNumbers].map((n) => `#${n}`).join(', ')})`,
          body: `The Railyard merge queue tests ${run.prNumbers.map((n) => `#${n}`).join(', ')} on this branch${run.basePrNumbers.length ? `, on top of ${run.basePrNumbers.map((n) => `#${n}`).join(', ')}` : ''}. It is closed when the test run ends.`,
        },
      );
      this.rt.persisted.draftPrs[run.id] = { repo: repoKey(queue.repo), number: r.data.number };
      this.rt.save();
    } catch (error) {
      this.rt.log(`opening a draft PR for ${branch} failed`, error);
    }
  }

  close(): void {
    for (const p of this.presenting.values()) if (p.timer) clearTimeout(p.timer);
  }
}
