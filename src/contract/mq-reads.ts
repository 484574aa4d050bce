/**
 * Trunk's newer v1 reads: several submitted pull requests in one call (getSubmittedPullRequests)
 * and the completed testing of a queue over a time range (listMergeQueueTestingResults).
 */
import { z } from 'zod';
import { DateTimeInput, DateTimeOutput, looseInt, Repo } from './common.js';
import { PrNumber, SubmittedPullRequest, TargetBranch } from './mq.js';

/** The most pull requests one getSubmittedPullRequests asks for (Trunk's v2 equivalent takes 50). */
export const MAX_PRS_PER_LOOKUP = 50;

export const GetSubmittedPullRequestsRequest = z.object({
  repo: Repo,
  targetBranch: TargetBranch,
  prs: z
    .array(z.object({ number: PrNumber }))
    .min(1)
    .max(MAX_PRS_PER_LOOKUP),
  includeTimeline: z.boolean().optional(),
});
export type GetSubmittedPullRequestsRequest = z.infer<typeof GetSubmittedPullRequestsRequest>;

export const GetSubmittedPullRequestsResponse = z.object({
  /** The PRs found, in the order asked (each once), as getSubmittedPullRequest answers them. */
  pullRequests: z.array(SubmittedPullRequest),
  /** The PRs never submitted to this queue: reported here instead of failing the request. */
  notFound: z.array(z.object({ number: z.number() })),
});
export type GetSubmittedPullRequestsResponse = z.infer<typeof GetSubmittedPullRequestsResponse>;

/** How far back testing results go, and the widest window one request may ask for (days). */
export const TESTING_RESULTS_MAX_DAYS = 45;

export const ListTestingResultsRequest = z.object({
  repo: Repo,
  targetBranch: TargetBranch,
  /** Inclusive; at most 45 days before `until`. */
  since: DateTimeInput,
  /** Inclusive; default now. */
  until: DateTimeInput.optional(),
  offset: looseInt(0, 1_000_000).optional(),
  take: looseInt(1, 100).optional(),
});
export type ListTestingResultsRequest = z.infer<typeof ListTestingResultsRequest>;

/** How one PR's test in a run ended (the run's status: `succeeded`, `failed` or `cancelled`). */
export const CYCLE_CONCLUSIONS = ['succeeded', 'failed', 'cancelled'] as const;

export const TestingResult = z.object({
  prNumber: z.number(),
  /** The run (getMergeQueueTestingDetails' testRunId). */
  testRunId: z.string(),
  cycleConclusion: z.enum(CYCLE_CONCLUSIONS),
  /** `in_bisection`: a run of a bisection; `entered_bisection`: the failed batch that started one. Absent otherwise. */
  bisection: z.enum(['in_bisection', 'entered_bisection']).optional(),
  startedAt: DateTimeOutput,
  finishedAt: DateTimeOutput,
  /** 1 for a first test, n + 1 for the retry of attempt n. */
  attempt: z.number(),
});
export type TestingResult = z.infer<typeof TestingResult>;

export const ListTestingResultsResponse = z.object({
  /** One entry per PR per run that finished in the window, newest first. */
  testingResults: z.array(TestingResult),
  /** How many match, ignoring offset and take. */
  totalItems: z.number(),
});
export type ListTestingResultsResponse = z.infer<typeof ListTestingResultsResponse>;
