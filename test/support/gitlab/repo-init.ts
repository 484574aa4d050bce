// How the GitLab emulator makes a new bare repository: the first commit in one git process, and
// GitLab's push rules as a pre-receive hook.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const ZERO = '0000000000000000000000000000000000000000';

export function initialCommit(
  dir: string,
  root: string,
  branch: string,
  files: Record<string, string>,
): string {
  const data = (text: string) => `data ${Buffer.byteLength(text)}\n${text}\n`;
  const when = `${Math.floor(Date.now() / 1000)} +0000`;
  const stream =
    `commit refs/heads/${branch}\nmark :1\n` +
    `author Administrator <admin@example.com> ${when}\ncommitter Administrator <admin@example.com> ${when}\n` +
    data('Initial commit') +
    Object.entries(files)
      .map(
        ([path, content]) =>
          `M 100644 inline ${/[\s"\\]/.test(path) ? JSON.stringify(path) : path}\n${data(content)}`,
      )
      .join('') +
    '\n';
  const marks = join(root, `marks-${randomUUID()}`);
  execFileSync('git', ['--git-dir', dir, 'fast-import', '--quiet', `--export-marks=${marks}`], {
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
    input: stream,
  });
  const sha = readFileSync(marks, 'utf8').trim().split(' ')[1];
  rmSync(marks, { force: true });
  return sha;
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
