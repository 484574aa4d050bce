import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import { git } from '../../src/git/exec.js';
import { cacheDirFor, ensureCache } from '../../src/forge/github/index.js';
import { tempDir } from '../support/tmp.js';

async function isCache(dir: string): Promise<void> {
  expect((await git(dir, ['rev-parse', '--is-bare-repository'])).stdout.trim()).toBe('true');
  expect((await git(dir, ['config', 'gc.auto'])).stdout.trim()).toBe('0');
}

describe('the bare cache of a GitHub repository', () => {
  // The server's first poll and the first test run of a new queue both ask for the cache, and
  // both wait on the same `GET /repos` first, so they reach ensureCache together. Two `git init`s
  // in one directory race on its files (config.lock, hooks): the run failed to start
  // (START_TEST_RUN_INVALID_EVENT) on about one loaded CI run in four.
  it('asked for by several callers at once, is created once and every caller gets a working cache', async () => {
    const root = await tempDir('railyard-cache-');
    const dirs = Array.from({ length: 12 }, (_, i) => cacheDirFor(root, '127.0.0.1:8443', 'acme', `app${i}`));
    const results = await Promise.allSettled(dirs.flatMap((dir) => Array.from({ length: 4 }, () => ensureCache(dir))));
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
    for (const dir of dirs) await isCache(dir);
    // Nothing but the caches next to them (no half-made directories left behind).
    expect(readdirSync(dirname(dirs[0]!)).sort()).toEqual(dirs.map((d) => d.slice(dirname(d).length + 1)).sort());
    // Existing caches are used as they are.
    await Promise.all(dirs.map((dir) => ensureCache(dir)));
    for (const dir of dirs) await isCache(dir);
  });

  it('a directory left half-made (no HEAD, e.g. a crash during creation) is made into a cache', async () => {
    const root = await tempDir('railyard-cache-');
    const dir = cacheDirFor(root, 'github.com', 'acme', 'app');
    mkdirSync(dir, { recursive: true });
    writeFileSync(`${dir}/description`, 'left over\n');
    await ensureCache(dir);
    await isCache(dir);
  });
});
