/**
 * What a test commit's merge conflict is with, in words for people (the history detail, the log,
 * `mq status`, the forge's comment): the PRs ahead of the conflicting one in its run whose own
 * changes touch the conflicting files (`PR #7 (ahead of it in the queue)`), else the target branch,
 * and the files. Reads the repository (or a remote forge's bare cache) holding the run's commits.
 */
import { findEntry, type Entry, type QueueModel, type TestRun } from '../../engine/index.js';
import type { MergeConflictError } from './errors.js';
import { git } from '../../git/exec.js';

export async function describeConflict(
  repoDir: string,
  model: QueueModel,
  run: TestRun,
  error: MergeConflictError,
): Promise<string> {
  const target = model.branch;
  const ahead = [...run.basePrNumbers, ...run.prNumbers.slice(0, run.prNumbers.indexOf(error.prNumber))]
    .map((pr) => findEntry(model, pr))
    .filter((e): e is Entry => e !== undefined && e.state !== 'merged');
  const conflicting = new Set(error.files);
  const culprits: number[] = [];
  for (const entry of ahead) {
    const base = (
      await git(repoDir, ['merge-base', target, entry.pr.headSha], { okCodes: [0, 1] })
    ).stdout.trim();
    if (!base) continue;
    const changed = (await git(repoDir, ['diff', '--name-only', base, entry.pr.headSha])).stdout.split('\n');
    if (changed.some((f) => conflicting.has(f))) culprits.push(entry.prNumber);
  }
  const files = error.files.length
    ? ` in ${error.files.slice(0, 10).join(', ')}${error.files.length > 10 ? ` and ${error.files.length - 10} more` : ''}`
    : '';
  const withWhat = culprits.length
    ? culprits.map((n) => `PR #${n}`).join(', ') + ` (ahead of it in the queue)`
    : `the ${target} branch`;
  return `PR #${error.prNumber} conflicts with ${withWhat}${files}`;
}
