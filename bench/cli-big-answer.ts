/**
 * The CLI against an answer too big to hold: a plain node:http server (standing for a hostile or
 * broken API) answers `getSubmittedPullRequest` with a 300 MB JSON document (`SIZE_MB`), chunked,
 * as fast as the client reads; the built `railyard mq status 1` runs under `/usr/bin/time -v`.
 * Prints, per run: wall time, exit code, the CLI's max RSS, how many bytes the server got to write
 * before the CLI hung up, and the CLI's error line. `RAILYARD_MAX_RESPONSE_MIB` is passed through
 * (unset: the 64 MiB default). Run after `npm run build`:
 *   npx tsx bench/cli-big-answer.ts [runs]
 * Goal (issue 36): exits within 20 s with max RSS ≤ 250 MB.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const runs = Number(process.argv[2] ?? 3);
const size = Number(process.env.SIZE_MB ?? 300) * 1e6;
const BIN = resolve(import.meta.dirname, '../bin/run.js');
const dir = mkdtempSync(join(tmpdir(), 'railyard-big-answer-'));

let written = 0;
const chunk = Buffer.alloc(1 << 20, 'a');
const server = createServer((req, res) => {
  req.resume();
  written = 0;
  res.writeHead(200, { 'content-type': 'application/json' });
  res.write('{"prNumber":1,"prTitle":"');
  const pump = () => {
    while (written < size) {
      const piece = chunk.subarray(0, Math.min(chunk.length, size - written));
      written += piece.length;
      if (!res.write(piece)) return;
    }
    res.end('"}');
  };
  res.on('drain', pump);
  pump();
});
await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;

console.log(
  `load average before: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
console.log(
  `answer: ${size / 1e6} MB of JSON, chunked; cap: ${process.env.RAILYARD_MAX_RESPONSE_MIB ?? '64 (default)'} MiB`,
);
const env = {
  PATH: process.env.PATH ?? '',
  HOME: dir,
  XDG_CONFIG_HOME: join(dir, 'config'),
  NO_COLOR: '1',
  RAILYARD_API_URL: url,
  RAILYARD_TOKEN: 'bench',
  ...(process.env.RAILYARD_MAX_RESPONSE_MIB
    ? { RAILYARD_MAX_RESPONSE_MIB: process.env.RAILYARD_MAX_RESPONSE_MIB }
    : {}),
};
try {
  for (let i = 1; i <= runs; i++) {
    // Not spawnSync: the server runs in this process and must keep answering.
    const result = await new Promise<{ status: number | null; stderr: string; ms: number }>((done) => {
      const started = performance.now();
      const child = spawn(
        '/usr/bin/time',
        ['-v', process.execPath, BIN, 'mq', 'status', '1', '--repo', 'github.com/acme/web'],
        { env, cwd: dir },
      );
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d));
      child.stdout.resume();
      child.on('close', (status) => done({ status, stderr, ms: performance.now() - started }));
    });
    const rssKb = Number(/Maximum resident set size \(kbytes\): (\d+)/.exec(result.stderr)?.[1] ?? NaN);
    const exit = /Exit status: (\d+)/.exec(result.stderr)?.[1] ?? String(result.status);
    const error = result.stderr.split('\n').find((l) => l.startsWith('Error:')) ?? '(no error line)';
    console.log(
      `run ${i}: ${(result.ms / 1000).toFixed(2)} s wall, exit ${exit}, max RSS ${(rssKb / 1024).toFixed(0)} MiB (${((rssKb * 1.024) / 1000).toFixed(0)} MB), ` +
        `server wrote ${(written / 2 ** 20).toFixed(0)} MiB before the CLI hung up\n  ${error}`,
    );
  }
} finally {
  server.closeAllConnections();
  server.close();
  rmSync(dir, { recursive: true, force: true });
}
console.log(
  `load average after: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
