/**
 * CLI start-up: `railyard --version` and `railyard mq status --help` against `node -e 0`.
 * Goal: ≤ 3× `node -e 0`. Run after `npm run build`: npx tsx bench/cli-startup.ts [runs]
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

const runs = Number(process.argv[2] ?? 20);
const bin = resolve(import.meta.dirname, '../bin/run.js');

function time(args: string[]): { mean: number; median: number } {
  const samples: number[] = [];
  spawnSync(process.execPath, args); // warm the file cache
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint();
    const result = spawnSync(process.execPath, args, { env: { ...process.env, NO_COLOR: '1' } });
    if (result.status !== 0) throw new Error(`${args.join(' ')} exited ${result.status}: ${result.stderr}`);
    samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  samples.sort((a, b) => a - b);
  return { mean: samples.reduce((a, b) => a + b, 0) / runs, median: samples[Math.floor(runs / 2)] };
}

const base = time(['-e', '0']);
const rows = [
  ['node -e 0', base],
  ['railyard --version', time([bin, '--version'])],
  ['railyard mq status --help', time([bin, 'mq', 'status', '--help'])],
] as const;
console.log(`CLI start-up, ${runs} runs each, Node ${process.version}`);
for (const [name, t] of rows) {
  console.log(`${name.padEnd(28)} mean ${t.mean.toFixed(1).padStart(6)} ms  median ${t.median.toFixed(1).padStart(6)} ms  ${(t.median / base.median).toFixed(2)}× node -e 0`);
}
