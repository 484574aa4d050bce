// How the GitHub emulator makes a new bare repository (with the emulators' shared git primitives):
// refs/pull/* hidden from pushes (GitHub's own, served to fetches) and the first commit, by the
// owner and committed by GitHub, in one git process.
import { initBareRepo, initialCommit } from '../emulator-git/index.js';

/** The repository of `owner` at `dir` with `files` on `defaultBranch`; returns the first commit's sha. */
export function initRepo(
  dir: string,
  scratch: string,
  defaultBranch: string,
  owner: string,
  files: Record<string, string>,
): string {
  // GitHub refuses pushes to refs/pull/* (they are its own) and serves them to fetches.
  initBareRepo(dir, defaultBranch, { hideFromPush: ['refs/pull'] });
  const email = `${owner.replace(/[^A-Za-z0-9._-]/g, '')}@users.noreply.github.com`;
  return initialCommit(dir, scratch, defaultBranch, files, {
    author: `${owner} <${email}>`,
    committer: 'GitHub <noreply@github.com>',
  });
}
