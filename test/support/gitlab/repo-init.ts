// How the GitLab emulator makes a new bare repository (with the emulators' shared git primitives):
// refs GitLab keeps to itself hidden, GitLab's push rules as a pre-receive hook, and the first
// commit — or, for a fork, the branches of the project it forks.
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fetchBranches, initBareRepo, initialCommit, ZERO } from '../emulator-git/index.js';

/** A project's bare repository at `dir`; returns its branches (`branch → sha`). */
export function initProject(
  dir: string,
  scratch: string,
  defaultBranch: string,
  o: { forkOf?: { dir: string; refs: Map<string, string> }; files: Record<string, string> },
): Map<string, string> {
  // GitLab keeps refs/merge-requests/* and refs/pipelines/* to itself: fetchable, never pushable.
  initBareRepo(dir, defaultBranch, {
    hideFromPush: ['refs/merge-requests', 'refs/pipelines'],
    hideFromFetch: ['refs/pipelines'],
  });
  writeFileSync(join(dir, 'hooks', 'pre-receive'), PRE_RECEIVE);
  chmodSync(join(dir, 'hooks', 'pre-receive'), 0o755);
  if (o.forkOf) {
    fetchBranches(dir, o.forkOf.dir);
    return new Map(o.forkOf.refs);
  }
  const who = 'Administrator <admin@example.com>';
  return new Map([
    [defaultBranch, initialCommit(dir, scratch, defaultBranch, o.files, { author: who, committer: who })],
  ]);
}

/**
 * GitLab's push checks, as a pre-receive hook (git http-backend passes REMOTE_USER through):
 * Developer or more to push at all; protected branches need their push level, refuse deletion
 * and refuse non-fast-forward updates unless force push is allowed. Messages are GitLab's.
 */
export const PRE_RECEIVE = `#!/bin/sh
# Written by the GitLab emulator (test/support/gitlab): GitLab's push rules.
level=$(awk -v u="$REMOTE_USER" '$1 == u { print $2 }' "$GIT_DIR/railyard-access")
[ -n "$level" ] || level=0
if [ "$level" -lt 30 ]; then
  echo "GitLab: You are not allowed to push code to this project." >&2
  exit 1
fi
zero=${ZERO}
tab=$(printf '\\t')
while read -r old new ref; do
  case "$ref" in refs/heads/*) branch=\${ref#refs/heads/} ;; *) continue ;; esac
  while IFS="$tab" read -r pattern push force; do
    [ -n "$pattern" ] || continue
    case "$branch" in $pattern) ;; *) continue ;; esac
    if [ "$push" -eq 0 ] || [ "$level" -lt "$push" ]; then
      echo "GitLab: You are not allowed to push code to protected branches on this project." >&2
      exit 1
    fi
    if [ "$new" = "$zero" ]; then
      echo "GitLab: You can only delete protected branches using the web interface." >&2
      exit 1
    fi
    if [ "$old" != "$zero" ] && [ "$force" != 1 ] && ! git merge-base --is-ancestor "$old" "$new"; then
      echo "GitLab: You are not allowed to force push code to a protected branch on this project." >&2
      exit 1
    fi
  done < "$GIT_DIR/railyard-protected"
done
exit 0
`;
