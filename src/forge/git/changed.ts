/**
 * The files a test commit changes on top of its target (the flake-aware verdict never ignores a
 * failing test whose file a PR of the run changes): `git diff --name-only` from the
 * merge-base of the target branch and the commit. Used by the git forge and by the remote forges'
 * builders (their bare caches hold the target and the test commit).
 */
import { git } from '../../git/exec.js';

/** Null when the target branch or the commit is missing, or they share no history. */
export async function filesChangedOnTarget(repoDir: string, targetBranch: string, sha: string): Promise<string[] | null> {
  const base = (await git(repoDir, ['merge-base', targetBranch, sha], { okCodes: [0, 1, 128] })).stdout.trim();
  if (!base) return null;
  return (await git(repoDir, ['diff', '--name-only', '--no-renames', base, sha])).stdout.split('\n').filter(Boolean);
}
