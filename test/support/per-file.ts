/** Vitest setup file, run before every test file: what each file must get whether or not files share a worker. */
import { appendFileSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, expect } from 'vitest';
import { removeTempDirs } from './tmp.js';

// The temp dirs a file made with test/support/tmp.ts go when the file's tests are done. Registered
// here and not in tmp.ts: test files share a worker's modules (vitest.config.ts, `isolate: false`),
// so tmp.ts runs once per worker, while a setup file runs again for every file.
afterAll(removeTempDirs);

/**
 * Where the suite's CPU goes, file by file: with RAILYARD_TEST_CPU_LOG=<file>, one line per test
 * file, `<cpu-s> <wall-s> <path> user <s> sys <s> rss <MB of the worker at the end>`, appended when the file ends. The CPU is the worker's own and that
 * of every process it started and reaped (servers, the CLI, git, and what those started and reaped),
 * from /proc/self/stat. Not counted: processes that outlive the file (the run's PostgreSQL cluster).
 */
const cpuLog = process.env.RAILYARD_TEST_CPU_LOG;
if (cpuLog) {
  const ticks = () => {
    // Fields after the command's closing parenthesis: utime, stime, cutime, cstime are 14-17 of the line.
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { user: Number(f[11]) + Number(f[13]), sys: Number(f[12]) + Number(f[14]) };
  };
  let start = { user: 0, sys: 0 };
  let startWall = 0;
  beforeAll(() => {
    start = ticks();
    startWall = performance.now();
  });
  afterAll(() => {
    const end = ticks();
    const user = (end.user - start.user) / 100;
    const sys = (end.sys - start.sys) / 100;
    const rss = Math.round(process.memoryUsage.rss() / 1e6);
    const wall = (performance.now() - startWall) / 1000;
    const file = expect.getState().testPath ?? '?';
    appendFileSync(cpuLog, `${(user + sys).toFixed(2)} ${wall.toFixed(1)} ${file} user ${user.toFixed(2)} sys ${sys.toFixed(2)} rss ${rss} MB\n`);
  });
}
