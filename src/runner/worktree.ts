import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { git, withRepoLock } from '../forge/git/exec.js';

/**
 * A temporary detached worktree of `sha` (`git worktree add --detach`). Call `remove()` when
 * done: it deletes the directory and git's record of it, and never throws.
 */
export interface TempWorktree {
  dir: string;
  remove(): Promise<void>;
}

export async function addTempWorktree(repoDir: string, sha: string, parentDir: string = os.tmpdir()): Promise<TempWorktree> {
  const dir = await mkdtemp(path.join(parentDir, 'railyard-wt-'));
  try {
    await withRepoLock(repoDir, () => git(repoDir, ['worktree', 'add', '--detach', '--force', dir, sha]));
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  let removed = false;
  return {
    dir,
    async remove() {
      if (removed) return;
      removed = true;
      try {
        await withRepoLock(repoDir, () => git(repoDir, ['worktree', 'remove', '--force', '--force', dir]));
      } catch {
        // e.g. a check made files unreadable: remove by hand and let git forget the worktree
        await rm(dir, { recursive: true, force: true }).catch(() => undefined);
        await withRepoLock(repoDir, () => git(repoDir, ['worktree', 'prune'])).catch(() => undefined);
      }
    },
  };
}
