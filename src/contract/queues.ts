/** The listQueues extension's schemas: every queue of the organisation with the dashboard's figures. */
import { z } from 'zod';
import { ALL_PERMISSIONS, type Permission } from './permissions.js';
import { Repo } from './common.js';
import { QUEUE_STATES, MODES } from './mq.js';

// Railyard extension (not in Trunk's contract): every merge queue of the token's organisation with
// the figures of the dashboard's overview and the recent test durations `mq watch` estimates with.
// Read-only.

export const ListQueuesRequest = z.object({
  /** Only the queues of this repository. */
  repo: Repo.optional(),
});
export type ListQueuesRequest = z.infer<typeof ListQueuesRequest>;

export const QueueSummary = z.object({
  repo: z.object({ host: z.string(), owner: z.string(), name: z.string() }),
  targetBranch: z.string(),
  state: z.enum(QUEUE_STATES),
  mode: z.enum(MODES),
  concurrency: z.number().int(),
  /** Admitted PRs not yet concluded (as mq_depth_current). */
  depth: z.number().int().min(0),
  /** PRs waiting before they may enter (not_ready). */
  notReady: z.number().int().min(0),
  /** PRs in a test run in progress. */
  testing: z.number().int().min(0),
  mergedLastHour: z.number().int().min(0),
  mergedLastDay: z.number().int().min(0),
  failedLastDay: z.number().int().min(0),
  /** failed / (merged + failed) over the last day; null when nothing concluded. */
  failureRateLastDay: z.number().min(0).max(1).nullable(),
  /** Median submission-to-conclusion time of PRs that merged or failed in the last day; null when none. */
  medianSecondsInQueueLastDay: z.number().min(0).nullable(),
  /**
   * How long the queue's recent test runs took (the last 20 that finished, bisection runs
   * included), in seconds: the 10th, 25th, 50th and 90th percentile. Absent until a run finished.
   */
  recentTestSeconds: z
    .object({ samples: z.number(), p10: z.number().optional(), p25: z.number(), p50: z.number(), p90: z.number() })
    .optional(),
});
export type QueueSummary = z.infer<typeof QueueSummary>;

export const ListQueuesResponse = z.object({
  /** The token's organisation (the org_url_slug of the flaky-test operations). */
  org: z.string(),
  /** What the token may change (permissions.ts): the dashboard offers only those actions. */
  permissions: z.array(z.enum(ALL_PERMISSIONS as [Permission, ...Permission[]])),
  queues: z.array(QueueSummary),
});
export type ListQueuesResponse = z.infer<typeof ListQueuesResponse>;
