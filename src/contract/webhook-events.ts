/**
 * The catalogue of outgoing webhook events: Trunk's event types (reference trunk-v1-api.md §7,
 * with its spelling `canceled`) and Railyard's extensions, named in Trunk's style. The OpenAPI
 * document lists every one under `webhooks` (extensions marked `x-railyard-extension`, with their
 * payload schemas); the server builds the payloads (src/server/webhooks/events.ts). Dependency-free.
 */
import { MODES, QUEUE_STATES } from './constants.js';

export const PR_ACTIONS = ['submitted', 'queued', 'testing', 'pending_failure', 'failed', 'canceled', 'merged'] as const;
export const BATCH_ACTIONS = ['testing', 'pending_failure', 'failed', 'canceled', 'merged'] as const;

/** Every event type Trunk sends that Railyard sends too. */
export const TRUNK_EVENTS = [
  ...PR_ACTIONS.map((a) => `pull_request.${a}`),
  ...BATCH_ACTIONS.map((a) => `pull_request_batch.${a}`),
  'test_case.status_changed',
  'v2.test_case.status_changed',
  'test_case.quarantining_setting_changed',
  'test_case.monitor_status_changed',
] as const;

/** What a queue event says happened (`merge_queue.<action>`). */
export const QUEUE_ACTIONS = ['paused', 'resumed', 'drained', 'mode_changed'] as const;
export type QueueAction = (typeof QUEUE_ACTIONS)[number];

/** Railyard's own events (extensions). */
export const EXTENSION_EVENTS = [
  'pull_request.tests_passed',
  'webhook.test',
  ...QUEUE_ACTIONS.map((a) => `merge_queue.${a}`),
] as const;

export const EVENT_TYPES: readonly string[] = [...TRUNK_EVENTS, ...EXTENSION_EVENTS];

const repository = {
  type: 'object',
  required: ['host', 'owner', 'name'],
  properties: { host: { type: 'string' }, owner: { type: 'string' }, name: { type: 'string' } },
};
const timestamp = { type: 'string', format: 'date-time' };

function queueEvent(action: QueueAction, extra: Record<string, unknown> = {}, required: string[] = []) {
  return {
    type: 'object',
    required: ['type', 'action', 'repository', 'target_branch', 'state', 'previous_state', 'mode', 'http_details_url', 'timestamp', ...required],
    properties: {
      type: { const: `merge_queue.${action}` },
      action: { const: action },
      repository,
      target_branch: { type: 'string' },
      state: { enum: [...QUEUE_STATES], description: 'The queue state after the change' },
      previous_state: { enum: [...QUEUE_STATES], description: 'The queue state before the change' },
      mode: { enum: [...MODES], description: 'The queue mode after the change' },
      http_details_url: { type: 'string', format: 'uri', description: "The queue's dashboard page" },
      timestamp,
      ...extra,
    },
  };
}

/** The payload schemas of the extension events. */
export const EXTENSION_EVENT_SCHEMAS: Record<(typeof EXTENSION_EVENTS)[number], { summary: string; schema: Record<string, unknown> }> = {
  'pull_request.tests_passed': {
    summary: "A PR's test run passed (before it merges): Trunk's pull_request.testing fields with action tests_passed",
    schema: {
      type: 'object',
      required: ['type', 'action', 'status', 'author', 'http_details_url', 'pr_number', 'repository', 'target_branch', 'timestamp', 'is_bisection'],
      properties: {
        type: { const: 'pull_request.tests_passed' },
        action: { const: 'tests_passed' },
        status: { const: 'tests_passed' },
        author: { type: 'string' },
        http_details_url: { type: 'string', format: 'uri' },
        pr_number: { type: 'integer', minimum: 0 },
        repository,
        target_branch: { type: 'string' },
        timestamp,
        test_branch: { type: 'string' },
        test_branch_sha: { type: 'string' },
        batched: { type: 'boolean' },
        is_bisection: { type: 'boolean' },
      },
    },
  },
  'webhook.test': {
    summary: 'A test event (`railyard webhook test`, testWebhook)',
    schema: {
      type: 'object',
      required: ['type', 'endpoint_id', 'timestamp'],
      properties: { type: { const: 'webhook.test' }, endpoint_id: { type: 'string' }, timestamp, message: { type: 'string' } },
    },
  },
  'merge_queue.paused': { summary: 'The queue was paused (it tests and merges nothing until resumed)', schema: queueEvent('paused') },
  'merge_queue.resumed': { summary: 'A paused or draining queue runs again', schema: queueEvent('resumed') },
  'merge_queue.drained': {
    summary: 'A draining queue has no admitted PR left (everything in it merged, failed or was canceled)',
    schema: queueEvent('drained'),
  },
  'merge_queue.mode_changed': {
    summary: "The queue's mode changed (single / parallel; on a busy queue once it emptied)",
    schema: queueEvent('mode_changed', { previous_mode: { enum: [...MODES] } }, ['previous_mode']),
  },
};

/**
 * The OpenAPI 3.1 `webhooks` object: one entry per event type, the body an endpoint receives.
 * Trunk's events point at Trunk's own description (their payloads are Trunk's, plus a `railyard`
 * object in PR and flaky-test events); the extensions carry their schema and `x-railyard-extension`.
 */
export function webhooksDocument(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const operation = (summary: string, schema: Record<string, unknown>, extension: boolean) => ({
    post: {
      summary,
      tags: ['webhooks'],
      parameters: ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => ({ name, in: 'header', required: true, schema: { type: 'string' } })),
      requestBody: { required: true, content: { 'application/json': { schema } } },
      responses: { '2XX': { description: 'Received (any other answer is retried with the same webhook-id)' } },
      ...(extension ? { 'x-railyard-extension': true } : {}),
    },
  });
  for (const type of TRUNK_EVENTS) {
    out[type] = operation(
      `Trunk's ${type} event: Trunk's payload (Trunk's v1 OpenAPI description, webhooks)`,
      { type: 'object', required: ['type'], properties: { type: { const: type } } },
      false,
    );
  }
  for (const type of EXTENSION_EVENTS) out[type] = operation(EXTENSION_EVENT_SCHEMAS[type].summary, EXTENSION_EVENT_SCHEMAS[type].schema, true);
  return out;
}
