/**
 * What it costs to start a server, as users and the test suite do it (issue 27 item 13): (1) the
 * built `railyard serve --sandbox --port 0` in a fresh data dir (SQLite), from spawn to its
 * "listening" line: wall time and the child's CPU (every thread, from /proc); (2) the server
 * in-process as test/support/server.ts starts it (openStore, createBackend, buildServer, listen,
 * close): the first start of a process (module loading included) and the following ones.
 * Medians of RUNS (default 10). `BIN=/other/checkout/bin/run.js` measures another build (its
 * build/ is used for the in-process part). Run after `npm run build`: npx tsx bench/serve-startup.ts
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const runs = Number(process.env.RUNS ?? 10);
const bin = resolve(process.env.BIN ?? join(import.meta.dirname, '../bin/run.js'));
const build = join(dirname(dirname(bin)), 'build');
const TICKS = 100; // USER_HZ: /proc/<pid>/stat counts CPU in 1/100 s on Linux

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** CPU seconds used so far by a process, every thread included (utime + stime). */
function cpuOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS;
}

/** One `railyard serve` until it prints that it listens: wall ms and CPU ms up to then. */
function serveOnce(): Promise<{ wall: number; cpu: number }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'railyard-serve-bench-'));
  const start = performance.now();
  const child = spawn(process.execPath, [bin, 'serve', '--sandbox', '--port', '0', '--data-dir', dataDir, '--log-level', 'silent'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  return new Promise((done, fail) => {
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (!/listening on http:\/\/127\.0\.0\.1:\d+\/v1/.test(out)) return;
      const wall = performance.now() - start;
      const cpu = cpuOf(child.pid!) * 1000;
      child.once('exit', () => {
        rmSync(dataDir, { recursive: true, force: true });
        done({ wall, cpu });
      });
      child.kill('SIGKILL');
    });
    child.once('exit', (code) => {
      if (!/listening/.test(out)) {
        rmSync(dataDir, { recursive: true, force: true });
        fail(new Error(`serve exited (${code}) before listening: ${out} ${err}`));
      }
    });
  });
}

/**
 * The in-process part, run as plain JavaScript in a fresh node process (no TypeScript loader in the
 * way) so that its first start loads every module: prints [{ wall, cpu }] per start. Run from a
 * file, not `-e`: worker threads inherit `--input-type` and would fail to start (the server then
 * falls back to its request thread, and the figures miss the threads' cost).
 */
const IN_PROCESS = `
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
const [buildDir, count] = [process.argv[2], Number(process.argv[3])];
const url = (p) => pathToFileURL(join(buildDir, p)).href;
const rows = [];
for (let i = 0; i < count; i++) {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const [{ buildServer }, { openStore }, { createBackend }] = await Promise.all([
    import(url('server/index.js')),
    import(url('store/index.js')),
    import(url('server/runtime.js')),
  ]);
  const dataDir = mkdtempSync(join(tmpdir(), 'railyard-serve-bench-'));
  const store = await openStore({ dataDir });
  await store.addToken('local', 'bench-token');
  const { driver, workers } = await createBackend({ dataDir, tickMs: 200, pollMs: 200 });
  const app = await buildServer({
    store, driver, workers, logLevel: 'error',
    reportWorker: join(buildDir, 'flaky/ingest-worker.js'),
    webRoot: join(buildDir, 'web'),
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const wall = performance.now() - t0;
  const used = process.cpuUsage(cpu0);
  rows.push({ wall, cpu: (used.user + used.system) / 1000 });
  await app.close();
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(rows));
`;

console.log(`server start-up, ${runs} runs each, Node ${process.version}, ${bin}`);
spawnSync(process.execPath, [bin, '--version']); // warm the file cache
await serveOnce();
const serve: { wall: number; cpu: number }[] = [];
for (let i = 0; i < runs; i++) serve.push(await serveOnce());
console.log(
  `railyard serve --sandbox to "listening"     wall median ${median(serve.map((r) => r.wall)).toFixed(0)} ms, ` +
    `CPU median ${median(serve.map((r) => r.cpu)).toFixed(0)} ms (min ${Math.min(...serve.map((r) => r.cpu)).toFixed(0)})`,
);

// In-process: several node processes (each a test file's worth), each doing 1 cold + 4 warm starts.
const script = join(mkdtempSync(join(tmpdir(), 'railyard-serve-bench-')), 'in-process.mjs');
writeFileSync(script, IN_PROCESS);
const cold: { wall: number; cpu: number }[] = [];
const warm: { wall: number; cpu: number }[] = [];
for (let i = 0; i < Math.max(3, Math.ceil(runs / 2)); i++) {
  const result = spawnSync(process.execPath, [script, build, '5'], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`in-process run failed: ${result.stderr}`);
  const rows = JSON.parse(result.stdout) as { wall: number; cpu: number }[];
  cold.push(rows[0]);
  warm.push(...rows.slice(1));
}
rmSync(dirname(script), { recursive: true, force: true });
for (const [name, rows] of [
  ['in-process, first start (imports included)', cold],
  ['in-process, later starts', warm],
] as const) {
  console.log(
    `${name.padEnd(44)} wall median ${median(rows.map((r) => r.wall)).toFixed(0)} ms, CPU median ${median(rows.map((r) => r.cpu)).toFixed(0)} ms (${rows.length} starts)`,
  );
}
