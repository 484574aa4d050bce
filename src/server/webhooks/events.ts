/**
 * What Railyard's outgoing webhooks say: Trunk's event names and payloads (reference
 * trunk-v1-api.md §7, with its spelling `canceled`), built from the state changes a queue step
 * commits. Pure: the store calls these inside the step's transaction (src/store/webhooks.ts).
 * Railyard-only events are listed in the contract (src/contract/webhook-events.ts), fields under
 * `railyard`; the queue's own changes (paused, resumed, drained, mode changed) are extensions.
 */
import {
  CANCELLATION_REASONS,
  FAILURE_REASONS,
  isoTime,
  MERGED_REASONS,
  QUEUED_REASONS,
  type Repo,
} from '../../contract/index.js';
import { BATCH_ACTIONS, PR_ACTIONS, type QueueAction } from '../../contract/webhook-events.js';
import { changedItems } from '../../engine/index.js';
import type { QueueModel, TestRun } from '../../engine/types.js';
import type { OutboxEvent, PrTransition, QueueEventBuilder, QueueIdentity } from '../../store/index.js';
import { prPageUrl, queuePageUrl, type PrUrlOf } from '../links.js';

export { EVENT_TYPES, EXTENSION_EVENTS, TRUNK_EVENTS } from '../../contract/webhook-events.js';

export const repoKeyOf = (repo: Repo) => `${repo.host}/${repo.owner}/${repo.name}`.toLowerCase();

const oneOf = <T extends string>(list: readonly T[], value: string | null, fallback: T): T =>
  value !== null && (list as readonly string[]).includes(value) ? (value as T) : fallback;

type PrAction = (typeof PR_ACTIONS)[number] | 'tests_passed';

/** The Trunk action of a state change (none for changes Trunk does not report). */
function actionOf(t: PrTransition): PrAction | null {
  switch (t.to) {
    case 'pending':
      return 'queued';
    case 'testing':
      return 'testing';
    case 'pending_failure':
      return 'pending_failure';
    case 'failed':
      return 'failed';
    case 'cancelled':
      return 'canceled';
    case 'merged':
      return 'merged';
    case 'tests_passed':
      return 'tests_passed';
    default:
      return null;
  }
}

/** Fields of the test run (test branch, commit, batch, bisection) an event carries. */
function runFields(run: TestRun | undefined): Record<string, unknown> {
  if (!run) return { batched: false };
  const out: Record<string, unknown> = { batched: run.prNumbers.length > 1 };
  if (run.branch) out.test_branch = run.branch;
  if (run.sha) out.test_branch_sha = run.sha;
  return out;
}

function reasonFields(action: PrAction, t: PrTransition, run: TestRun | undefined): Record<string, unknown> {
  const bisection = { is_bisection: run?.isBisection ?? false };
  switch (action) {
    case 'submitted':
      return { submitted_reason: 'API_REQUESTED' };
    case 'queued':
      return { queued_reason: oneOf(QUEUED_REASONS, t.reason, 'MERGE_ITEM_NOW_READY') };
    case 'testing':
    case 'tests_passed':
      return { ...runFields(run), ...bisection };
    case 'pending_failure':
      return { ...runFields(run), failure_reason: oneOf(FAILURE_REASONS, t.reason, 'TEST_RUN_REQUIRED_STATUS_FAILED') };
    case 'failed':
      return { ...runFields(run), failure_reason: oneOf(FAILURE_REASONS, t.reason, 'TEST_RUN_REQUIRED_STATUS_FAILED'), ...bisection };
    case 'canceled':
      return { ...runFields(run), cancellation_reason: oneOf(CANCELLATION_REASONS, t.reason, 'USER_REQUESTED'), ...bisection };
    case 'merged':
      return { ...runFields(run), merged_reason: oneOf(MERGED_REASONS, t.reason, 'MERGE_GRAPH_MERGE') };
  }
}

/** Lookup by id among `changed`, else (rarely: a run the step left alone) in `all`, newest first. */
function byId<T extends { id: string }>(changed: readonly T[], all: readonly T[]): { get(id: string): T | undefined } {
  const map = new Map(changed.map((x) => [x.id, x]));
  return {
    get(id) {
      const found = map.get(id);
      if (found) return found;
      for (let i = all.length - 1; i >= 0; i--) if (all[i].id === id) return all[i];
      return undefined;
    },
  };
}

/**
 * The queue events of one committed step, for endpoints at `dashboard` (the server's public URL);
 * `prUrl` gives the PR's page on its forge (in `railyard.pr_url`).
 */
export function queueEventBuilder(dashboard: () => string, prUrl: PrUrlOf = () => null): QueueEventBuilder {
  return (queue: QueueIdentity, before: QueueModel, after: QueueModel, transitions: readonly PrTransition[], at: number): OutboxEvent[] => {
    // What the step changed (its transitions' entries, their runs), not the queue's whole history.
    const entries = byId(changedItems(before.entries, after.entries).upsert, after.entries);
    const runs = byId(changedItems(before.runs, after.runs).upsert, after.runs);
    const repository = { host: queue.repo.host, owner: queue.repo.owner, name: queue.repo.name };
    const repoKey = repoKeyOf(queue.repo);
    const out: OutboxEvent[] = [];
    const batches = new Map<string, { run: TestRun; action: PrAction; prs: number[]; t: PrTransition }>();
    for (const t of transitions) {
      const entry = entries.get(t.entryId);
      const run = t.testRunId ? runs.get(t.testRunId) : undefined;
      const actions: PrAction[] = [];
      if (t.from === null) actions.push('submitted');
      const action = actionOf(t);
      if (action) actions.push(action);
      for (const a of actions) {
        const type = `pull_request.${a}`;
        out.push({
          type,
          orderKey: `${queue.id}#${t.prNumber}`,
          repoKey,
          payload: {
            type,
            action: a,
            status: a,
            author: entry?.pr.author ?? '',
            http_details_url: prPageUrl(dashboard(), queue.repo, queue.branch, t.prNumber),
            pr_number: t.prNumber,
            repository,
            target_branch: queue.branch,
            timestamp: isoTime(t.at),
            ...reasonFields(a, t, run),
            railyard: {
              queue_entry_id: t.entryId,
              reason: t.reason,
              detail: t.detail,
              title: entry?.pr.title ?? null,
              test_run_id: t.testRunId,
              pr_url: prUrl(queue.repo, t.prNumber),
            },
          },
        });
      }
      if (run && run.prNumbers.length > 1 && action && (BATCH_ACTIONS as readonly string[]).includes(action)) {
        const key = `${run.id}:${action}`;
        const batch = batches.get(key) ?? { run, action, prs: [], t };
        batch.prs.push(t.prNumber);
        batches.set(key, batch);
      }
    }
    for (const { run, action, prs, t } of batches.values()) {
      const type = `pull_request_batch.${action}`;
      const fields = reasonFields(action, t, run);
      delete fields.batched;
      out.push({
        type,
        orderKey: `${queue.id}@${run.id}`,
        repoKey,
        payload: {
          type,
          action,
          status: action,
          test_branch: run.branch ?? '',
          test_branch_sha: run.sha ?? '',
          ...fields,
          pr_numbers: prs,
          pr_numbers_in_batch: run.prNumbers,
          repository,
          target_branch: queue.branch,
          timestamp: isoTime(t.at),
          railyard: { test_run_id: run.id },
        },
      });
    }
    out.push(...queueStateEvents(queue, before, after, at, dashboard));
    return out;
  };
}

/** PRs the queue has admitted (a draining queue takes no new ones: it is drained when none is left). */
const ADMITTED = new Set(['pending', 'testing', 'tests_passed', 'pending_failure']);
const admitted = (m: QueueModel) => m.entries.some((e) => ADMITTED.has(e.state));

/**
 * The queue's own changes in one step (extensions): paused, resumed (running again after paused or
 * draining), drained (draining with no admitted PR left: at the step that concluded the last one,
 * or at once when a queue with none is drained), and mode changed (when the mode flips; on a busy
 * queue that is once it emptied).
 */
function queueStateEvents(queue: QueueIdentity, before: QueueModel, after: QueueModel, at: number, dashboard: () => string): OutboxEvent[] {
  if (before.config === after.config && before.entries === after.entries) return [];
  const was = before.config.state;
  const now = after.config.state;
  const actions: QueueAction[] = [];
  if (now === 'paused' && was !== 'paused') actions.push('paused');
  if (now === 'running' && (was === 'paused' || was === 'draining')) actions.push('resumed');
  if (now === 'draining' && !admitted(after) && (was !== 'draining' || admitted(before))) actions.push('drained');
  if (after.config.mode !== before.config.mode) actions.push('mode_changed');
  const repository = { host: queue.repo.host, owner: queue.repo.owner, name: queue.repo.name };
  return actions.map((action) => {
    const type = `merge_queue.${action}`;
    return {
      type,
      // One key per queue: its events reach an endpoint in the order they happened.
      orderKey: `${queue.id}:queue`,
      repoKey: repoKeyOf(queue.repo),
      payload: {
        type,
        action,
        repository,
        target_branch: queue.branch,
        state: now,
        previous_state: was,
        mode: after.config.mode,
        ...(action === 'mode_changed' ? { previous_mode: before.config.mode } : {}),
        http_details_url: queuePageUrl(dashboard(), queue.repo, queue.branch),
        timestamp: isoTime(at),
      },
    };
  });
}

/** The event `webhook test` sends (an extension): says who asked and when. */
export function testEvent(endpointId: string, at: number): OutboxEvent {
  return {
    type: 'webhook.test',
    orderKey: `test:${endpointId}`,
    repoKey: null,
    payload: { type: 'webhook.test', endpoint_id: endpointId, timestamp: isoTime(at), message: 'A test event sent by `railyard webhook test`.' },
  };
}
