/** Temporary directories of a test file, removed when its tests are done. */
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

/**
 * Temporary directories of a test file, removed when the file's tests are done if the test did
 * not remove them itself. The suite's guard (test/support/global-tmp.ts) fails the
 * run if anything is left under the temp dir all the same.
 */
const made = new Set<string>();

function removeAll(): void {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
  made.clear();
}
// Registered on the test file that imports this module first (each file runs in its own module graph).
// Outside vitest (bench/ scripts import the e2e harness) there is no suite: the exit hook removes them.
try {
  afterAll(removeAll);
} catch {
  /* not under vitest */
}
process.on('exit', removeAll);

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
