/**
 * Whether a change touches a test (the flake-aware merge queue never ignores or retries a failure
 * of a test whose file a PR of the run changes): the test's file, else a path-like
 * classname, compared with the changed paths (either may be relative to a subdirectory). Unknown
 * changes, or a test without a path, count as changed: the safe answer.
 */
export function changesTest(changed: readonly string[] | null, test: { file: string | null; classname: string | null }): boolean {
  const paths = [test.file, test.classname].filter((p): p is string => !!p && /[/.]/.test(p)).map((p) => p.replace(/^\.?\/+/, ''));
  if (changed === null || paths.length === 0) return true;
  return changed.some((c) => paths.some((p) => c === p || c.endsWith(`/${p}`) || p.endsWith(`/${c}`)));
}
