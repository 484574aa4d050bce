/**
 * The GitLab driver's reporter: what a merge request shows of the queue — the commit status
 * `railyard/merge-queue` on its head (statusCheckEnabled; GitLab answers 400 to a status posted
 * twice in the same state: a no-op), ONE note edited as its state changes (commentsEnabled), and
 * the close of an MR landed squashed or rebased (its head is not on the target, so GitLab cannot
 * see it merged). GitLab refuses a status on a fork's commit in the target project (404: no branch
 * there holds it): such an MR gets its feedback as the note, comments enabled or not, and is closed
 * after a squash landing like any other. Updates of one MR are coalesced: a change that comes while one is sent is sent
 * once more after it. A progress edit of the note (position, test run) waits until the MR's state
 * has held PROGRESS_SETTLE_MS (at most PROGRESS_MAX_WAIT_MS after the oldest change it shows): a
 * state soon replaced is never sent. A decided MR, one waiting on its author, a landing note and
 * the first note never wait; the status is never held.
 */
import { findEntry, isTerminal, type Entry, type QueueModel, type TestRun } from '../../engine/index.js';
import {
  COMMENT_MARKER,
  commentFor,
  PROGRESS_MAX_WAIT_MS,
  PROGRESS_SETTLE_MS,
  statusWords,
  type ForgeWords,
  type StatusPhase,
} from '../shared/comment.js';
import type { DriverQueue, Reporter } from '../types.js';
import { messageOf, statusOf } from './client.js';
import { projectPath } from './repo.js';
import { repoKey, type GitLabRuntime } from './runtime.js';
import { QUEUE_STATUS_NAME } from './source.js';

/** The first line of the queue's note: how the queue (and its hook handler) knows its own note. */
export const NOTE_MARKER = COMMENT_MARKER;

type GitLabState = 'pending' | 'running' | 'success' | 'failed' | 'canceled';

/** How GitLab words the queue's note and status (../shared/comment.ts). */
const WORDS: ForgeWords = {
  forge: 'GitLab',
  ref: (n) => `!${n}`,
  statusName: QUEUE_STATUS_NAME,
  checks: 'jobs',
  shortSha: 8,
  notReady:
    'It enters the queue once GitLab calls it mergeable (not a draft, no conflict, nothing GitLab waits for) and it targets the queue’s branch.',
};

const STATE_OF: Record<StatusPhase, GitLabState> = {
  merged: 'success',
  failed: 'failed',
  cancelled: 'canceled',
  not_ready: 'pending',
  testing: 'running',
  queued: 'pending',
};

function statusFor(entry: Entry, model: QueueModel): { state: GitLabState; description: string } {
  const w = statusWords(entry, model, WORDS);
  return { state: STATE_OF[w.phase], description: w.description };
}

export class GitLabReporter implements Reporter {
  private readonly posted = new Map<string, { sha: string; state: string }>();
  private readonly noteBodies = new Map<string, string>();
  /** MRs whose head cannot carry a commit status (a fork's commit): their note says it all. */
  private readonly noStatus = new Set<string>();
  private readonly presenting = new Map<
    string,
    { busy: Promise<void> | null; again: boolean; timer: NodeJS.Timeout | null }
  >();

  /** A note edit held back to settle, per `nkey`: the body, since when it is the newest, when the oldest unshown change came, the timer. */
  private readonly held = new Map<
    string,
    { body: string; since: number; behind: number; timer: NodeJS.Timeout | null }
  >();
  /** MRs (`<queueId>#<iid>`) whose note has news (a landing note): sent without waiting to settle. */
  private readonly news = new Set<string>();

  constructor(private readonly rt: GitLabRuntime) {}

  /** A landing blip (or the landing given up): the MRs' notes say so. */
  landingNote(queue: DriverQueue, run: TestRun, note: string, final: boolean): void {
    if (this.rt.landingNote(run.id, note, final))
      for (const n of run.mergePrNumbers ?? run.prNumbers) {
        this.news.add(`${queue.id}#${n}`);
        this.stateChanged(queue, n);
      }
  }

  /**
   * Whether a progress edit of the note to `body` must wait to settle; if so, the MR is presented
   * again when it may go (a newer body replaces it meanwhile).
   */
  private holds(queue: DriverQueue, iid: number, nkey: string, body: string): boolean {
    const now = Date.now();
    let h = this.held.get(nkey);
    if (!h) {
      if (this.held.size > 10_000) {
        const [oldest, old] = this.held.entries().next().value!;
        if (old.timer) clearTimeout(old.timer);
        this.held.delete(oldest);
      }
      this.held.set(nkey, (h = { body, since: now, behind: now, timer: null }));
    } else if (h.body !== body) {
      h.body = body;
      h.since = now;
    }
    const due = Math.min(h.since + PROGRESS_SETTLE_MS, h.behind + PROGRESS_MAX_WAIT_MS);
    if (due <= now) return false;
    if (h.timer) clearTimeout(h.timer);
    const slot = h;
    h.timer = setTimeout(() => {
      slot.timer = null;
      this.stateChanged(queue, iid);
    }, due - now);
    return true;
  }

  /** The note of `nkey` was sent: nothing held back any more. */
  private shown(nkey: string, key: string): void {
    const h = this.held.get(nkey);
    if (h?.timer) clearTimeout(h.timer);
    this.held.delete(nkey);
    this.news.delete(key);
  }

  stateChanged(queue: DriverQueue, prNumber: number): void {
    if (this.rt.stale(queue, prNumber)) return; // the queue of the PR's base speaks for it
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

    if (model.config.statusCheckEnabled && !this.noStatus.has(key)) {
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
          if (statusOf(error) === 400 && /Cannot transition status/.test(messageOf(error))) {
            // already in that state
          } else if (statusOf(error) === 404 && (await this.isForkMr(project, iid))) {
            // "References for commit Not Found": a fork's commit. The note gives the feedback.
            this.rt.log(
              `!${iid} of ${repoKey(queue.repo)} comes from a fork: GitLab takes no status on its head (${messageOf(error)}); its note says how it stands`,
            );
            this.noStatus.add(key);
          } else throw error;
        }
        this.posted.set(key, { sha, state: s.state });
      }
    }

    if (model.config.commentsEnabled || this.noStatus.has(key)) {
      const run = entry.testRunId;
      const body = commentFor(
        entry,
        model,
        WORDS,
        run ? this.rt.refusals.get(run) : undefined,
        undefined,
        run ? this.rt.landingNotes.get(run) : undefined,
      );
      const id = this.rt.persisted.comments[nkey];
      const progress =
        id !== undefined && !isTerminal(entry.state) && entry.state !== 'not_ready' && !this.news.has(key);
      if (this.noteBodies.get(nkey) === body) this.shown(nkey, key);
      else if (!progress || !this.holds(queue, iid, nkey, body)) {
        const create = async () => {
          const note = await api.MergeRequestNotes.create(project, iid, body);
          this.rt.persisted.comments[nkey] = note.id;
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
        this.shown(nkey, key);
      }
    }

    // Squash / rebase: the landed commits are not the MR's, so GitLab cannot see it merged. Close it.
    if (landedQuietly && !this.rt.persisted.closed[nkey]) {
      this.rt.persisted.closed[nkey] = true;
      this.rt.save();
      if (!model.config.commentsEnabled && !this.noStatus.has(key))
        await api.MergeRequestNotes.create(
          project,
          iid,
          `Merged by the Railyard merge queue: landed on \`${model.branch}\` as ${run.sha} (${run.mergeMethod}).`,
        );
      await api.MergeRequests.edit(project, iid, { stateEvent: 'close' });
    }
  }

  /** Whether MR `iid` of `project` comes from another project (a fork). */
  private async isForkMr(project: string, iid: number): Promise<boolean> {
    const mr = (await this.rt.client.api.MergeRequests.show(project, iid)) as unknown as {
      source_project_id?: number;
      target_project_id?: number;
    };
    return mr.source_project_id !== undefined && mr.source_project_id !== mr.target_project_id;
  }

  close(): void {
    for (const p of this.presenting.values()) if (p.timer) clearTimeout(p.timer);
    for (const h of this.held.values()) if (h.timer) clearTimeout(h.timer);
  }
}
