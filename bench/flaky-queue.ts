/**
 * The flaky-aware and risk-aware queue (issue 22) under `railyard sim`: T = 30 min, N = 10, a
 * standing backlog of 500 PRs, 48 h measured after 1 h warm-up, the same seeds for every row.
 * Prints the rows of bench/README.md's table with the goals:
 * - flakes f = 5 % per run, 80 % of them on known tests: ignore_quarantined (with and without
 *   optimistic merging + pendingFailureDepth 1) and flakyRetries 1 against the same queue
 *   without flakes;
 * - batches of 4 with 10 % of PRs at p = 35 % (mean 5 %): probation at perfect and 80 % ranking
 *   against a baseline given the same slots (N plus the probation slots used, rounded up);
 * - the same probation on a queue without batches (where the round model says it cannot pay much).
 * Run: npx tsx bench/flaky-queue.ts [seeds]
 */
import { simulate, type FlakySimOptions, type SimOptions, type SimResult } from '../src/sim/index.js';

const seeds = Number(process.argv[2] ?? 3);
const common: Partial<SimOptions> = {
  ciMinutes: 30,
  failureRate: 0.05,
  concurrency: 10,
  backlog: 500,
  keepBacklog: true,
  arrivalRate: 0,
  hours: 49,
  warmupHours: 1,
};

type Options = Partial<SimOptions> & FlakySimOptions;

interface Row {
  merged: number;
  evicted24h: number;
  runsPerMerge: number;
  mergedBroken: number;
  escapes: number;
  retries: number;
  retriesOfReal: number;
  realFailedRuns: number;
  probationRuns: number;
  probationSlots: number;
}

function measure(name: string, options: Options): Row {
  const runs: SimResult[] = [];
  for (let seed = 1; seed <= seeds; seed++) runs.push(simulate({ ...common, ...options, seed }));
  const avg = (f: (r: SimResult) => number) => runs.reduce((a, r) => a + f(r), 0) / runs.length;
  const row: Row = {
    merged: avg((r) => r.mergedPerHour),
    evicted24h: avg((r) => (r.failedNotBroken * 24) / r.measuredHours),
    runsPerMerge: avg((r) => r.ciRunsPerMerged ?? 0),
    mergedBroken: avg((r) => r.mergedBroken),
    escapes: avg((r) => r.quarantineEscapes ?? 0),
    retries: avg((r) => r.retries ?? 0),
    retriesOfReal: avg((r) => r.retriesOfRealFailures ?? 0),
    realFailedRuns: avg((r) => r.runsFailedForReal ?? 0),
    probationRuns: avg((r) => r.probationRuns ?? 0),
    probationSlots: avg((r) => r.probationSlotsBusy ?? 0),
  };
  process.stderr.write(`${name}: ${row.merged.toFixed(2)} merged/h\n`);
  return row;
}

const f = (n: number, d = 2) => n.toFixed(d);
const goal = (ok: boolean) => (ok ? 'met' : '**not met**');

// ---------------------------------------------------------------- flakes
const clean = measure('no flakes', {});
const flaky = { flakeRate: 0.05, quarantineCoverage: 0.8 };
const off = measure('f 5 %, off', { flakeRate: 0.05 });
const ignore = measure('ignore_quarantined', { ...flaky, flakyPolicy: 'ignore_quarantined' });
const ignoreOpt = measure('ignore_quarantined + optimistic depth 1', {
  ...flaky,
  flakyPolicy: 'ignore_quarantined',
  optimistic: true,
  pendingFailureDepth: 1,
});
const retry = measure('flakyRetries 1', { ...flaky, flakyRetries: 1 });
const optOnly = measure('optimistic depth 1 alone', { flakeRate: 0.05, optimistic: true, pendingFailureDepth: 1 });

console.log(
  `railyard sim, T = 30 min, p = 5 %, N = 10, standing backlog 500, 48 h after 1 h warm-up, mean of seeds 1–${seeds}; ` +
    'flakes f = 5 % per run, C = 80 % of them on known tests, 5 % of broken PRs break only a known test',
);
console.log('| configuration | merged/h | × without flakes | good PRs evicted / 24 h | CI runs / merged | × without flakes | broken PRs merged (escapes) | retries (of real failures) |');
console.log('|---|---|---|---|---|---|---|---|');
const flakeRow = (name: string, r: Row) =>
  console.log(
    `| ${name} | ${f(r.merged)} | ${f(r.merged / clean.merged)} | ${f(r.evicted24h, 1)} | ${f(r.runsPerMerge)} | ${f(r.runsPerMerge / clean.runsPerMerge)} | ` +
      `${f(r.mergedBroken, 1)} (${f(r.escapes, 1)}) | ${f(r.retries, 1)} (${f(r.retriesOfReal, 1)} of ${f(r.realFailedRuns, 0)} real failed runs) |`,
  );
flakeRow('no flakes', clean);
flakeRow('f = 5 %, flakyPolicy off', off);
flakeRow('f = 5 %, ignore_quarantined', ignore);
flakeRow('f = 5 %, ignore_quarantined + optimistic, depth 1', ignoreOpt);
flakeRow('f = 5 %, optimistic, depth 1 (no flaky data)', optOnly);
flakeRow('f = 5 %, flakyRetries 1, policy off', retry);
console.log(
  `\nGoals: ignore_quarantined evicted ≤ 3 / 24 h: ${goal(ignore.evicted24h <= 3)}; capacity ≥ 0.95×: ${goal(ignore.merged >= 0.95 * clean.merged)}; ` +
    `runs/merge ≤ 1.05×: ${goal(ignore.runsPerMerge <= 1.05 * clean.runsPerMerge)}. + optimistic depth 1 evicted ≤ 0.5: ${goal(ignoreOpt.evicted24h <= 0.5)}. ` +
    `flakyRetries 1 evicted ≤ 3.5: ${goal(retry.evicted24h <= 3.5)}; capacity ≥ 0.9×: ${goal(retry.merged >= 0.9 * clean.merged)}; ` +
    `real failed runs retried by mistake: ${f((100 * retry.retriesOfReal) / Math.max(1, retry.realFailedRuns), 1)} %.`,
);

// ---------------------------------------------------------------- probation
const risk = { riskShare: 0.1, riskFailureRate: 0.35 };
const batches = { batchSize: 4, skipRedundant: true };
console.log('\nRisk classes: 10 % of PRs at p = 35 %, the rest at 1.67 % (mean 5 %); probation above 0.2');
console.log('| configuration | merged/h | probation slots busy (mean) | baseline N | baseline merged/h | × baseline | CI runs / merged (baseline) | broken PRs merged |');
console.log('|---|---|---|---|---|---|---|---|');
const baselines = new Map<string, Row>();
const baselineOf = (extra: Options, slots: number) => {
  const n = 10 + Math.ceil(slots);
  const key = `${JSON.stringify(extra)}:${n}`;
  if (!baselines.has(key)) baselines.set(key, measure(`baseline N = ${n}`, { ...risk, ...extra, concurrency: n }));
  return { n, row: baselines.get(key) as Row };
};
const results: Record<string, number> = {};
for (const [label, extra] of [
  ['batches of 4', batches],
  ['single PRs', {}],
] as const) {
  const plain = measure(`${label}, no probation`, { ...risk, ...extra });
  console.log(`| ${label}, no probation, N = 10 | ${f(plain.merged)} | — | — | — | — | ${f(plain.runsPerMerge)} | ${f(plain.mergedBroken, 1)} |`);
  for (const accuracy of [1, 0.8]) {
    const r = measure(`${label}, probation, accuracy ${accuracy}`, { ...risk, ...extra, probationThreshold: 0.2, riskAccuracy: accuracy });
    const { n, row: base } = baselineOf(extra, r.probationSlots);
    results[`${label}:${accuracy}`] = r.merged / base.merged;
    results[`${label}:${accuracy}:runs`] = r.runsPerMerge <= base.runsPerMerge ? 1 : 0;
    console.log(
      `| ${label}, probation, ranking ${accuracy * 100} % right | ${f(r.merged)} | ${f(r.probationSlots)} | ${n} | ${f(base.merged)} | **${f(r.merged / base.merged)}×** | ` +
        `${f(r.runsPerMerge)} (${f(base.runsPerMerge)}) | ${f(r.mergedBroken, 1)} |`,
    );
  }
}
console.log(
  `\nGoals (batches of 4): ≥ 1.3× with perfect ranking: ${goal(results['batches of 4:1'] >= 1.3)}; ≥ 1.2× at 80 %: ${goal(results['batches of 4:0.8'] >= 1.2)}; ` +
    `CI runs per merged PR ≤ the baseline's: ${goal(results['batches of 4:1:runs'] === 1 && results['batches of 4:0.8:runs'] === 1)}.`,
);
