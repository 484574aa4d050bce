/**
 * CLI start-up: `railyard --version`, `railyard mq status --help` and ordinary commands (`mq status`,
 * `mq list`, `flaky list-unhealthy` against a sandbox server on 127.0.0.1, `config get`) against
 * `node -e 0`, wall time and CPU time (user + system of the command, from bash's `times` after the
 * run; the server's CPU is not counted), medians of N runs each.
 * Goals (issue 27): `--version` and `--help` ≤ 2× `node -e 0` (item 12); an ordinary command
 * ≤ 0.15 CPU-s (item 13: the suite runs the CLI ~420 times). Run after `npm run build`:
 *   npx tsx bench/cli-startup.ts [runs] [bin/run.js of another build, for an A/B in the same minutes]
 * Output goes to a pipe (as in a script or CI log), so the help is oclif's 80-column text. The
 * server is this build's, in a temporary directory removed at the end.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const runs = Number(process.argv[2] ?? 20);
const bins = [resolve(import.meta.dirname, '../bin/run.js'), ...(process.argv[3] ? [resolve(process.argv[3])] : [])];
const dir = mkdtempSync(join(tmpdir(), 'railyard-cli-bench-'));
const TOKEN = 'cli-startup-bench-token';
const env: Record<string, string> = {
  PATH: process.env.PATH ?? '',
  HOME: dir,
  XDG_CONFIG_HOME: join(dir, 'config'),
  NO_COLOR: '1',
  RAILYARD_TOKEN: TOKEN,
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Wall time of one run, in ms (stdout and stderr piped). */
function wall(args: string[]): number {
  const start = process.hrtime.bigint();
  const result = spawnSync(process.execPath, args, { env, cwd: dir });
  if (result.status !== 0) throw new Error(`${args.join(' ')} exited ${result.status}: ${result.stderr}`);
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/** CPU time (user + system) of one run, in ms: bash's `times` prints its children's on its second line. */
function cpu(args: string[]): number {
  const quoted = [process.execPath, ...args].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  const result = spawnSync('bash', ['-c', `${quoted} | cat >/dev/null; times`], { env, cwd: dir, encoding: 'utf8' });
  const line = result.stdout.trim().split('\n').at(-1)!;
  const [user, sys] = line.split(' ').map((time) => {
    const [minutes, seconds] = time.replace(/s$/, '').split('m');
    return Number(minutes) * 60_000 + Number(seconds) * 1000;
  });
  return user! + sys!;
}

/** This build's server, sandbox forge, on a free port; resolves with its API URL. */
async function startServer(): Promise<{ url: string; stop: () => Promise<void> }> {
  const args = [bins[0]!, 'serve', '--sandbox', '--port', '0', '--data-dir', join(dir, 'data'), '--log-level', 'warn'];
  const child = spawn(process.execPath, args, { env: { ...env, RAILYARD_SERVER_TOKEN: TOKEN }, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((done) => child.on('exit', () => done()));
  let out = '';
  const url = await new Promise<string>((resolveUrl, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const found = /listening on (http:\/\/\S+\/v1)/.exec(out);
      if (found) resolveUrl(found[1]!);
    });
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('exit', (code) => reject(new Error(`railyard serve exited ${code}: ${out}`)));
  });
  return {
    url,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

interface Case {
  name: string;
  args: string[];
  wall: number[];
  cpu: number[];
}

const server = await startServer();
try {
  env.RAILYARD_API_URL = server.url;
  const repo = ['--repo', 'github.com/bench/app'];
  for (const setup of [['mq', 'queue', 'create', ...repo], ['mq', 'submit', '1', ...repo]]) wall([bins[0]!, ...setup]);

  const commands: [string, string[]][] = [
    ['--version', ['--version']],
    ['mq status --help', ['mq', 'status', '--help']],
    ['mq status 1', ['mq', 'status', '1', ...repo]],
    ['mq list', ['mq', 'list', ...repo]],
    ['flaky list-unhealthy', ['flaky', 'list-unhealthy', ...repo, '--org', 'local']],
    ['config get (no server)', ['config', 'get']],
  ];
  const cases: Case[] = [{ name: 'node -e 0', args: ['-e', '0'], wall: [], cpu: [] }];
  for (const [i, bin] of bins.entries()) {
    const tag = bins.length > 1 ? (i === 0 ? ' (this build)' : ' (other build)') : '';
    for (const [name, args] of commands) cases.push({ name: `railyard ${name}${tag}`, args: [bin, ...args], wall: [], cpu: [] });
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
      `${c.name.padEnd(50)} wall ${w.toFixed(1).padStart(6)} ms ${(w / bw).toFixed(2)}×   CPU ${u.toFixed(1).padStart(6)} ms ${(u / bc).toFixed(2)}×`,
    );
  }
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
