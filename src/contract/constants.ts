/**
 * The merge queue's vocabulary as plain constants: states, modes and merge methods. The zod
 * schemas of mq.ts are built from these, and code that only needs the names (CLI flag options,
 * the demo, metrics, the Action) imports them from here without loading zod.
 */

export const PULL_REQUEST_STATES = [
  'not_ready',
  'pending',
  'testing',
  'tests_passed',
  'merged',
  'failed',
  'cancelled',
  'pending_failure',
] as const;
export type PullRequestState = (typeof PULL_REQUEST_STATES)[number];
/** The states a PR leaves the queue in. */
export const CONCLUSIONS = ['merged', 'failed', 'cancelled'] as const satisfies readonly PullRequestState[];
export type Conclusion = (typeof CONCLUSIONS)[number];
/** The same, typed as any state (so `TERMINAL_STATES.includes(state)` takes every state). */
export const TERMINAL_STATES: readonly PullRequestState[] = CONCLUSIONS;

export function isTerminalState(state: string | undefined | null): boolean {
  return (TERMINAL_STATES as readonly string[]).includes(state ?? '');
}

export const QUEUE_STATES = ['running', 'paused', 'draining', 'switching_modes'] as const;
export type QueueState = (typeof QUEUE_STATES)[number];
/** The states a queue can be set to (switching_modes is reached by changing the mode). */
export const SETTABLE_QUEUE_STATES = ['running', 'paused', 'draining'] as const;

export const MODES = ['single', 'parallel'] as const;
export type Mode = (typeof MODES)[number];

export const DIRECT_MERGE_MODES = ['off', 'always'] as const;
export type DirectMergeMode = (typeof DIRECT_MERGE_MODES)[number];

export const OPTIMIZATION_MODES = ['off', 'bisection_skip_redundant_tests'] as const;
export type OptimizationMode = (typeof OPTIMIZATION_MODES)[number];

export const MERGE_METHODS = ['merge_commit', 'squash', 'rebase'] as const;
export type MergeMethod = (typeof MERGE_METHODS)[number];

/**
 * Railyard extension (queue setting `flakyPolicy`): which failing tests do not fail a test run —
 * none (`off`, Trunk's behaviour), tests quarantined on the target branch, or also tests the
 * monitors mark flaky there. A test whose file a PR of the run changes is never ignored.
 */
export const FLAKY_POLICIES = ['off', 'ignore_quarantined', 'ignore_flaky'] as const;
export type FlakyPolicy = (typeof FLAKY_POLICIES)[number];

export const MERGEABILITY = ['unspecified', 'in_progress', 'mergeable', 'not_mergeable'] as const;
export type Mergeability = (typeof MERGEABILITY)[number];

/**
 * What a queued PR waits for (readiness.waitingFor, a Railyard extension): its base branch, its
 * mergeability, the target's branch protection (approvals, required checks: readiness.blockedBy
 * says which), its impacted targets (parallel mode), or the queue itself — paused (nothing starts
 * or merges), draining or switching modes (no new PR enters until it runs again).
 */
export const WAIT_REASONS = [
  'base_branch',
  'mergeability',
  'branch_protection',
  'impacted_targets',
  'queue_paused',
  'queue_draining',
  'queue_switching_modes',
] as const;
export type WaitReason = (typeof WAIT_REASONS)[number];

/**
 * Where clients send requests unless told otherwise (Trunk's hosted API) — never with a Railyard
 * token (RAILYARD_TOKEN_PREFIX): Trunk does not know it, and a token goes only where its user sent it.
 */
export const DEFAULT_API_URL = 'https://api.trunk.io/v1';

/** Prefix of every API token a Railyard server makes. */
export const RAILYARD_TOKEN_PREFIX = 'ry_';
