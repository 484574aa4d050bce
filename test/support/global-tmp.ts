/** Vitest global setup: a private temp dir for the whole run, checked for leftovers at the end. */
import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Vitest global setup: the whole run gets a private temp dir (TMPDIR, inherited by the test
 * workers and every process they start), so nothing of it lands in the system's. At the end the
 * directory must be empty: whatever a test, a server or a CLI run left behind fails the run, by
 * name, and is removed.
 */
export default function setup(): () => void {
  const root = mkdtempSync(join(tmpdir(), 'railyard-suite-'));
  // Traversable but not listable by others: the PostgreSQL tests run their throwaway cluster as the
  // `postgres` user (initdb refuses root), in a directory of its own under this one.
  chmodSync(root, 0o711);
  const previous = process.env.TMPDIR;
  process.env.TMPDIR = root;
  return () => {
    if (previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previous;
    // tsx keeps its compile cache in `$TMPDIR/tsx-<uid>`: a tool's cache, not a test's leftover.
    // `railyard-checks-<hash>`: the check directories of a git-forge server that a test killed on
    // purpose (kill -9) and never started again on its data dir; a real server removes them when it
    // next starts (src/forge/git/driver.ts). Removed here with the rest, not counted as a leak.
    const left = readdirSync(root).filter((name) => !/^tsx-\d+$/.test(name) && !/^railyard-checks-[0-9a-f]{12}$/.test(name));
    rmSync(root, { recursive: true, force: true });
    if (left.length) {
      // Vitest reports an error thrown here but still exits 0: fail the run explicitly.
      process.stderr.write(
        `\nFAIL temporary files: the tests left ${left.length} entr${left.length === 1 ? 'y' : 'ies'} under the temp dir: ${left.sort().join(', ')}\n`,
      );
      process.exitCode = 1;
    }
  };
}
