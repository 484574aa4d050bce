/**
 * A repository of the git root must be what its path says: `<root>/<host>/<owner>/<name>.git`, a
 * directory of its own. A symlink there (`evil/web.git -> ../acme/web.git`), a symlinked `refs` or
 * `objects` inside it, or a `commondir` file would let the organisation that owns `evil/*` read
 * and land pull requests in another owner's repository. These checks resolve real paths on disk
 * (synchronously: a handful of lstat/realpath calls) and say what is wrong without naming where
 * the link points (that path belongs to someone else).
 */
import { existsSync, lstatSync, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';

/** What git reads or writes inside a bare repository: none of it may lead out of it. */
const INSIDE = ['refs', 'packed-refs', 'objects', 'HEAD', 'config', 'hooks', 'info', 'logs', 'worktrees'];

const within = (dir: string, parent: string) => dir === parent || dir.startsWith(parent + path.sep);

/**
 * Why `repoDir` (an existing path `<gitRoot>/<host>/<owner>/<name>.git`) is not a repository of
 * its own place, or null when it is. Alternates (objects borrowed from another repository) are
 * allowed from repositories of the same owner only.
 */
export function repoPlaceProblem(gitRoot: string, repoDir: string): string | null {
  const realRoot = realpathSync(gitRoot);
  const rel = path.relative(gitRoot, repoDir);
  const expected = path.join(realRoot, rel);
  let real: string;
  try {
    real = realpathSync(repoDir);
  } catch {
    return 'it cannot be resolved';
  }
  if (real !== expected) return 'it is a symbolic link (or lies under one) to another place';
  for (const entry of INSIDE) {
    const p = path.join(real, entry);
    if (!existsSync(p) && !isDanglingLink(p)) continue;
    let target: string;
    try {
      target = realpathSync(p);
    } catch {
      return `its ${entry} is a symbolic link that cannot be resolved`;
    }
    if (!within(target, real) || target === real) return `its ${entry} leads out of the repository`;
  }
  if (existsSync(path.join(real, 'commondir'))) return 'it takes its refs from another repository (commondir)';
  const alternates = path.join(real, 'objects', 'info', 'alternates');
  if (existsSync(alternates)) {
    const ownerDir = path.dirname(real);
    for (const line of readFileSync(alternates, 'utf8').split('\n')) {
      const entry = line.trim();
      if (!entry || entry.startsWith('#')) continue;
      let target: string;
      try {
        target = realpathSync(path.resolve(path.join(real, 'objects'), entry));
      } catch {
        continue; // git ignores alternates that do not exist
      }
      if (!within(target, ownerDir)) return "it borrows objects from a repository of another owner (objects/info/alternates)";
    }
  }
  return null;
}

function isDanglingLink(p: string): boolean {
  try {
    return lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}
