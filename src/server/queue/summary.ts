/** listQueues' figures of one queue, counted from its live model. */
import type { QueueSummary } from '../../contract/index.js';
import { isTerminal, type TestRun } from '../../engine/index.js';
import type { QueueHandle } from './handle.js';

const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;

/** The listQueues figures of one queue, from its live engine model (counted as the metrics count them). */
export function summariseQueue(q: QueueHandle, now: number): QueueSummary {
  const { model } = q;
  const inProgress = new Set(model.runs.filter((r) => r.status === 'in_progress').map((r) => r.id));
  let depth = 0;
  let notReady = 0;
  let testing = 0;
  let mergedLastHour = 0;
  let mergedLastDay = 0;
  let failedLastDay = 0;
  const times: number[] = [];
  for (const e of model.entries) {
    if (!isTerminal(e.state)) {
      if (e.state === 'not_ready') notReady++;
      else depth++;
      if (e.state === 'testing' && e.testRunId !== null && inProgress.has(e.testRunId)) testing++;
      continue;
    }
    const at = e.concludedAt;
    if (at === null || at > now || now - at > DAY_MS || e.state === 'cancelled') continue;
    if (e.state === 'merged') {
      mergedLastDay++;
      if (now - at <= HOUR_MS) mergedLastHour++;
    } else failedLastDay++;
    times.push((at - e.submittedAt) / 1000);
  }
  const concluded = mergedLastDay + failedLastDay;
  const summary: QueueSummary = {
    repo: { host: q.repo.host, owner: q.repo.owner, name: q.repo.name },
    targetBranch: model.branch,
    state: model.config.state,
    mode: model.config.mode,
    concurrency: model.config.concurrency,
    depth,
    notReady,
    testing,
    mergedLastHour,
    mergedLastDay,
    failedLastDay,
    failureRateLastDay: concluded ? failedLastDay / concluded : null,
    medianSecondsInQueueLastDay: median(times),
  };
  const recent = recentTestSeconds(model);
  if (recent) summary.recentTestSeconds = recent;
  return summary;
}

const RECENT_RUNS = 20;

/** How long the last RECENT_RUNS finished runs took (s): the 10th, 25th, 50th and 90th percentile (mq watch's ETA). */
function recentTestSeconds(model: QueueHandle['model']): QueueSummary['recentTestSeconds'] {
  return recentRunSeconds(model.runs);
}

/** recentTestSeconds over a list of runs (also bench/eta.ts, which keeps the runs the simulator prunes). */
export function recentRunSeconds(runs: readonly TestRun[]): QueueSummary['recentTestSeconds'] {
  const finished = runs
    .filter((r) => r.finishedAt !== null && (r.status === 'succeeded' || r.status === 'failed'))
    .sort((a, b) => (b.finishedAt as number) - (a.finishedAt as number))
    .slice(0, RECENT_RUNS)
    .map((r) => ((r.finishedAt as number) - r.startedAt) / 1000)
    .sort((a, b) => a - b);
  if (!finished.length) return undefined;
  const at = (q: number) => Math.round(finished[Math.min(finished.length - 1, Math.floor(q * finished.length))] * 10) / 10;
  return { samples: finished.length, p10: at(0.1), p25: at(0.25), p50: at(0.5), p90: at(0.9) };
}

function median(values: number[]): number | null {
  if (!values.length) return null;
  values.sort((a, b) => a - b);
  const mid = values.length >> 1;
  return Math.max(0, values.length % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2);
}
