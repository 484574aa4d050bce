/**
 * The GitHub driver's reporter: what a pull request shows of the queue — the commit status
 * `railyard/merge-queue` on its head (statusCheckEnabled), ONE comment edited as its state changes
 * (commentsEnabled), the close of a PR landed squashed or rebased (GitHub cannot see those
 * merged), and a draft PR per test branch (createPrsForTestingBranches). Every write waits its
 * turn on the token's write line (client.ts, writes.ts): a PR whose fate is decided goes first
 * (status and close, then its comment), then updates, then draft PRs; what a write sends is
 * decided when its turn comes (the state then), so a newer change replaces a waiting write instead
 * of queueing behind it, and a write with nothing new to say is dropped.
 */
import { findEntry, isTerminal, type Entry, type QueueModel, type TestRun } from '../../engine/index.js';
import {
  commentFor,
  PROGRESS_MAX_WAIT_MS,
  PROGRESS_SETTLE_MS,
  statusWords,
  type ForgeWords,
  type StatusPhase,
} from '../shared/comment.js';
import type { DriverQueue, Reporter } from '../types.js';
import { QUEUE_STATUS_CONTEXT } from './checks.js';
import { statusOf } from './client.js';
import { WritePriority } from './writes.js';
import { repoKey, type GitHubRuntime } from './runtime.js';

/** How GitHub words the queue's comment and status (../shared/comment.ts). */
const WORDS: ForgeWords = {
  forge: 'GitHub',
  ref: (n) => `#${n}`,
  statusName: QUEUE_STATUS_CONTEXT,
  checks: 'checks',
  shortSha: 7,
  notReady: 'It enters the queue once it is mergeable, not a draft, and based on the target branch.',
};

const STATE_OF: Record<StatusPhase, 'pending' | 'success' | 'failure' | 'error'> = {
  merged: 'success',
  failed: 'failure',
  cancelled: 'error',
  not_ready: 'pending',
  testing: 'pending',
  queued: 'pending',
};

/** GitHub's commit status for an entry: pending while it is in the queue, then success / failure / error. */
function statusFor(
  entry: Entry,
  model: QueueModel,
): { state: 'pending' | 'success' | 'failure' | 'error'; description: string } {
  const w = statusWords(entry, model, WORDS);
  return {
    state: STATE_OF[w.phase],
    description: w.phase === 'testing' ? `In the ${model.branch} merge queue` : w.description,
  };
}

function commentOf(entry: Entry, model: QueueModel, rt: GitHubRuntime): string {
  const run = entry.testRunId;
  return commentFor(
    entry,
    model,
    WORDS,
    run ? rt.refusals.get(run) : undefined,
    run ? rt.mergedByApi.get(run) : undefined,
    run ? rt.landingNotes.get(run) : undefined,
  );
}

export class GitHubReporter implements Reporter {
  /** Last commit status posted per `<queueId>#<pr>`. */
  private readonly posted = new Map<string, { sha: string; state: string }>();
  private readonly commentBodies = new Map<string, string>();
  /** When the oldest change not yet shown by each comment was queued (progress edits). */
  private readonly commentBehind = new Map<string, number>();

  constructor(private readonly rt: GitHubRuntime) {}

  /** A run's test branch is on GitHub: a draft PR shows it, when the queue asks for one. */
  runStarted(queue: DriverQueue, run: TestRun, branch: string): void {
    if (queue.model.config.createPrsForTestingBranches)
      void this.rt.track(this.openDraftPr(queue, run, branch));
  }

  /** A landing blip (or the landing given up): the PRs' comments say so. */
  landingNote(queue: DriverQueue, run: TestRun, note: string, final: boolean): void {
    if (this.rt.landingNote(run.id, note, final))
      for (const n of run.mergePrNumbers ?? run.prNumbers) this.stateChanged(queue, n, true);
  }

  /**
   * The engine changed an entry's state: its close, commit status and comment are queued (each at
   * most once). `noted`: the comment has news (a landing note), not progress: it does not wait to settle.
   */
  stateChanged(queue: DriverQueue, prNumber: number, noted = false): void {
    // A stale entry (the PR is in its base branch's queue) writes nothing: that queue speaks for it.
    if (this.rt.closed || this.rt.stale(queue, prNumber)) return;
    const entry = findEntry(queue.model, prNumber);
    if (!entry) return;
    const decided = isTerminal(entry.state);
    // A PR that waits on its author (conflict, draft, branch rules) says so before progress updates.
    const waitsOnAuthor = entry.state === 'not_ready';
    const { owner, name } = queue.repo;
    const client = this.rt.forge.client;
    const key = `${queue.id}#${prNumber}`;
    const ckey = `${queue.org}\n${repoKey(queue.repo)}#${prNumber}`;
    const now = () => findEntry(queue.model, prNumber);
    const send = (what: string, write: Promise<unknown>) =>
      void this.rt.track(
        write.catch((error: unknown) =>
          this.rt.log(`${what} of PR #${prNumber} of ${repoKey(queue.repo)} on GitHub failed`, error),
        ),
      );

    // Squash / rebase: the landed commits are not the PR's, so GitHub cannot see it merged. Close it, naming the commit.
    const landedQuietly = () => {
      const e = now();
      const run = e?.testRunId ? queue.model.runs.find((r) => r.id === e.testRunId) : undefined;
      // Landed through the merge API: GitHub shows it merged, nothing to close.
      return e?.state === 'merged' &&
        run !== undefined &&
        run.mergeMethod !== 'merge_commit' &&
        !this.rt.mergedByApi.has(run.id)
        ? run
        : undefined;
    };
    if (landedQuietly() && !this.rt.persisted.closed[ckey]) {
      const stillWanted = () => !this.rt.persisted.closed[ckey];
      const done = () => {
        this.rt.persisted.closed[ckey] = true;
        this.rt.save();
      };
      if (!queue.model.config.commentsEnabled) {
        const run = landedQuietly()!;
        send(
          'the landed comment',
          client.write(
            owner,
            name,
            'POST /repos/{owner}/{repo}/issues/{issue_number}/comments',
            {
              issue_number: prNumber,
              body: `Merged by the Railyard merge queue: landed on \`${queue.model.branch}\` as ${run.sha} (${run.mergeMethod}).`,
            },
            { priority: WritePriority.final, key: `landed ${ckey}` },
          ),
        );
      }
      send(
        'closing',
        client
          .write(
            owner,
            name,
            'PATCH /repos/{owner}/{repo}/pulls/{pull_number}',
            { pull_number: prNumber, state: 'closed' },
            {
              priority: WritePriority.final,
              key: `close ${ckey}`,
              stillWanted,
            },
          )
          .then((r) => r && done()),
      );
    }

    if (queue.model.config.statusCheckEnabled) {
      // What to post is decided when the write's turn comes: the state then, on the head the queue knew
      // (a PR pushed to while queued gets the verdict on the head it had).
      const desired = () => {
        const e = now();
        if (!e) return null;
        const s = statusFor(e, queue.model);
        const last = this.posted.get(key);
        const sha = isTerminal(e.state) && last ? last.sha : e.pr.headSha;
        return !last || last.sha !== sha || last.state !== s.state ? { ...s, sha } : null;
      };
      send(
        'the status',
        client
          .write(
            owner,
            name,
            'POST /repos/{owner}/{repo}/statuses/{sha}',
            {},
            {
              priority: decided
                ? WritePriority.final
                : waitsOnAuthor
                  ? WritePriority.finalComment
                  : WritePriority.update,
              key: `status ${key}`,
              stillWanted: () => desired() !== null,
              params: () => {
                const d = desired()!;
                this.posted.set(key, { sha: d.sha, state: d.state });
                return {
                  sha: d.sha,
                  state: d.state,
                  description: d.description.slice(0, 140),
                  context: QUEUE_STATUS_CONTEXT,
                };
              },
            },
          )
          .catch((error: unknown) => {
            this.posted.delete(key); // sent again with the next change
            throw error;
          }),
      );
    }

    if (queue.model.config.commentsEnabled) {
      const body = () => {
        const e = now();
        return e ? commentOf(e, queue.model, this.rt) : null;
      };
      const wanted = () => {
        const b = body();
        return b !== null && this.commentBodies.get(ckey) !== b;
      };
      const id = () => this.rt.persisted.comments[ckey];
      send(
        'the comment',
        client
          .write(
            owner,
            name,
            'PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}',
            {},
            {
              priority: decided
                ? WritePriority.final
                : waitsOnAuthor
                  ? WritePriority.finalComment
                  : WritePriority.update,
              key: `comment ${ckey}`,
              stillWanted: wanted,
              ...(decided || waitsOnAuthor || noted || id() === undefined
                ? {}
                : { notBefore: this.settled(ckey) }),
              run: async (request) => {
                const text = body()!;
                this.commentBodies.set(ckey, text);
                this.commentBehind.delete(ckey);
                const existing = id();
                if (existing !== undefined) {
                  try {
                    return await request('PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}', {
                      comment_id: existing,
                      body: text,
                    });
                  } catch (error) {
                    if (statusOf(error) !== 404) throw error; // someone deleted it: start a new one
                  }
                }
                const r = await request<{ id: number }>(
                  'POST /repos/{owner}/{repo}/issues/{issue_number}/comments',
                  {
                    issue_number: prNumber,
                    body: text,
                  },
                );
                this.rt.persisted.comments[ckey] = r.data.id;
                this.rt.save();
                return r;
              },
            },
          )
          .catch((error: unknown) => {
            this.commentBodies.delete(ckey); // sent again with the next change
            throw error;
          }),
      );
    }
  }

  /** When a progress edit of a comment may go: once the state held PROGRESS_SETTLE_MS, or PROGRESS_MAX_WAIT_MS after the oldest change it shows. */
  private settled(ckey: string): number {
    const now = Date.now();
    let behind = this.commentBehind.get(ckey);
    if (behind === undefined) {
      behind = now;
      if (this.commentBehind.size > 10_000)
        this.commentBehind.delete(this.commentBehind.keys().next().value!);
      this.commentBehind.set(ckey, behind);
    }
    return Math.min(now + PROGRESS_SETTLE_MS, behind + PROGRESS_MAX_WAIT_MS);
  }

  private async openDraftPr(queue: DriverQueue, run: TestRun, branch: string): Promise<void> {
    // Only while the run goes on: a draft PR for a run that ended (its branch landed or deleted) is
    // refused by GitHub with 422, and would say nothing true anyway.
    const running = () =>
      queue.model.runs.find((r) => r.id === run.id)?.status === 'in_progress' && !this.rt.closed;
    try {
      const r = await this.rt.forge.client.write<{ number: number }>(
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
        { priority: WritePriority.background, key: `draft ${run.id}`, stillWanted: running },
      );
      if (!r) return;
      this.rt.persisted.draftPrs[run.id] = { repo: repoKey(queue.repo), number: r.data.number };
      this.rt.save();
    } catch (error) {
      this.rt.log(`opening a draft PR for ${branch} failed`, error);
    }
  }

  close(): void {
    this.rt.forge.client.close();
  }
}
