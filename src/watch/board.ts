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
 * The queue's PRs in queue order with position, time in queue and ETA. The ETA assumes the runs
 * ahead pass: a PR being tested needs what is left of a run (25th–90th percentile of the recent
 * durations minus the time it has been testing); one waiting behind k others needs
 * floor(k / concurrency) + 1 more rounds, each taking a run's duration, and up to one round more.
 */
export function boardRows(
  queue: GetQueueResponse,
  summary: QueueSummary | undefined,
  now: number,
): BoardRow[] {
  const recent = summary?.recentTestSeconds;
  const concurrency = Math.max(1, queue.concurrency);
  let waiting = 0;
  return queue.enqueuedPullRequests.map((pr, i) => {
    const since = Date.parse(pr.enqueuedAt ?? pr.stateChangedAt);
    let eta: EtaRange | null = null;
    if (recent) {
      const low = recent.p25 * 1000;
      const high = recent.p90 * 1000;
      if (pr.state === 'testing' || pr.state === 'tests_passed' || pr.state === 'pending_failure') {
        const elapsed = now - Date.parse(pr.stateChangedAt);
        eta =
          pr.state === 'testing'
            ? { lowMs: Math.max(0, low - elapsed), highMs: Math.max(0, high - elapsed) }
            : { lowMs: 0, highMs: high };
      } else if (pr.state === 'pending') {
        const rounds = Math.floor(waiting / concurrency) + 1;
        waiting++;
        eta = { lowMs: rounds * low, highMs: (rounds + 1) * high };
      }
    }
    return { position: i + 1, pr, inQueueMs: Math.max(0, now - since), eta };
  });
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
  return `${String(row.position).padStart(3)}. #${pr.prNumber} ${state}${run}  ${formatDuration(row.inQueueMs)} in queue${eta}  ${pr.prTitle}`;
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
