/**
 * Branch names a queue may target and a pull request may be based on: the rules of
 * `git check-ref-format --branch`, plus three of Railyard's own (no `refs/` prefix, no leading
 * `-`, at most 255 bytes). One pass over the name, no regular expression: the time is linear in
 * the length whatever the input.
 */

/** Longest branch name accepted, in UTF-8 bytes (a ref is a file: most file systems stop at 255). */
export const MAX_BRANCH_NAME_BYTES = 255;

/** Characters git never allows in a ref name, besides control characters and space. */
const FORBIDDEN = new Set(['~', '^', ':', '?', '*', '[', '\\']);

/**
 * Why `name` is not a valid branch name (the rule it breaks, for an error message), or null when
 * it is one. `name` is the short name (`main`, `release/1.x`), never `refs/heads/...`.
 */
export function branchNameProblem(name: string): string | null {
  if (name.length === 0) return 'must not be empty';
  // Cheap bound before the byte count: a UTF-16 unit is at most 3 UTF-8 bytes.
  if (name.length > MAX_BRANCH_NAME_BYTES || new TextEncoder().encode(name).length > MAX_BRANCH_NAME_BYTES) {
    return `must be at most ${MAX_BRANCH_NAME_BYTES} bytes`;
  }
  if (name.startsWith('refs/'))
    return 'must be a branch name, not a ref: drop the "refs/..." prefix (e.g. main)';
  if (name.startsWith('-')) return 'must not start with "-"';
  if (name === '@') return 'must not be "@"';
  if (name === 'HEAD') return 'must not be "HEAD"';
  let componentStart = 0;
  for (let i = 0; i < name.length; i++) {
    const c = name[i]!;
    const code = name.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return 'must not contain control characters';
    if (c === ' ') return 'must not contain spaces';
    if (FORBIDDEN.has(c)) return `must not contain "${c}"`;
    if (c === '.' && name[i + 1] === '.') return 'must not contain ".."';
    if (c === '@' && name[i + 1] === '{') return 'must not contain "@{"';
    if (c === '/') {
      if (i === componentStart) return 'must not start with "/" or contain "//"';
      if (name.endsWith('.lock', i)) return 'must not have a part between slashes ending in ".lock"';
      componentStart = i + 1;
    } else if (c === '.' && i === componentStart) {
      return 'must not have a part between slashes starting with "."';
    }
  }
  if (name.endsWith('/')) return 'must not end with "/"';
  if (name.endsWith('.lock')) return 'must not have a part between slashes ending in ".lock"';
  if (name.endsWith('.')) return 'must not end with "."';
  return null;
}

/** The message for an invalid branch name: the name (when short enough to echo) and the rule. */
export function describeBranchProblem(name: string, problem: string): string {
  const shown = name.length <= 100 ? ` ${JSON.stringify(name)}` : '';
  return `branch name${shown} is not valid: it ${problem}`;
}
