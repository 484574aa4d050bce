/**
 * Stacked PRs under `railyard sim`: 20 % of PRs in stacks of depth 2–3 (each stack tested and
 * landed as one unit, bottom first) against the same PRs, arriving the same way, not linked.
 * T = 30 min, p = 5 %, N = 10, a standing backlog of 500 PRs, 24 h measured after 1 h warm-up,
 * seeds 1..S; without batching and with batches of 4. Prints merged per hour for both, their
 * ratio (goal ≥ 0.95) and the stacks landed partly (goal 0).
 * Run: npx tsx bench/stacks.ts [seeds]
 */
import { simulate, type SimOptions, type SimResult, type StackSimOptions } from '../src/sim/index.js';

const seeds = Number(process.argv[2] ?? 3);
const common: Partial<SimOptions> & StackSimOptions = {
  ciMinutes: 30,
  failureRate: 0.05,
  concurrency: 10,
  backlog: 500,
  keepBacklog: true,
  arrivalRate: 0,
  hours: 25,
  warmupHours: 1,
  stackShare: 0.2,
  stackDepth: [2, 3],
};

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

function rows(label: string, extra: Partial<SimOptions>): void {
  const stacked: SimResult[] = [];
  const unlinked: SimResult[] = [];
  for (let seed = 1; seed <= seeds; seed++) {
    stacked.push(simulate({ ...common, ...extra, seed }));
    unlinked.push(simulate({ ...common, ...extra, seed, stackUnlinked: true }));
  }
  const s = mean(stacked.map((r) => r.mergedPerHour));
  const u = mean(unlinked.map((r) => r.mergedPerHour));
  const sum = (rs: SimResult[], k: 'stacks' | 'prsInStacks' | 'stacksLanded' | 'stacksLandedPartly') =>
    rs.reduce((n, r) => n + (r[k] ?? 0), 0);
  console.log(
    `| ${label} | ${u.toFixed(2)} | ${s.toFixed(2)} | ${(s / u).toFixed(3)} | ${sum(stacked, 'stacks')} (${sum(stacked, 'prsInStacks')} PRs) | ${sum(stacked, 'stacksLanded')} | ${sum(stacked, 'stacksLandedPartly')} | ${mean(stacked.map((r) => r.ciRunsPerMerged ?? 0)).toFixed(2)} / ${mean(unlinked.map((r) => r.ciRunsPerMerged ?? 0)).toFixed(2)} |`,
  );
}

console.log(`seeds 1..${seeds}; merged/h is the mean over seeds, stacks are summed`);
console.log(
  '| queue | merged/h, same PRs unlinked | merged/h, stacked | ratio (goal ≥ 0.95) | stacks submitted | landed whole | landed partly (goal 0) | CI runs per merged PR, stacked / unlinked |',
);
console.log('|---|---|---|---|---|---|---|---|');
rows('no batching', {});
rows('batches of 4', { batchSize: 4 });
rows('optimistic, pending failure depth 1', { optimistic: true, pendingFailureDepth: 1 });
