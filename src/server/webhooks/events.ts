/**
 * What Railyard's outgoing webhooks say: Trunk's event names and payloads (reference
 * trunk-v1-api.md §7, with its spelling `canceled`), built from the state changes a queue step
 * commits. Pure: the store calls these inside the step's transaction (src/store/webhooks.ts).
 * Railyard-only events and fields are listed in EXTENSION_EVENTS and under `railyard`.
 */
import {
  CANCELLATION_REASONS,
  FAILURE_REASONS,
  isoTime,
  MERGED_REASONS,
  QUEUED_REASONS,
  type Repo,
} from '../../contract/index.js';
import type { Entry, QueueModel, TestRun } from '../../engine/types.js';
import type { OutboxEvent, PrTransition, QueueEventBuilder, QueueIdentity } from '../../store/index.js';

const PR_ACTIONS = ['submitted', 'queued', 'testing', 'pending_failure', 'failed', 'canceled', 'merged'] as const;
const BATCH_ACTIONS = ['testing', 'pending_failure', 'failed', 'canceled', 'merged'] as const;

/** Every event type Trunk sends that Railyard sends too. */
export const TRUNK_EVENTS = [
  ...PR_ACTIONS.map((a) => `pull_request.${a}`),
  ...BATCH_ACTIONS.map((a) => `pull_request_batch.${a}`),
  'test_case.status_changed',
  'v2.test_case.status_changed',
  'test_case.quarantining_setting_changed',
  'test_case.monitor_status_changed',
] as const;

/** Railyard's own events (extensions, named in Trunk's style). */
export const EXTENSION_EVENTS = ['pull_request.tests_passed', 'webhook.test'] as const;

export const EVENT_TYPES: readonly string[] = [...TRUNK_EVENTS, ...EXTENSION_EVENTS];

export const repoKeyOf = (repo: Repo) => `${repo.host}/${repo.owner}/${repo.name}`.toLowerCase();

/** The dashboard page of a pull request (hash routes of web/src/router.ts). */
export function prPageUrl(dashboard: string, repo: Repo, branch: string, prNumber: number): string {
  const parts = ['pr', repo.host, repo.owner, repo.name, branch, String(prNumber)].map(encodeURIComponent);
  let base = dashboard;
  while (base.endsWith('/')) base = base.slice(0, -1);
  return `${base}/#/${parts.join('/')}`;
}

/** A function giving the forge's web page of a pull request (null: the forge has none). */
export type PrUrlOf = (repo: Repo, prNumber: number) => string | null;

/**
 * The forge's web page of a pull request, by forge kind: GitLab's merge requests, GitHub's pull
 * requests (also the sandbox's, whose repositories are named like GitHub's); none for local bare
 * repositories (`--git-root`), which have no web page.
 */
export function forgePrUrl(forgeKind: string): PrUrlOf {
  return (repo, n) => {
    const path = `${encodeURIComponent(repo.host)}/${repo.owner.split('/').map(encodeURIComponent).join('/')}/${encodeURIComponent(repo.name)}`;
    if (forgeKind === 'gitlab') return `https://${path}/-/merge_requests/${n}`;
    if (forgeKind === 'git') return null;
    return `https://${path}/pull/${n}`;
  };
}

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

/**
 * The queue events of one committed step, for endpoints at `dashboard` (the server's public URL);
 * `prUrl` gives the PR's page on its forge (in `railyard.pr_url`).
 */
export function queueEventBuilder(dashboard: () => string, prUrl: PrUrlOf = () => null): QueueEventBuilder {
  return (queue: QueueIdentity, after: QueueModel, transitions: readonly PrTransition[]): OutboxEvent[] => {
    const entries = new Map<string, Entry>(after.entries.map((e) => [e.id, e]));
    const runs = new Map<string, TestRun>(after.runs.map((r) => [r.id, r]));
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
    return out;
  };
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
