/** The engine's types: a queue's settings, entries, test runs, events it takes and effects it asks for. */
import type {
  CancellationReason,
  DirectMergeMode,
  FailureReason,
  FlakyPolicy,
  ImpactedTargets,
  Mergeability,
  MergedReason,
  MergeMethod,
  PassedReason,
  Mode,
  OptimizationMode,
  PullRequestState,
  QueuedReason,
  QueueState,
  ResolvedPriority,
} from '../contract/index.js';

/** Every setting of a queue (the contract's queue object minus `branch`). */
export interface QueueConfig {
  state: QueueState;
  mode: Mode;
  /** While `state` is `switching_modes`: the mode the queue flips to once empty. */
  pendingMode: Mode | null;
  concurrency: number;
  bisectionConcurrency: number;
  /** False while bisectionConcurrency follows concurrency (never set explicitly). */
  bisectionConcurrencySet: boolean;
  /** Minutes before a run fails with TEST_RUN_TIMEOUT (0 = never), or "auto" (./timeout.ts). */
  testingTimeoutMinutes: number | 'auto';
  /** Not a setting: how long the queue's last passing runs took (ms, oldest first), for "auto". */
  recentPassedRunMs?: number[];
  pendingFailureDepth: number;
  canOptimisticallyMerge: boolean;
  batch: boolean;
  batchingMinSize: number;
  batchingMaxWaitTimeMinutes: number;
  requiredStatuses: string[] | null;
  directMergeMode: DirectMergeMode;
  optimizationMode: OptimizationMode;
  mergeMethod: MergeMethod;
  createPrsForTestingBranches: boolean;
  commentsEnabled: boolean;
  commandsEnabled: boolean;
  statusCheckEnabled: boolean;
  extensionEnabled: boolean;
  enqueueingLabel: string;
  labelCommandsEnabled: boolean;
  stateLabelsEnabled: boolean;
  /** Which failing tests do not fail a run (rules/flaky-verdict.ts); `off` = Trunk's behaviour. */
  flakyPolicy: FlakyPolicy;
  /** For the shell: how long a failed check waits for its uploaded results before it reports the run. */
  flakyReportGraceSeconds: number;
  /** Retries (same commit) of a failure whose failing tests all have flake history; 0..3. */
  flakyRetries: number;
  /** PRs whose `riskEstimate` is above this are tested alone first (rules/probation.ts); null = off. */
  probationThreshold: number | null;
  /** Windows in which nothing lands but PRs of priority value ≤ freezeBypassPriority (./freezes.ts). */
  freezes: FreezeWindow[];
  freezeBypassPriority: number;
}

/** A freeze window: absolute (ISO 8601 with a zone) or recurring (cron in UTC, lasting durationMinutes). */
export type FreezeWindow =
  | { start: string; end: string; reason?: string }
  | { cron: string; durationMinutes: number; reason?: string };

/** What the forge knows about a pull request. */
export interface PrFacts {
  headSha: string;
  headBranch: string;
  title: string;
  author: string;
  baseBranch: string;
  mergeability: Mergeability;
  /** False once the PR is closed on the forge. */
  open: boolean;
  /**
   * What the target's branch rules still wait for on the forge, for people (missing approvals,
   * changes requested, failing required checks); absent when nothing. The PR waits (not_ready,
   * `branch_protection`) while it is set.
   */
  blockedBy?: string;
  /**
   * Why the PR does not merge onto its base (with `mergeability: not_mergeable`): what the forge
   * can tell — the conflicting files and the target's commit that last changed them (git forge),
   * nothing more on GitHub and GitLab. Absent when it merges or the forge does not know.
   */
  conflict?: PrConflict;
  /**
   * Stacked PRs (rules/stacks.ts): the open PR whose head branch is this PR's base branch, as the
   * forge tells; absent when the PR is based on no other PR.
   */
  stackedOn?: number;
  /** With `open: false`: the forge says it was merged (outside the queue, or by it). */
  merged?: boolean;
}

/** What a conflicting PR conflicts with (PrFacts.conflict). */
export interface PrConflict {
  files?: string[];
  /** The commit on the base branch that last changed the conflicting files, and its PR when its message names one. */
  commit?: { sha: string; subject: string; prNumber?: number };
}

/** Why an entry is in its state: a reason code of the contract (src/contract/mq.ts, "reason codes"). */
export type ReasonCode =
  | FailureReason
  | CancellationReason
  | QueuedReason
  | MergedReason
  | PassedReason
  | 'API_REQUESTED'
  | 'AWAITING_READINESS'
  | 'QUEUE_NOT_ACCEPTING';

/** One submission of one pull request to one queue. */
export interface Entry {
  /** Queue-entry id (a new one on every (re)submission after a terminal state). */
  id: string;
  prNumber: number;
  state: PullRequestState;
  reason: ReasonCode | null;
  stateChangedAt: number;
  /** Time of the submission that created this entry. */
  submittedAt: number;
  /** Monotonic submission counter: the FIFO tie-break after priority. */
  seq: number;
  priority: ResolvedPriority;
  noBatch: boolean;
  pr: PrFacts;
  /** Impacted targets reported for `pr.headSha`, or null when none were reported. */
  impactedTargets: ImpactedTargets | null;
  /** The test run testing this entry now, or that last tested it. */
  testRunId: string | null;
  /** When the entry first became pending (admitted) in this submission. */
  admittedAt: number | null;
  /** When its current (or last) test started. */
  testingStartedAt: number | null;
  /** When it reached merged / failed / cancelled. */
  concludedAt: number | null;
  /** Times its tests restarted (testing → pending) in this submission. */
  restarts?: number;
  /** Bisection: entries with the same group id are tested together, as a bisection run (off the main line). */
  bisectGroup?: string | null;
  /**
   * Bisection: the failed combination this group was split from — the PRs its run was built on
   * that had not landed (`base`) and the PRs it tested (`prs`), in queue order.
   */
  bisectKnownFailure?: { base: number[]; prs: number[] } | null;
  /** Split out of a failed batch in this submission; stays set after its group passed and it went back to the main line. */
  bisected?: boolean;
  /** The PR's estimated failure probability (0..1), from the shell; null/undefined = not estimated. */
  riskEstimate?: number | null;
  /**
   * Probation (rules/probation.ts): `testing` while it is tested alone off the line (its
   * `bisectGroup` is the probation group), `passed` once that run passed; null = never on probation.
   */
  probation?: 'testing' | 'passed' | null;
  /** Submitted `direct`: admitted without the forge's PR-side requirements (mergeability, branch rules); still tested. */
  direct?: boolean;
}

/**
 * One failing test of a failed run, as the shell read it from the uploaded results, with what the
 * flaky-test data says of it on the target branch.
 */
export interface FailedTest {
  /** For people (the history lists the names of ignored tests). */
  name: string;
  /** Quarantined on the target branch. */
  quarantined: boolean;
  /** Has flake history on the target branch (the monitors mark it flaky, or it was quarantined). */
  flaky: boolean;
  /** A PR the run's test commit contains (its own or its base, not landed) changes the test's file. */
  changedByPr: boolean;
}

export type TestRunStatus = 'in_progress' | 'succeeded' | 'failed' | 'cancelled';

/** One test of a unit (one PR or a batch) on a predicted base. */
export interface TestRun {
  id: string;
  /** PR numbers tested together in this unit, in queue order. */
  prNumbers: number[];
  /** PR numbers of the units ahead that form the predicted base, in queue order. */
  basePrNumbers: number[];
  isBisection: boolean;
  status: TestRunStatus;
  /** Per required check: undefined = not reported yet. */
  checks: Record<string, 'success' | 'failure' | 'pending'>;
  startedAt: number;
  finishedAt: number | null;
  failureReason: FailureReason | null;
  /** Test branch and commit, once the forge built them. */
  branch: string | null;
  sha: string | null;
  /** Monotonic start order: the queue order of entries that are being tested. */
  seq: number;
  /** How the test commit is built and landed (copied from the queue at start). */
  mergeMethod: MergeMethod;
  /** Required statuses at start (null = every check the repository defines). */
  requiredStatuses: string[] | null;
  /** A merge of this run's commit was asked for (once). */
  mergeRequested: boolean;
  /** PRs this run's merge lands (its base still in the queue plus its own). */
  mergePrNumbers: number[] | null;
  /** When its PRs went back to pending to be tested again (a restart), if they did. */
  restartedAt?: number | null;
  /** Bisection runs: the queue landed a merge after this run started, so its commit is no longer the target plus its PRs. */
  landedSince?: boolean;
  /** 1 for a first test; n + 1 for the retry of a run whose attempt was n (rules/flaky-verdict.ts). */
  attempt?: number;
  /** The failed run this one tests again (same PRs, same base, same queue position). */
  retryOf?: string | null;
  /** The failing tests the shell reported when the run finished failed (undefined = not known). */
  failures?: FailedTest[] | null;
  /** The run failed only on these tests and counts as passed (flakyPolicy). */
  flakyIgnored?: string[] | null;
  /** A probation run: one risky PR tested alone on the target, off the line (rules/probation.ts). */
  isProbation?: boolean;
}

/** The whole state of one queue: what the engine decides on. Plain data, serialisable. */
export interface QueueModel {
  branch: string;
  config: QueueConfig;
  /** Every entry ever submitted, current first-class state; terminal ones are kept for reads. */
  entries: Entry[];
  runs: TestRun[];
  nextSeq: number;
}

export interface SubmitEvent {
  type: 'submit';
  prNumber: number;
  /** undefined = keep (on resubmit) or default. */
  priority?: ResolvedPriority;
  noBatch?: boolean;
  pr: PrFacts;
  /** The PR's estimated failure probability; undefined = keep (on resubmit) or none. */
  riskEstimate?: number | null;
  /** Past the forge's PR-side requirements (still tested); undefined = keep (on resubmit) or not. */
  direct?: boolean;
}
export interface CancelEvent {
  type: 'cancel';
  prNumber: number;
  reason: CancellationReason;
}
export interface RestartEvent {
  type: 'restart';
  prNumber: number;
  reason: QueuedReason;
}
export interface ImpactedTargetsEvent {
  type: 'impactedTargets';
  prNumber: number;
  sha: string;
  targets: ImpactedTargets;
}
export interface PrUpdatedEvent {
  type: 'prUpdated';
  prNumber: number;
  pr: PrFacts;
}
export type ConfigPatch = Partial<
  Omit<QueueConfig, 'pendingMode' | 'bisectionConcurrencySet' | 'recentPassedRunMs'>
> & {
  deleteRequiredStatuses?: boolean;
};
export interface UpdateConfigEvent {
  type: 'updateConfig';
  patch: ConfigPatch;
}
/** Time passed (batch wait, testing timeout). */
export interface TickEvent {
  type: 'tick';
}
/** The shell built and pushed the test commit of a run. */
export interface TestRunStartedEvent {
  type: 'testRunStarted';
  runId: string;
  branch: string;
  sha: string;
}
/** The shell could not build the run: a merge conflict (naming the PR) or a config problem. */
export interface TestRunStartFailedEvent {
  type: 'testRunStartFailed';
  runId: string;
  reason: FailureReason;
  /** The PR that conflicts; without it every PR of the run fails with `reason`. */
  prNumber?: number;
  /** For people (the engine does not read it): what is wrong, kept in the PR's history. */
  detail?: string;
}
/** The required checks of a run finished. */
export interface TestRunFinishedEvent {
  type: 'testRunFinished';
  runId: string;
  passed: boolean;
  checks?: Record<string, 'success' | 'failure' | 'pending'>;
  /** Why it failed; default TEST_RUN_REQUIRED_STATUS_FAILED. */
  reason?: FailureReason;
  /** For people (the engine does not read it): which checks failed, kept in the PR's history. */
  detail?: string;
  /**
   * The failing tests of every failed check, when each failed check's results were uploaded
   * (rules/flaky-verdict.ts). Absent when any failed check has none: an ordinary failure.
   */
  failures?: FailedTest[];
}
/** The target branch moved to the run's commit: its `mergePrNumbers` landed. */
export interface MergeSucceededEvent {
  type: 'mergeSucceeded';
  runId: string;
}
/**
 * The merge did not happen: someone moved the target (everything restarts), the forge failed
 * (`error`: the run's PRs fail), or a rule of the forge refused it with the target unchanged
 * (`refused`: the run's PRs fail quoting the forge in `detail`; with `pauseQueue`, a refusal that
 * concerns every PR — the queue may not push at all — pauses the queue instead, the PRs keep their
 * passed run and land once it runs again). Never retried by itself: no loop of test runs.
 */
export interface MergeFailedEvent {
  type: 'mergeFailed';
  runId: string;
  reason: 'target_moved' | 'error' | 'refused';
  /** For people: the forge's own words (kept in the PR's history). */
  detail?: string;
  pauseQueue?: boolean;
}
/** The target branch moved outside the queue: every run restarts on the new head. */
export interface TargetMovedEvent {
  type: 'targetMoved';
}

export type EngineEvent =
  | SubmitEvent
  | CancelEvent
  | RestartEvent
  | ImpactedTargetsEvent
  | PrUpdatedEvent
  | UpdateConfigEvent
  | TickEvent
  | TestRunStartedEvent
  | TestRunStartFailedEvent
  | TestRunFinishedEvent
  | MergeSucceededEvent
  | MergeFailedEvent
  | TargetMovedEvent;

/**
 * What the test commit of a run is built on (rules/basis.ts): the test commit of the run `runId`
 * (which holds exactly this run's unmerged base), or the target head with the run's unmerged
 * base PRs applied first. Either way the run's own PRs go on top, in order.
 */
export type TestBasis = { on: 'run'; runId: string } | { on: 'target' };

/** Something the shell must do. Outcomes come back as events. */
export type Effect =
  | {
      type: 'stateChanged';
      entryId: string;
      prNumber: number;
      from: PullRequestState | null;
      to: PullRequestState;
      reason: ReasonCode | null;
    }
  | { type: 'startTestRun'; runId: string; basis: TestBasis }
  | { type: 'cancelTestRun'; runId: string }
  | { type: 'merge'; runId: string; prNumbers: number[] };

/** Everything the engine may ask of its caller besides the state: the clock and fresh ids. */
export interface StepContext {
  now: number;
  newId: () => string;
}

export interface StepResult {
  model: QueueModel;
  effects: Effect[];
}

/** A rejected command: the message is for people and becomes a 4xx answer. */
export class EngineRejection extends Error {
  constructor(
    readonly kind: 'not_found' | 'invalid' | 'conflict',
    message: string,
  ) {
    super(message);
    this.name = 'EngineRejection';
  }
}
