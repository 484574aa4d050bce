/**
 * Time from starting `node dist/index.js` (as the runner does) to its first HTTP request.
 * Goal: < 300 ms. Run: npx tsx bench/action-startup.ts [runs]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const runs = Number(process.argv[2] ?? 10);
const dist = resolve(import.meta.dirname, '../dist/index.js');
const dir = mkdtempSync(join(tmpdir(), 'action-bench-'));
writeFileSync(join(dir, 'event.json'), JSON.stringify({ pull_request: { number: 1, head: { sha: 'a'.repeat(40) }, base: { ref: 'main' } } }));
writeFileSync(join(dir, 'out'), '');
writeFileSync(join(dir, 'summary'), '');

let firstRequest: (() => void) | null = null;
const server = createServer((_req, res) => {
  firstRequest?.();
  res.writeHead(404, { 'content-type': 'text/plain' });
  res.end('pull request #1 was never submitted');
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;

const samples: number[] = [];
for (let i = 0; i < runs; i++) {
  const start = process.hrtime.bigint();
  const reached = new Promise<number>((r) => (firstRequest = () => r(Number(process.hrtime.bigint() - start) / 1e6)));
  const child = spawn(process.execPath, [dist], {
    stdio: 'ignore',
    env: {
      PATH: process.env.PATH,
      INPUT_TOKEN: 't',
      'INPUT_API-URL': url,
      INPUT_OPERATION: 'status',
      GITHUB_EVENT_PATH: join(dir, 'event.json'),
      GITHUB_EVENT_NAME: 'pull_request',
      GITHUB_OUTPUT: join(dir, 'out'),
      GITHUB_STEP_SUMMARY: join(dir, 'summary'),
      GITHUB_REPOSITORY: 'acme/web',
    },
  });
  samples.push(await reached);
  await new Promise((r) => child.on('close', r));
}
server.close();
samples.sort((a, b) => a - b);
console.log(`dist/index.js: ${(statSync(dist).size / 1e6).toFixed(2)} MB`);
console.log(`first request after: median ${samples[Math.floor(runs / 2)].toFixed(0)} ms, min ${samples[0].toFixed(0)} ms, max ${samples[runs - 1].toFixed(0)} ms (${runs} runs)`);
