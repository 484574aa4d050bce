// Start-up cost of the GitHub emulator (test/support/github), which every GitHub e2e test pays:
// without validation, with validation on a cold schema cache (the 60+ MB OpenAPI description is
// parsed once), with the in-process cache, and in a new process with the on-disk cache.
// Run: npx tsx bench/gh-emulator-start.ts
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGitHubEmulator } from '../test/support/github/index.js';

async function once(validate: boolean): Promise<{ start: number; repo: number; close: number }> {
  const t0 = performance.now();
  const gh = await startGitHubEmulator({ validate });
  const t1 = performance.now();
  gh.createRepo('acme', 'app');
  const t2 = performance.now();
  await gh.close();
  return { start: t1 - t0, repo: t2 - t1, close: performance.now() - t2 };
}

const fmt = (r: { start: number; repo: number; close: number }) =>
  `start ${r.start.toFixed(0)} ms, createRepo ${r.repo.toFixed(0)} ms, close ${r.close.toFixed(0)} ms`;

if (process.argv[2] === 'child') {
  console.log(fmt(await once(true)));
} else {
  const cacheDir = mkdtempSync(join(tmpdir(), 'gh-emulator-bench-'));
  process.env.TMPDIR = cacheDir;
  try {
    console.log(`validate off:                 ${fmt(await once(false))}`);
    console.log(`validate on, cold cache:      ${fmt(await once(true))}`);
    console.log(`validate on, same process:    ${fmt(await once(true))}`);
    const child = execFileSync(process.execPath, [...process.execArgv, process.argv[1], 'child'], {
      encoding: 'utf8',
      env: process.env,
    });
    console.log(`validate on, new process:     ${child.trim()}`);
  } finally {
    rmSync(cacheDir, { recursive: true, force: true });
  }
}
