/** Temporary directories of a test file, removed when its tests are done. */
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Temporary directories of a test file, removed when the file's tests are done if the test did
 * not remove them itself. The suite's guard (test/support/global-tmp.ts) fails the
 * run if anything is left under the temp dir all the same.
 */
const made = new Set<string>();

/**
 * Removes the directories made so far. Under vitest, test/support/per-file.ts calls it after each
 * test file (this module is loaded once per worker, which runs many files); outside vitest (bench/
 * scripts import the e2e harness) the exit hook does.
 */
export function removeTempDirs(): void {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
  made.clear();
}
process.on('exit', removeTempDirs);

/** A fresh directory `<tmpdir>/<prefix>XXXXXX`, removed at the latest when the test file ends. */
export function tempDirSync(prefix = 'railyard-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.add(dir);
  return dir;
}

export async function tempDir(prefix = 'railyard-test-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  made.add(dir);
  return dir;
}
