/**
 * The GitLab driver's reporter: what a merge request shows of the queue — the commit status
 * `railyard/merge-queue` on its head (statusCheckEnabled; GitLab answers 400 to a status posted
 * twice in the same state: a no-op), ONE note edited as its state changes (commentsEnabled), and
 * the close of an MR landed squashed or rebased (its head is not on the target, so GitLab cannot
 * see it merged). Updates of one MR are coalesced: a change that comes while one is sent is sent
 * once more after it.
 */
import { findEntry, isTerminal, prConflictSentence, type Entry, type QueueModel } from '../../engine/index.js';
import type { DriverQueue, Reporter } from '../types.js';
import { messageOf, statusOf } from './client.js';
import { projectPath } from './repo.js';
import { repoKey, type GitLabRuntime } from './runtime.js';
import { QUEUE_STATUS_NAME } from './source.js';

/** The first line of the queue's note: how the queue (and its hook handler) knows its own note. */
export const NOTE_MARKER = '<!-- railyard:merge-queue -->';

type GitLabState = 'pending' | 'running' | 'success' | 'failed' | 'canceled';

function statusFor(entry: Entry, model: QueueModel): { state: GitLabState; description: string } {
  const reason = entry.reason ? ` (${entry.reason})` : '';
  switch (entry.state) {
    case 'merged': {
      const run = model.runs.find((r) => r.id === entry.testRunId);
      return {
        state: 'success',
        description: `Merged into ${model.branch}${run?.sha ? ` as ${run.sha.slice(0, 8)}` : ''}`,
      };
    }
    case 'failed':
      return { state: 'failed', description: `Failed${reason}` };
    case 'cancelled':
      return { state: 'canceled', description: `Removed from the queue${reason}` };
    case 'not_ready':
      return {
        state: 'pending',
        description: prConflictSentence(entry.pr)
          ? `It ${prConflictSentence(entry.pr)}`
          : 'Submitted, waiting until it is ready (draft, conflict, approvals or target)',
      };
    case 'testing':
    case 'tests_passed':
    case 'pending_failure':
      return { state: 'running', description: `Testing in the ${model.branch} merge queue` };
    default:
      return { state: 'pending', description: `In the ${model.branch} merge queue` };
  }
}

function noteFor(entry: Entry, model: QueueModel): string {
  const run = entry.testRunId ? model.runs.find((r) => r.id === entry.testRunId) : undefined;
  const lines = [
    NOTE_MARKER,
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
      `Test run \`${run.id}\`${run.branch ? ` on \`${run.branch}\`` : ''}${batch.length ? `, batched with ${batch.map((n) => `!${n}`).join(', ')}` : ''}${run.basePrNumbers.length ? `, on top of ${run.basePrNumbers.map((n) => `!${n}`).join(', ')}` : ''}.`,
    );
  }
  if (entry.state === 'not_ready')
    lines.push(
      '',
      prConflictSentence(entry.pr)
        ? `It ${prConflictSentence(entry.pr)}. It enters the queue by itself once it merges cleanly.`
        : 'It enters the queue once GitLab calls it mergeable (not a draft, no conflict, nothing GitLab waits for) and it targets the queue’s branch.',
    );
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
      if (failed.length) lines.push(`Failed jobs: ${failed.join(', ')}.`);
    }
  }
  return lines.join('\n');
}

export class GitLabReporter implements Reporter {
  private readonly posted = new Map<string, { sha: string; state: string }>();
  private readonly noteBodies = new Map<string, string>();
  private readonly presenting = new Map<
    string,
    { busy: Promise<void> | null; again: boolean; timer: NodeJS.Timeout | null }
  >();

  constructor(private readonly rt: GitLabRuntime) {}

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
            this.rt.log(`updating !${prNumber} of ${repoKey(queue.repo)} on GitLab failed`, error);
          }
        } while (slot.again && !this.rt.closed);
        slot.busy = null;
      };
      slot.busy = this.rt.track(go());
    }, 150);
  }

  private async present(queue: DriverQueue, iid: number): Promise<void> {
    const model = queue.model;
    const entry = findEntry(model, iid);
    if (!entry) return;
    const api = this.rt.client.api;
    const project = projectPath(queue.repo);
    const key = `${queue.id}#${iid}`;
    const nkey = `${queue.org}\n${repoKey(queue.repo)}#${iid}`;
    const run = entry.testRunId ? model.runs.find((r) => r.id === entry.testRunId) : undefined;
    const landedQuietly = entry.state === 'merged' && run && run.mergeMethod !== 'merge_commit';

    if (model.config.statusCheckEnabled) {
      const s = statusFor(entry, model);
      const last = this.posted.get(key);
      const sha = isTerminal(entry.state) && last ? last.sha : entry.pr.headSha;
      if (!last || last.sha !== sha || last.state !== s.state) {
        try {
          await api.Commits.editStatus(project, sha, s.state, {
            name: QUEUE_STATUS_NAME,
            description: s.description.slice(0, 255),
          });
        } catch (error) {
          // "Cannot transition status via :run from :running": it already says so.
          if (!(statusOf(error) === 400 && /Cannot transition status/.test(messageOf(error)))) throw error;
        }
        this.posted.set(key, { sha, state: s.state });
      }
    }

    if (model.config.commentsEnabled) {
      const body = noteFor(entry, model);
      if (this.noteBodies.get(nkey) !== body) {
        const id = this.rt.persisted.notes[nkey];
        const create = async () => {
          const note = await api.MergeRequestNotes.create(project, iid, body);
          this.rt.persisted.notes[nkey] = note.id;
          this.rt.save();
        };
        if (id === undefined) await create();
        else {
          try {
            await api.MergeRequestNotes.edit(project, iid, id, { body });
          } catch (error) {
            if (statusOf(error) !== 404) throw error;
            await create(); // someone deleted it: start a new one
          }
        }
        this.noteBodies.set(nkey, body);
      }
    }

    // Squash / rebase: the landed commits are not the MR's, so GitLab cannot see it merged. Close it.
    if (landedQuietly && !this.rt.persisted.closed[nkey]) {
      this.rt.persisted.closed[nkey] = true;
      this.rt.save();
      if (!model.config.commentsEnabled)
        await api.MergeRequestNotes.create(
          project,
          iid,
          `Merged by the Railyard merge queue: landed on \`${model.branch}\` as ${run.sha} (${run.mergeMethod}).`,
        );
      await api.MergeRequests.edit(project, iid, { stateEvent: 'close' });
    }
  }

  close(): void {
    for (const p of this.presenting.values()) if (p.timer) clearTimeout(p.timer);
  }
}
