/**
 * The queue's answers read from memory, never written: getQueue serialized once per version,
 * getSubmittedPullRequest per model version, and listPullRequests' pages in queue order.
 */
import type { PullRequestState } from '../../contract/index.js';
import {
  activeEntries,
  findEntry,
  isTerminal,
  laneNumbers,
  listOrder,
  readinessOf,
  type Entry,
  type QueueModel,
} from '../../engine/index.js';
import { badRequest, notFound, type ApiError } from '../errors.js';
import { presentListItem, presentQueueSettings, presentSubmitted } from './present.js';
import type { QueueHandle } from './handle.js';
import { describeRepo } from './keys.js';

/** A getSubmittedPullRequest answer: the entry it is about and its JSON. */
interface SubmittedAnswer {
  entry: Entry;
  body: string;
}

export type PrSelector = { number: number; branch?: undefined } | { branch: string; number?: undefined };

export interface ListOptions {
  state?: PullRequestState;
  since?: string;
  until?: string;
  cursor?: string;
  take?: number;
}

/** 404 for a pull request the queue never had. */
export function neverSubmitted(handle: QueueHandle, what: string): ApiError {
  return notFound(
    `pull request ${what} was never submitted to the ${handle.model.branch} queue of ${describeRepo(handle.repo)}`,
  );
}

/** The answers of the read operations, cached where a version of the model makes them stay right. */
export class QueueAnswers {
  /** getSubmittedPullRequest answers per model version (a new version starts with none). */
  private readonly submittedAnswers = new WeakMap<QueueModel, Map<string, SubmittedAnswer>>();

  /** The getQueue answer, serialized once per queue version. */
  getQueueBody(handle: QueueHandle): Buffer {
    if (!handle.getQueueBody) {
      const model = handle.model;
      const line = activeEntries(model).filter((e) => e.state !== 'not_ready');
      const lanes = laneNumbers(model, line);
      const body = {
        ...presentQueueSettings(model),
        enqueuedPullRequests: line.map((e) => presentListItem(e, lanes.get(e.id))),
      };
      const buffer = Buffer.from(JSON.stringify(body));
      // Only cache if nothing changed meanwhile (building is synchronous, but stay safe), and not
      // with freeze windows: `frozen` changes with the clock.
      if (handle.model === model && !model.config.freezes?.length) handle.getQueueBody = buffer;
      return buffer;
    }
    return handle.getQueueBody;
  }

  select(handle: QueueHandle, pr: PrSelector): Entry {
    if (pr.number !== undefined) {
      const entry = findEntry(handle.model, pr.number);
      if (!entry) throw neverSubmitted(handle, `#${pr.number}`);
      return entry;
    }
    let best: Entry | undefined;
    for (const e of handle.model.entries) {
      if (e.pr.headBranch !== pr.branch) continue;
      const rank = (x: Entry) => (isTerminal(x.state) ? 0 : 1);
      if (!best || rank(e) > rank(best) || (rank(e) === rank(best) && e.seq > best.seq)) best = e;
    }
    if (!best) throw neverSubmitted(handle, `from branch "${pr.branch}"`);
    return best;
  }

  /**
   * The getSubmittedPullRequest answer for `pr` in the queue's current model, serialized once per
   * model version: models are replaced, never mutated, so the answers of a version stay right
   * for as long as it is current, and a new version starts with none.
   */
  submittedAnswer(handle: QueueHandle, pr: PrSelector): SubmittedAnswer {
    const model = handle.model;
    let answers = this.submittedAnswers.get(model);
    if (!answers) {
      answers = new Map();
      this.submittedAnswers.set(model, answers);
    }
    const key = pr.number !== undefined ? `number:${pr.number}` : `branch:${pr.branch}`;
    let answer = answers.get(key);
    if (!answer) {
      const entry = this.select(handle, pr);
      answer = { entry, body: JSON.stringify(presentSubmitted(entry, readinessOf(model, entry), model)) };
      answers.set(key, answer);
    }
    return answer;
  }

  /** The getSubmittedPullRequest answer's JSON for `pr` in the queue's current model. */
  submittedBody(handle: QueueHandle, pr: PrSelector): string {
    return this.submittedAnswer(handle, pr).body;
  }

  listPullRequests(handle: QueueHandle, options: ListOptions) {
    const take = options.take ?? 50;
    const since = options.since === undefined ? undefined : Date.parse(options.since);
    const until = options.until === undefined ? undefined : Date.parse(options.until);
    // Queue order as the engine sees it (the line, then the PRs not ready, then those that left):
    // computed live, so a page after a change continues after the cursor's PR where it is now.
    let entries = listOrder(handle.model);
    const lanes = laneNumbers(handle.model, entries);
    if (options.cursor !== undefined && options.cursor !== '') {
      const at = entries.findIndex((e) => e.id === options.cursor);
      if (at < 0) throw badRequest('cursor: unknown cursor (pass the nextCursor of the previous page)');
      entries = entries.slice(at + 1);
    }
    const matches = (e: Entry) => {
      if (options.state !== undefined && e.state !== options.state) return false;
      if (since !== undefined || until !== undefined) {
        if (e.concludedAt === null) return false;
        if (since !== undefined && e.concludedAt < since) return false;
        if (until !== undefined && e.concludedAt > until) return false;
      }
      return true;
    };
    const page: Entry[] = [];
    let more = false;
    for (const e of entries) {
      if (!matches(e)) continue;
      if (page.length === take) {
        more = true;
        break;
      }
      page.push(e);
    }
    const out: { pullRequests: ReturnType<typeof presentListItem>[]; nextCursor?: string } = {
      pullRequests: page.map((e) => presentListItem(e, lanes.get(e.id))),
    };
    if (more) out.nextCursor = page[page.length - 1].id;
    return out;
  }
}
