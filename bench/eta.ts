/**
 * How good is the ETA of `railyard mq watch` (and the dashboard's queue page)? Seeded simulator
 * scenarios (src/sim, as `railyard sim`) run the real engine in virtual time. Every few virtual
 * minutes the bench builds the getQueue answer and the listQueues `recentTestSeconds` the server
 * would give at that moment (the same present / summary functions), asks the board's ETA function
 * (src/watch/board.ts `boardRows`) for each PR in the line, and remembers the predicted range. When
 * a PR merges, its predictions are compared with the time it actually landed.
 *
 * Printed per scenario: predictions judged, coverage (share of actual landing times inside the
 * predicted range), how many landed earlier / later than the range, and the median and p90 absolute
 * error of the range's midpoint (minutes, and relative to the actual time left). Predictions for PRs
 * that then failed are left out (the ETA assumes the runs ahead pass), as are PRs still queued at the end.
 *
 * Run: npx tsx bench/eta.ts [seeds per scenario, default 3] [--detail: by state and place in the line]
 */
import { activeEntries, laneNumbers, type QueueModel, type TestRun } from '../src/engine/index.js';
import { presentListItem, presentQueueSettings } from '../src/server/queue/present.js';
import { recentRunSeconds } from '../src/server/queue/summary.js';
import { simulate, type SimOptions } from '../src/sim/index.js';
import { boardRows } from '../src/watch/board.js';
import type { GetQueueResponse, QueueSummary } from '../src/contract/index.js';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const SAMPLE_EVERY = 5 * MINUTE;
const detail = process.argv.includes('--detail');
const seeds = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 3);

interface Scenario {
  name: string;
  options: Partial<SimOptions>;
}

// Loads around 60–80 % of capacity (capacity ≈ concurrency · lanes / T per minute, less failures).
const SCENARIOS: Scenario[] = [
  {
    name: 'single, c=1, T=10m ±30 %, 4.5/h, p=3 %',
    options: { mode: 'single', concurrency: 1, ciMinutes: 10, ciJitter: 0.3, arrivalRate: 4.5, failureRate: 0.03 },
  },
  {
    name: 'single, c=5, T=30m ±30 %, 7/h, p=5 %',
    options: { mode: 'single', concurrency: 5, ciMinutes: 30, ciJitter: 0.3, arrivalRate: 7, failureRate: 0.05 },
  },
  {
    name: 'parallel 4 lanes, c=2, T=20m ±30 %, 16/h, p=5 %',
    options: { mode: 'parallel', lanes: 4, concurrency: 2, ciMinutes: 20, ciJitter: 0.3, arrivalRate: 16, failureRate: 0.05 },
  },
  {
    name: 'single, c=3, batches of 4, T=30m ±30 %, 12/h, p=3 %',
    options: { mode: 'single', concurrency: 3, batchSize: 4, ciMinutes: 30, ciJitter: 0.3, arrivalRate: 12, failureRate: 0.03 },
  },
];

interface Prediction {
  kind: string;
  at: number;
  low: number;
  high: number;
}

interface Judged {
  kind: string;
  inside: boolean;
  early: boolean;
  late: boolean;
  /** |midpoint − actual| (ms) */
  error: number;
  /** error / actual time left */
  relative: number;
}

function run(scenario: Scenario, seed: number): { judged: Judged[]; failedDropped: number; unresolved: number } {
  const hours = 30;
  const warmupHours = 2;
  const lastSample = (hours - 4) * 60 * MINUTE; // leave time for the PRs seen to land
  const predictions = new Map<number, Prediction[]>();
  const judged: Judged[] = [];
  const finished = new Map<string, TestRun>();
  let failedDropped = 0;
  /** Merges and failures of the last day (listQueues' failureRateLastDay). */
  const concluded: { at: number; failed: boolean }[] = [];
  let nextSample = warmupHours * 60 * MINUTE;
  let before: QueueModel | null = null;

  const sample = (model: QueueModel, at: number) => {
    // What the server would answer at `at`: getQueue's line (with lanes) and listQueues' recent runs.
    const line = activeEntries(model).filter((e) => e.state !== 'not_ready');
    const lanes = laneNumbers(model, line);
    const queue = {
      ...presentQueueSettings(model),
      enqueuedPullRequests: line.map((e) => presentListItem(e, process.env.NO_LANES ? undefined : lanes.get(e.id))),
    } as GetQueueResponse;
    const recent = recentRunSeconds([...finished.values()].filter((r) => (r.finishedAt as number) <= at));
    while (concluded.length && concluded[0].at < at - DAY) concluded.shift();
    const failed = concluded.filter((c) => c.failed).length;
    const summary = {
      failureRateLastDay: concluded.length ? failed / concluded.length : null,
      ...(recent ? { recentTestSeconds: recent } : {}),
    } as QueueSummary;
    for (const row of boardRows(queue, summary, at)) {
      if (!row.eta) continue;
      const list = predictions.get(row.pr.prNumber) ?? [];
      list.push({ kind: detailKind(row.pr.state ?? '', row.position), at, low: at + row.eta.lowMs, high: at + row.eta.highMs });
      predictions.set(row.pr.prNumber, list);
    }
  };

  simulate(
    { ...scenario.options, seed, hours, warmupHours },
    {
      afterStep(now, _event, model, effects) {
        // The state between two events is the one after the earlier: sample it at the exact times.
        while (before && nextSample <= now && nextSample <= lastSample) {
          sample(before, nextSample);
          nextSample += SAMPLE_EVERY;
        }
        before = model;
        for (const r of model.runs)
          if (r.finishedAt !== null && (r.status === 'succeeded' || r.status === 'failed') && !finished.has(r.id)) {
            finished.set(r.id, r);
            if (finished.size > 200) finished.delete(finished.keys().next().value as string);
          }
        for (const effect of effects) {
          if (effect.type !== 'stateChanged') continue;
          if (effect.to === 'merged' || effect.to === 'failed') concluded.push({ at: now, failed: effect.to === 'failed' });
          const list = predictions.get(effect.prNumber);
          if (!list) continue;
          if (effect.to === 'merged') {
            for (const p of list) {
              const mid = (p.low + p.high) / 2;
              const left = now - p.at;
              const error = Math.abs(mid - now);
              judged.push({ kind: p.kind, inside: now >= p.low && now <= p.high, early: now < p.low, late: now > p.high, error, relative: left > 0 ? error / left : 0 });
            }
            predictions.delete(effect.prNumber);
          } else if (effect.to === 'failed' || effect.to === 'cancelled') {
            failedDropped += list.length;
            predictions.delete(effect.prNumber);
          }
        }
      },
    },
  );
  let unresolved = 0;
  for (const list of predictions.values()) unresolved += list.length;
  return { judged, failedDropped, unresolved };
}

/** --detail: predictions grouped by the PR's state and place in the line. */
function detailKind(state: string, position: number): string {
  if (state !== 'pending') return state;
  return position <= 5 ? 'pending 1-5' : position <= 15 ? 'pending 6-15' : 'pending 16+';
}

function quantile(sorted: number[], q: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

const pct = (n: number, of: number) => `${((100 * n) / Math.max(1, of)).toFixed(1)} %`;
const started = performance.now();
console.log(`ETA of the watch board against the simulator (${seeds} seed(s) per scenario, a sample every 5 virtual minutes)`);
console.log('scenario | judged | coverage | early | late | |mid − actual| p50 / p90 (min) | relative p50 / p90');
for (const scenario of SCENARIOS) {
  const all: Judged[] = [];
  let dropped = 0;
  let unresolved = 0;
  for (let seed = 1; seed <= seeds; seed++) {
    const r = run(scenario, seed);
    all.push(...r.judged);
    dropped += r.failedDropped;
    unresolved += r.unresolved;
  }
  const errors = all.map((j) => j.error / MINUTE).sort((a, b) => a - b);
  const relative = all.map((j) => j.relative).sort((a, b) => a - b);
  const n = all.length;
  console.log(
    `${scenario.name} | ${n} | ${pct(all.filter((j) => j.inside).length, n)} | ${pct(all.filter((j) => j.early).length, n)} | ` +
      `${pct(all.filter((j) => j.late).length, n)} | ${quantile(errors, 0.5).toFixed(1)} / ${quantile(errors, 0.9).toFixed(1)} | ` +
      `${quantile(relative, 0.5).toFixed(2)} / ${quantile(relative, 0.9).toFixed(2)}   (left out: ${dropped} of PRs that failed, ${unresolved} unresolved)`,
  );
  if (detail)
    for (const kind of [...new Set(all.map((j) => j.kind))].sort()) {
      const some = all.filter((j) => j.kind === kind);
      const e = some.map((j) => j.error / MINUTE).sort((a, b) => a - b);
      console.log(
        `    ${kind} | ${some.length} | ${pct(some.filter((j) => j.inside).length, some.length)} | ${pct(some.filter((j) => j.early).length, some.length)} | ` +
          `${pct(some.filter((j) => j.late).length, some.length)} | ${quantile(e, 0.5).toFixed(1)} / ${quantile(e, 0.9).toFixed(1)}`,
      );
    }
}
console.log(`wall ${((performance.now() - started) / 1000).toFixed(1)} s`);
