/**
 * testingTimeoutMinutes "auto" against the fixed 300-minute default under `railyard sim`, when a
 * required check never reports in 5 % of runs (--hang-rate 0.05): merged PRs/hour with a standing
 * backlog (capacity), T = 30 min CI with ±20 % jitter, concurrency 10, p = 5 % broken PRs; the mean
 * of N seeds, and the same queue without hangs for reference. Goal: auto ≥ 2 × the fixed default.
 * Run after `npm run build`: npx tsx bench/testing-timeout.ts [seeds]
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

const bin = resolve(import.meta.dirname, '../bin/run.js');
const seeds = Number(process.argv[2] ?? 3);
const BASE = [
  '--backlog',
  '200',
  '--keep-backlog',
  '--arrival-rate',
  '0',
  '--hours',
  '100',
  '--warmup-hours',
  '2',
  '--ci-jitter',
  '0.2',
];

interface SimJson {
  mergedPerHour: number;
  failed: number;
  failedNotBroken: number;
  ciRunsPerMerged: number;
}

function sim(args: string[]): SimJson {
  const out = spawnSync(process.execPath, [bin, 'sim', ...BASE, ...args, '--json'], { encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`railyard sim ${args.join(' ')}: ${out.stderr}`);
  return JSON.parse(out.stdout) as SimJson;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const cases: [string, string[]][] = [
  ['no hangs, timeout 300', ['--testing-timeout', '300']],
  ['5 % hang, timeout 300 (default)', ['--hang-rate', '0.05', '--testing-timeout', '300']],
  ['5 % hang, timeout auto', ['--hang-rate', '0.05', '--testing-timeout', 'auto']],
];
const rows: Record<string, number> = {};
console.log(`| case | merged/h (mean of ${seeds} seeds) | failed not broken /100h | CI runs per merge |`);
console.log('| --- | --- | --- | --- |');
for (const [name, args] of cases) {
  const results = Array.from({ length: seeds }, (_, i) => sim([...args, '--seed', String(i + 1)]));
  rows[name] = mean(results.map((r) => r.mergedPerHour));
  console.log(
    `| ${name} | ${rows[name].toFixed(2)} | ${mean(results.map((r) => r.failedNotBroken)).toFixed(1)} | ${mean(results.map((r) => r.ciRunsPerMerged)).toFixed(2)} |`,
  );
}
const ratio = rows['5 % hang, timeout auto']! / rows['5 % hang, timeout 300 (default)']!;
console.log(`\nauto / fixed 300: ${ratio.toFixed(2)}× (goal ≥ 2×) ${ratio >= 2 ? 'ok' : 'MISSED'}`);
