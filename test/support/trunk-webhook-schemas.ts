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

/** Railyard's extension events (README "Outgoing webhooks"). */
export const RAILYARD_EVENT_SCHEMAS: Record<string, object> = {
  'pull_request.tests_passed': pr('tests_passed', { ...testFields, is_bisection }, ['is_bisection']),
  'webhook.test': {
    type: 'object',
    required: ['type', 'endpoint_id', 'timestamp'],
    properties: { type: { const: 'webhook.test' }, endpoint_id: { type: 'string' }, timestamp: { type: 'string', format: 'date-time' } },
  },
};
