/**
 * CLI start-up: `railyard --version` and `railyard mq status --help` against `node -e 0`, wall time
 * and CPU time (user + system, from bash's `times` after the run), medians of N runs each.
 * Goal (issue 27 item 12): ≤ 2× `node -e 0`. Run after `npm run build`:
 *   npx tsx bench/cli-startup.ts [runs] [bin/run.js of another build, for an A/B in the same minutes]
 * Output goes to a pipe (as in a script or CI log), so the help is oclif's 80-column text.
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

const runs = Number(process.argv[2] ?? 20);
const bins = [resolve(import.meta.dirname, '../bin/run.js'), ...(process.argv[3] ? [resolve(process.argv[3])] : [])];
const env = { ...process.env, NO_COLOR: '1' };

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Wall time of one run, in ms (stdout and stderr piped). */
function wall(args: string[]): number {
  const start = process.hrtime.bigint();
  const result = spawnSync(process.execPath, args, { env });
  if (result.status !== 0) throw new Error(`${args.join(' ')} exited ${result.status}: ${result.stderr}`);
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/** CPU time (user + system) of one run, in ms: bash's `times` prints its children's on its second line. */
function cpu(args: string[]): number {
  const quoted = [process.execPath, ...args].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  const result = spawnSync('bash', ['-c', `${quoted} | cat >/dev/null; times`], { env, encoding: 'utf8' });
  const line = result.stdout.trim().split('\n').at(-1)!;
  const [user, sys] = line.split(' ').map((time) => {
    const [minutes, seconds] = time.replace(/s$/, '').split('m');
    return Number(minutes) * 60_000 + Number(seconds) * 1000;
  });
  return user! + sys!;
}

interface Case {
  name: string;
  args: string[];
  wall: number[];
  cpu: number[];
}

const cases: Case[] = [{ name: 'node -e 0', args: ['-e', '0'], wall: [], cpu: [] }];
for (const [i, bin] of bins.entries()) {
  const tag = bins.length > 1 ? (i === 0 ? ' (this build)' : ' (other build)') : '';
  cases.push({ name: `railyard --version${tag}`, args: [bin, '--version'], wall: [], cpu: [] });
  cases.push({ name: `railyard mq status --help${tag}`, args: [bin, 'mq', 'status', '--help'], wall: [], cpu: [] });
}
for (const c of cases) wall(c.args); // warm the file cache
// Interleaved rounds: each round runs every case once, so load changes hit all of them alike.
for (let r = 0; r < runs; r++) {
  for (const c of cases) {
    c.wall.push(wall(c.args));
    c.cpu.push(cpu(c.args));
  }
}
const base = cases[0]!;
const [bw, bc] = [median(base.wall), median(base.cpu)];
console.log(`CLI start-up, medians of ${runs} runs each, Node ${process.version}`);
for (const c of cases) {
  const [w, u] = [median(c.wall), median(c.cpu)];
  console.log(
    `${c.name.padEnd(42)} wall ${w.toFixed(1).padStart(6)} ms ${(w / bw).toFixed(2)}×   CPU ${u.toFixed(1).padStart(6)} ms ${(u / bc).toFixed(2)}×`,
  );
}
