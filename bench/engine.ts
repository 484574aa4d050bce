/**
 * The engine under `railyard sim` (goals against the round model of docs/decisions.md, "Simulator
 * bounds"): T = 30 min CI, p = 5 % broken PRs, concurrency 10 (per lane in parallel mode), in four
 * configurations (+ one with uneven CI times). For each: capacity = merged PRs/hour with a standing
 * backlog of 500 PRs (mean of 3 seeds), then p50/p95 time in queue with Poisson arrivals at 50 % and
 * 80 % of that capacity; then the wall time of 10,000 PRs.
 * Goals: capacity ≥ 90 % of the bound; parallel (4 lanes) ≥ 3× single; p50 at 50 % load ≤ 1.25·T.
 * Run after `npm run build`: npx tsx bench/engine.ts [seeds]
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

const bin = resolve(import.meta.dirname, '../bin/run.js');
const seeds = Number(process.argv[2] ?? 3);
const T = 30;

interface SimJson {
  mergedPerHour: number;
  resolvedPerHour: number;
  ciRunsPerMerged: number;
  mainSlotUtilisation: number;
  failed: number;
  failedNotBroken: number;
  timeInQueueMinutes: { p50: number; p95: number; samples: number };
  bounds: { mergedPerHour: number; resolvedPerHour: number };
  submitted: number;
  merged: number;
}

function sim(args: string[]): { result: SimJson; wallMs: number } {
  const start = process.hrtime.bigint();
  const out = spawnSync(process.execPath, [bin, 'sim', ...args, '--json'], { encoding: 'utf8', maxBuffer: 1 << 26 });
  const wallMs = Number(process.hrtime.bigint() - start) / 1e6;
  if (out.status !== 0) throw new Error(`railyard sim ${args.join(' ')} exited ${out.status}: ${out.stderr}${out.stdout}`);
  return { result: JSON.parse(out.stdout) as SimJson, wallMs };
}

const common = ['--ci-minutes', String(T), '--failure-rate', '0.05'];
const scenarios: { name: string; args: string[] }[] = [
  { name: 'single, no batching', args: ['--concurrency', '10'] },
  { name: 'batches of 4 + bisection (skip redundant)', args: ['--concurrency', '10', '--batch-size', '4', '--skip-redundant'] },
  { name: 'optimistic + depth 1, f = 5 %', args: ['--concurrency', '10', '--optimistic', '--pending-failure-depth', '1', '--flake-rate', '0.05'] },
  { name: 'parallel, 4 lanes', args: ['--concurrency', '10', '--mode', 'parallel', '--lanes', '4'] },
  { name: '(extra) batches of 4 + bisection, CI time ±30 %', args: ['--concurrency', '10', '--batch-size', '4', '--skip-redundant', '--ci-jitter', '0.3'] },
];

const fmt = (n: number, d = 1) => n.toFixed(d);
const rows: string[] = [];
const capacities = new Map<string, number>();
for (const s of scenarios) {
  const runs = Array.from({ length: seeds }, (_, i) =>
    sim([...common, ...s.args, '--backlog', '500', '--keep-backlog', '--arrival-rate', '0', '--hours', '61', '--warmup-hours', '1', '--seed', String(i + 1)]).result,
  );
  const avg = (f: (r: SimJson) => number) => runs.reduce((a, r) => a + f(r), 0) / runs.length;
  const cap = avg((r) => r.mergedPerHour);
  capacities.set(s.name, cap);
  const bound = runs[0].bounds;
  const latency = [0.5, 0.8].map(
    (load) => sim([...common, ...s.args, '--arrival-rate', fmt(load * cap, 2), '--hours', '505', '--warmup-hours', '5', '--seed', '1']).result,
  );
  rows.push(
    `| ${s.name} | ${fmt(cap)} | ${fmt(bound.mergedPerHour)} (${fmt(bound.resolvedPerHour)} resolved) | ${fmt((100 * cap) / bound.mergedPerHour, 0)} % | ` +
      `${fmt(avg((r) => r.ciRunsPerMerged), 2)} | ${fmt(100 * avg((r) => r.mainSlotUtilisation), 0)} % | ${fmt(avg((r) => r.failedNotBroken), 1)} | ` +
      `${fmt(latency[0].timeInQueueMinutes.p50, 0)} / ${fmt(latency[0].timeInQueueMinutes.p95, 0)} | ` +
      `${fmt(latency[1].timeInQueueMinutes.p50, 0)} / ${fmt(latency[1].timeInQueueMinutes.p95, 0)} |`,
  );
  process.stderr.write(`${s.name}: done\n`);
}
console.log(`railyard sim, T = ${T} min, p = 5 %, concurrency 10 unless noted; capacity = mean of ${seeds} seeds, 60 h each after 1 h warm-up, standing backlog 500; latency = 500 h of Poisson arrivals after 5 h warm-up, seed 1`);
console.log('| configuration | capacity (merged/h) | bound (merged/h) | capacity / bound | CI runs / merged | main slots busy | good PRs evicted (per 60 h) | time in queue at 50 % load p50 / p95 (min) | at 80 % load p50 / p95 (min) |');
console.log('|---|---|---|---|---|---|---|---|---|');
for (const r of rows) console.log(r);
const single = capacities.get(scenarios[0].name) as number;
const parallel = capacities.get(scenarios[3].name) as number;
console.log(`\nparallel (4 lanes) / single = ${fmt(parallel / single, 2)}×`);

for (const s of [scenarios[0], scenarios[1], scenarios[3]]) {
  const rate = fmt(0.8 * (capacities.get(s.name) as number), 2);
  const { result, wallMs } = sim([...common, ...s.args, '--arrival-rate', rate, '--max-prs', '10000', '--hours', '100000']);
  console.log(`10,000 PRs, ${s.name}, arrivals at ${rate}/h: ${fmt(wallMs / 1000, 2)} s wall (process included), ${result.merged} merged`);
}
