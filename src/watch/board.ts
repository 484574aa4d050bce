/**
 * The queue as people watch it (`railyard mq watch`, `mq status --wait`): each PR's position,
 * time in queue and an ETA range from the queue's recent test durations. Pure functions over API
 * answers, shared by the CLI, the Action and the web dashboard (no oclif, no Node-only modules).
 */
import type {
  GetQueueResponse,
  QueueListItem,
  QueueSummary,
  SubmittedPullRequest,
} from '../contract/index.js';

/** `45s`, `3m 05s`, `2h 10m`. */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m ${String(seconds % 60).padStart(2, '0')}s`;
  const hours = Math.floor(minutes / 60);
  return `${hours}h ${String(minutes % 60).padStart(2, '0')}m`;
}

/** `~2m 10s–4m 00s`, or `~1m 00s` when both ends round to the same. */
export function formatRange(range: EtaRange): string {
  const low = formatDuration(range.lowMs);
  const high = formatDuration(range.highMs);
  return low === high ? `~${low}` : `~${low}–${high}`;
}

export interface EtaRange {
  lowMs: number;
  highMs: number;
}

export interface BoardRow {
  /** 1-based place in the queue's order (urgent first, then by arrival), as the engine sees it. */
  position: number;
  pr: QueueListItem;
  /** Since the PR entered the queue (its enqueuedAt), or since its last state change for older servers. */
  inQueueMs: number;
  /** Until it is expected to merge: null when there is nothing to go on (no finished run yet, not ready). */
  eta: EtaRange | null;
}

/**
 * The queue's PRs in queue order with position, time in queue and ETA (bench/eta.ts measures it
 * against the simulator; bench/README.md has the figures). The ETA plays the line forward with
 * the recent run durations, a short one (10th percentile) for the low end and a long one (90th)
 * for the high end:
 * - a PR being tested needs what is left of its run (a run past the long duration may still take
 *   up to half of long − short);
 * - each lane (the whole queue in single mode) has `concurrency` slots, held by the runs in
 *   progress until they end; a waiting PR takes the first slot that frees up and holds it for one
 *   run (with batching, `batchingMinSize` waiting PRs share one run);
 * - a PR lands after the PRs ahead of it in its lane (they merge in order), so its range never
 *   starts or ends before theirs: this is what a passed PR waiting for those ahead gets;
 * - each PR ahead that may fail restarts the runs behind it: the high end grows by one long run
 *   times the expected failures ahead (the queue's failure rate over the last day per PR, 1 for
 *   a PR whose run already failed);
 * - a PR whose run failed (pending_failure) gets none: it may not land at all.
 */
export function boardRows(
  queue: GetQueueResponse,
  summary: QueueSummary | undefined,
  now: number,
): BoardRow[] {
  const recent = summary?.recentTestSeconds;
  const short = recent ? (recent.p10 ?? recent.p25) * 1000 : 0;
  const long = recent ? recent.p90 * 1000 : 0;
  const failureRate = summary?.failureRateLastDay ?? 0;
  const slots = Math.max(1, queue.concurrency);
  const batch = queue.batch ? Math.max(1, queue.batchingMinSize) : 1;
  const lanes = new Map<number, LanePlay>();
  return queue.enqueuedPullRequests.map((pr, i) => {
    const since = Date.parse(pr.enqueuedAt ?? pr.stateChangedAt);
    const key = pr.lane ?? 0;
    let lane = lanes.get(key);
    if (!lane) lanes.set(key, (lane = { low: [], high: [], runs: new Set(), waiting: 0, unit: null, ahead: null, risk: 0 }));
    const risk = lane.risk;
    lane.risk += pr.state === 'pending_failure' ? 1 : pr.state === 'tests_passed' ? 0 : failureRate;
    let eta: EtaRange | null = null;
    if (recent && pr.state === 'testing') {
      const elapsed = now - Date.parse(pr.stateChangedAt);
      eta = { lowMs: Math.max(0, short - elapsed), highMs: Math.max((long - short) / 2, long - elapsed) };
      // The PRs of one run (a batch) hold one slot.
      if (!pr.testRunId || !lane.runs.has(pr.testRunId)) {
        if (pr.testRunId) lane.runs.add(pr.testRunId);
        occupy(lane, eta.lowMs, eta.highMs, slots);
      }
    } else if (recent && pr.state === 'pending') {
      if (lane.waiting % batch === 0) {
        const start = { lowMs: take(lane.low, slots), highMs: take(lane.high, slots) };
        lane.unit = { lowMs: start.lowMs + short, highMs: start.highMs + long };
        occupy(lane, lane.unit.lowMs, lane.unit.highMs, slots);
      }
      lane.waiting++;
      eta = lane.unit;
    } else if (recent && pr.state === 'tests_passed') {
      eta = { lowMs: 0, highMs: 0 };
    }
    if (eta) {
      eta = { lowMs: eta.lowMs, highMs: eta.highMs + risk * long };
      if (lane.ahead) eta = { lowMs: Math.max(eta.lowMs, lane.ahead.lowMs), highMs: Math.max(eta.highMs, lane.ahead.highMs) };
      lane.ahead = eta;
    }
    return { position: i + 1, pr, inQueueMs: Math.max(0, now - since), eta };
  });
}

/** One lane of the queue as boardRows plays it forward. */
interface LanePlay {
  /** When each busy slot frees up (ms from now), sorted: at the low end and at the high end. */
  low: number[];
  high: number[];
  /** Runs already holding a slot. */
  runs: Set<string>;
  /** Waiting PRs seen so far. */
  waiting: number;
  /** When the run of the current batch of waiting PRs ends. */
  unit: EtaRange | null;
  /** The ETA of the PR ahead in the lane. */
  ahead: EtaRange | null;
  /** Expected failures among the PRs ahead. */
  risk: number;
}

/** When the first slot frees up (0 while one is free), taking it. */
function take(free: number[], slots: number): number {
  return free.length < slots ? 0 : (free.shift() as number);
}

/** Marks a slot busy until lowMs / highMs. */
function occupy(lane: LanePlay, lowMs: number, highMs: number, slots: number): void {
  for (const [free, at] of [[lane.low, lowMs], [lane.high, highMs]] as const) {
    if (free.length >= slots) free.shift();
    free.push(at);
    free.sort((a, b) => a - b);
  }
}

/** `, position 2 of 5, 3m 10s in queue` for a PR of `queue` (only the time when it is not on the board). */
export function placeText(queue: GetQueueResponse, pr: SubmittedPullRequest, now: number): string {
  const since = `${formatDuration(now - Date.parse(pr.enqueuedAt ?? pr.stateChangedAt))} in queue`;
  const at = queue.enqueuedPullRequests.findIndex((p) => p.prNumber === pr.prNumber);
  return at < 0 ? `, ${since}` : `, position ${at + 1} of ${queue.enqueuedPullRequests.length}, ${since}`;
}

/** One line of the board. */
export function boardLine(row: BoardRow): string {
  const { pr } = row;
  const state = `${pr.state ?? '?'}${pr.stateReason && pr.state !== 'testing' ? ` (${pr.stateReason})` : ''}`;
  const run = pr.testRunId ? ` run ${pr.testRunId.slice(0, 8)}` : '';
  const eta = row.eta ? `  ETA ${formatRange(row.eta)}` : '';
  const lane = pr.lane !== undefined ? `lane ${String(pr.lane).padEnd(2)} ` : '';
  return `${String(row.position).padStart(3)}. ${lane}#${pr.prNumber} ${state}${run}  ${formatDuration(row.inQueueMs)} in queue${eta}  ${pr.prTitle}`;
}

/** The header line: which queue, its state and how busy it is. */
export function boardHeader(
  label: string,
  queue: GetQueueResponse,
  summary: QueueSummary | undefined,
): string {
  const recent = summary?.recentTestSeconds;
  const runs = recent
    ? `, recent runs ${formatRange({ lowMs: recent.p25 * 1000, highMs: recent.p90 * 1000 })}`
    : '';
  return `${label} ${queue.branch}: ${queue.state}, ${queue.mode}, concurrency ${queue.concurrency}, ${queue.enqueuedPullRequests.length} in queue${runs}`;
}
