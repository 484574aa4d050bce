import { z } from 'zod';
import { QUEUE_STATES, MODES } from './mq.js';

// Railyard extension for the web dashboard (not in Trunk's contract): every merge queue of the
// token's organisation with the figures of the queues overview. Read-only.

export const ListQueuesRequest = z.object({});
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
});
export type QueueSummary = z.infer<typeof QueueSummary>;

export const ListQueuesResponse = z.object({
  /** The token's organisation (the org_url_slug of the flaky-test operations). */
  org: z.string(),
  queues: z.array(QueueSummary),
});
export type ListQueuesResponse = z.infer<typeof ListQueuesResponse>;
