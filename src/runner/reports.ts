/**
 * Test reports a check declares (`railyard.json`: `"checks": { "test": { "run": "…", "reports":
 * ["junit.xml"] } }`): read from the check's worktree after it ran, before the worktree goes.
 * The check is untrusted code, so only regular files inside the worktree count: symlinks are not
 * followed (a report linked to a file of the server is not read), patterns may not leave the
 * worktree, and at most MAX_REPORT_BYTES are read in all.
 */
import { lstat, readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { glob } from 'tinyglobby';

/** The most report text read per check: the API's body limit (20 MiB). */
export const MAX_REPORT_BYTES = 20 * 1024 * 1024;

export interface CheckReport {
  /** The report's path relative to the worktree. */
  name: string;
  content: string;
}

/** The report files matching `patterns` in `dir` (relative globs), sorted by name; problems are skipped, not thrown. */
export async function collectReports(dir: string, patterns: readonly string[]): Promise<CheckReport[]> {
  const root = await realpath(dir);
  const usable = patterns.filter((p) => !path.isAbsolute(p) && !p.split(/[\\/]/).includes('..'));
  if (usable.length === 0) return [];
  const matches = await glob([...usable], { cwd: root, absolute: true, dot: true, onlyFiles: true, followSymbolicLinks: false, expandDirectories: false });
  const out: CheckReport[] = [];
  let total = 0;
  for (const file of [...new Set(matches)].sort()) {
    const info = await lstat(file).catch(() => null);
    if (!info?.isFile()) continue; // a symlink or anything but a regular file
    const real = await realpath(file).catch(() => null);
    if (!real || path.relative(root, real).startsWith('..')) continue;
    if (total + info.size > MAX_REPORT_BYTES) break;
    total += info.size;
    out.push({ name: path.relative(root, real), content: await readFile(real, 'utf8') });
  }
  return out;
}
