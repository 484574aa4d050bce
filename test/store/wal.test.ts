/**
 * The SQLite write-ahead log stays bounded under sustained writes (issue 26, item 12: it grew
 * 246 → 786 MB in 45 s and stayed so). Three clients upload flaky-test reports back to back for
 * 25 s to a real server over HTTP; the WAL is sampled four times a second and must stay under
 * 64 MB, and no upload may fail (a checkpoint that takes the write lock must not make a
 * transaction fail). bench/wal.ts runs the same for 10 minutes with queue traffic besides.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SQLITE_FILE } from '../../src/store/index.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { call, REPO } from '../server/helpers.js';

const SECONDS = 25;
const MB = 1024 * 1024;

function report(seed: number, count: number): string {
  const parts = ['<testsuites>'];
  for (let k = 0; k < count; k++) {
    const id = k < count * 0.75 ? k : 1_000_000 + seed * count + k;
    if (k % 200 === 0) parts.push(`${k ? '</testsuite>' : ''}<testsuite name="module ${Math.floor(id / 200)}">`);
    const attrs = `classname="m${Math.floor(id / 200)}.Spec" name="case ${id}"`;
    parts.push((k + seed) % 23 === 0 ? `<testcase ${attrs}><failure message="boom ${seed}"/></testcase>` : `<testcase ${attrs}/>`);
  }
  parts.push('</testsuite></testsuites>');
  return parts.join('\n');
}

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

describe('SQLite WAL under sustained writes', () => {
  it(`stays under 64 MB while uploads come back to back for ${SECONDS} s, and none fails`, { timeout: 120_000 }, async () => {
    const wal = join(server.dataDir, `${SQLITE_FILE}-wal`);
    let max = 0;
    const sampler = setInterval(() => {
      try {
        max = Math.max(max, statSync(wal).size);
      } catch {
        // not there yet
      }
    }, 250);
    const end = Date.now() + SECONDS * 1000;
    let seq = 0;
    const failures: string[] = [];
    let uploads = 0;
    const uploader = async () => {
      while (Date.now() < end && failures.length < 3) {
        const s = seq++;
        const answer = await call(server, 'uploadTestResults', {
          repo: REPO,
          org_url_slug: server.org,
          branch: 'main',
          sha: (0x100000 + s).toString(16),
          reports: [{ name: 'junit.xml', content: report(s, 2000) }],
        });
        if (answer.status === 200) uploads++;
        else failures.push(`${answer.status} ${answer.text}`);
      }
    };
    await Promise.all([uploader(), uploader(), uploader()]);
    clearInterval(sampler);
    expect(failures).toEqual([]);
    expect(uploads).toBeGreaterThan(5);
    expect(max / MB, `WAL max ${(max / MB).toFixed(1)} MB over ${uploads} uploads`).toBeLessThan(64);
  });
});
