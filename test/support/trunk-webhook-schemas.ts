/**
 * JSON schemas of Trunk's merge-queue webhook events, written for these tests from the facts of
 * Trunk's v1 OpenAPI description (`webhooks` of openapi.json in github.com/trunk-io/docs2 at
 * commit 3fc9a683bfbc82ef65809911f79aaf354f0bc366, summarised in ../shared/reference/trunk-v1-api.md
 * §7): field names, types, required sets and enums. A payload valid here is one a receiver written
 * for Trunk reads. Extra properties are allowed (Trunk's schemas do not forbid them; Railyard adds
 * its own under `railyard`). Railyard's extension events are at the end.
 */
import { CANCELLATION_REASONS, FAILURE_REASONS, MERGED_REASONS, QUEUED_REASONS } from '../../src/contract/index.js';

const repository = {
  type: 'object',
  required: ['host', 'owner', 'name'],
  properties: { host: { type: 'string' }, owner: { type: 'string' }, name: { type: 'string' } },
};

const common = (type: string, action: string) => ({
  type: { const: type },
  action: { const: action },
  status: { const: action },
  repository,
  target_branch: { type: 'string' },
  timestamp: { type: 'string', format: 'date-time' },
});

const prCommon = (action: string) => ({
  ...common(`pull_request.${action}`, action),
  author: { type: 'string' },
  http_details_url: { type: 'string', format: 'uri' },
  pr_number: { type: 'integer', minimum: 0 },
});
const PR_REQUIRED = ['type', 'action', 'author', 'http_details_url', 'pr_number', 'repository', 'status', 'target_branch', 'timestamp'];

const testFields = {
  test_branch: { type: 'string' },
  test_branch_sha: { type: 'string' },
  test_pr_number: { type: 'integer', minimum: 0 },
  batched: { type: 'boolean' },
};
const failure_reason = { enum: [...FAILURE_REASONS] };
const cancellation_reason = { enum: [...CANCELLATION_REASONS] };
const queued_reason = { enum: [...QUEUED_REASONS] };
const merged_reason = { enum: [...MERGED_REASONS] };
const submitted_reason = { enum: ['USER_REQUESTED', 'TRUNK_ADMIN_REQUESTED', 'API_REQUESTED'] };
const is_bisection = { type: 'boolean' };

const pr = (action: string, extra: Record<string, unknown>, required: string[] = []) => ({
  type: 'object',
  required: [...PR_REQUIRED, ...required],
  properties: { ...prCommon(action), ...extra },
});

const BATCH_REQUIRED = ['test_branch', 'test_branch_sha', 'type', 'action', 'pr_numbers', 'repository', 'status', 'target_branch', 'timestamp'];
const batch = (action: string, extra: Record<string, unknown>, required: string[] = []) => ({
  type: 'object',
  required: [...BATCH_REQUIRED, ...required],
  properties: {
    ...common(`pull_request_batch.${action}`, action),
    test_branch: { type: 'string' },
    test_branch_sha: { type: 'string' },
    test_pr_number: { type: 'integer', minimum: 0 },
    pr_numbers: { type: 'array', items: { type: 'integer', minimum: 0 } },
    pr_numbers_in_batch: { type: 'array', items: { type: 'integer', minimum: 0 } },
    ...extra,
  },
});

export const TRUNK_EVENT_SCHEMAS: Record<string, object> = {
  'pull_request.submitted': pr('submitted', { submitted_reason }),
  'pull_request.queued': pr('queued', { queued_reason }),
  'pull_request.testing': pr('testing', { ...testFields, is_bisection }, ['is_bisection']),
  'pull_request.pending_failure': pr('pending_failure', { ...testFields, failure_reason }),
  'pull_request.failed': pr('failed', { ...testFields, failure_reason, is_bisection }, ['is_bisection']),
  'pull_request.canceled': pr('canceled', { ...testFields, cancellation_reason, is_bisection }, ['is_bisection']),
  'pull_request.merged': pr('merged', { ...testFields, merged_reason }),
  'pull_request_batch.testing': batch('testing', { is_bisection }, ['is_bisection']),
  'pull_request_batch.pending_failure': batch('pending_failure', { failure_reason }),
  'pull_request_batch.failed': batch('failed', { failure_reason, is_bisection }, ['is_bisection']),
  'pull_request_batch.canceled': batch('canceled', { cancellation_reason, is_bisection }, ['is_bisection']),
  'pull_request_batch.merged': batch('merged', { merged_reason }),
};

const status = { enum: ['healthy', 'flaky', 'broken'] };
const testCase = {
  type: 'object',
  required: ['id', 'name', 'variant', 'repository', 'html_url', 'status', 'codeowners'],
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    variant: { type: 'string' },
    repository: { type: 'object', required: ['html_url'], properties: { html_url: { type: 'string', format: 'uri' } } },
    html_url: { type: 'string', format: 'uri' },
    status: {
      type: 'object',
      required: ['value', 'reason', 'timestamp'],
      properties: { value: status, reason: { type: 'string' }, timestamp: { type: 'string', format: 'date-time' } },
    },
    file_path: { type: 'string' },
    parent: { type: 'string' },
    classname: { type: 'string' },
    codeowners: { type: 'array', items: { type: 'string' } },
    test_suite: { type: 'string' },
  },
};
const setting = { enum: ['ALWAYS_QUARANTINE', 'NEVER_QUARANTINE', 'UNSPECIFIED'] };

/** Trunk's flaky-test events (§7.3; the newer ones from the catalogue's table form). */
export const TRUNK_FLAKY_EVENT_SCHEMAS: Record<string, object> = {
  'test_case.status_changed': {
    type: 'object',
    required: ['type', 'test_case', 'status_change'],
    properties: {
      type: { const: 'test_case.status_changed' },
      test_case: testCase,
      status_change: {
        type: 'object',
        required: ['previous_status', 'current_status'],
        properties: {
          previous_status: status,
          current_status: {
            type: 'object',
            required: ['value', 'reason', 'timestamp'],
            properties: { value: status, reason: { type: 'string' }, timestamp: { type: 'string', format: 'date-time' } },
          },
        },
      },
    },
  },
  'test_case.quarantining_setting_changed': {
    type: 'object',
    required: ['type', 'test_case', 'quarantine_setting_changed'],
    properties: {
      type: { const: 'test_case.quarantining_setting_changed' },
      test_case: testCase,
      quarantine_setting_changed: {
        type: 'object',
        required: ['actor', 'reason', 'timestamp', 'previous_quarantining_setting', 'updated_quarantining_setting'],
        properties: {
          actor: { type: 'object', properties: { full_name: { type: 'string' }, email: { type: 'string' } } },
          reason: { type: ['string', 'null'] },
          timestamp: { type: 'string', format: 'date-time' },
          previous_quarantining_setting: setting,
          updated_quarantining_setting: setting,
        },
      },
    },
  },
  'test_case.monitor_status_changed': {
    type: 'object',
    required: ['type', 'monitor', 'repository', 'test_case'],
    properties: {
      type: { const: 'test_case.monitor_status_changed' },
      monitor: {
        type: 'object',
        required: ['id', 'type', 'status'],
        properties: { id: { type: 'string' }, type: { type: 'string' }, status: { enum: ['active', 'resolved'] } },
      },
      repository: { type: 'object', required: ['id', 'html_url'], properties: { id: { type: 'string' }, html_url: { type: 'string' } } },
      test_case: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } },
    },
  },
  'v2.test_case.status_changed': {
    type: 'object',
    required: ['type', 'previous_status', 'new_status', 'triggered_by'],
    properties: {
      type: { const: 'v2.test_case.status_changed' },
      previous_status: status,
      new_status: status,
      triggered_by: {
        type: 'object',
        required: ['monitor_id', 'monitor_type', 'monitor_status'],
        properties: { monitor_id: { type: 'string' }, monitor_type: { type: 'string' }, monitor_status: { enum: ['active', 'resolved'] } },
      },
    },
  },
};

/** Railyard's queue events (extensions): what docs/webhooks.md promises a receiver. */
const QUEUE_STATE = { enum: ['running', 'paused', 'draining', 'switching_modes'] };
const queueEvent = (action: string, extra: Record<string, unknown> = {}, required: string[] = []) => ({
  type: 'object',
  required: ['type', 'action', 'repository', 'target_branch', 'state', 'previous_state', 'mode', 'http_details_url', 'timestamp', ...required],
  properties: {
    type: { const: `merge_queue.${action}` },
    action: { const: action },
    repository,
    target_branch: { type: 'string' },
    state: QUEUE_STATE,
    previous_state: QUEUE_STATE,
    mode: { enum: ['single', 'parallel'] },
    http_details_url: { type: 'string', format: 'uri' },
    timestamp: { type: 'string', format: 'date-time' },
    ...extra,
  },
});

/** Railyard's extension events (docs/webhooks.md). */
export const RAILYARD_EVENT_SCHEMAS: Record<string, object> = {
  'merge_queue.paused': queueEvent('paused', { state: { const: 'paused' } }),
  'merge_queue.resumed': queueEvent('resumed', { state: { const: 'running' }, previous_state: { enum: ['paused', 'draining'] } }),
  'merge_queue.drained': queueEvent('drained', { state: { const: 'draining' } }),
  'merge_queue.mode_changed': queueEvent('mode_changed', { previous_mode: { enum: ['single', 'parallel'] } }, ['previous_mode']),
  'pull_request.tests_passed': pr('tests_passed', { ...testFields, is_bisection }, ['is_bisection']),
  'webhook.test': {
    type: 'object',
    required: ['type', 'endpoint_id', 'timestamp'],
    properties: { type: { const: 'webhook.test' }, endpoint_id: { type: 'string' }, timestamp: { type: 'string', format: 'date-time' } },
  },
};
