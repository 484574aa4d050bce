/**
 * Does a PR merge onto its target: `git merge-tree --write-tree` (git ≥ 2.38) without a worktree,
 * and for a conflict, the files and the target's commit that last changed them (the git forge's
 * `readiness.conflict`, the sentence every view shows).
 */
import type { Mergeability } from '../../contract/index.js';
import type { PrConflict } from '../../engine/types.js';
import { git, GitError } from '../../git/exec.js';

/** Merge results never change (commits are immutable): keep a bounded cache. */
const CACHE_MAX = 10_000;

/** Result of `git merge-tree --write-tree`: the merged tree, or the conflicting paths. */
export type TreeMerge = { ok: true; tree: string } | { ok: false; files: string[] };

/** Three-way merge of two commits (merge base computed by git), without touching any worktree. */
export async function mergeTrees(repoDir: string, ours: string, theirs: string): Promise<TreeMerge> {
  const r = await git(repoDir, ['merge-tree', '--write-tree', '--name-only', '--no-messages', '-z', ours, theirs], { okCodes: [0, 1, 128] });
  if (r.code === 128) {
    // Nothing in common: it cannot be merged (report no paths); anything else is a real error.
    if (/unrelated histories/.test(r.stderr)) return { ok: false, files: [] };
    throw new GitError(['merge-tree', '--write-tree', ours, theirs], r.code, r.stderr);
  }
  const parts = r.stdout.split('\0').filter((p) => p !== '' && p !== '\n');
  const tree = parts[0]?.trim() ?? '';
  if (r.code === 0) return { ok: true, tree };
  return { ok: false, files: [...new Set(parts.slice(1).map((p) => p.trim()))] };
}

export interface MergeCheck {
  mergeability: Mergeability;
  conflict?: PrConflict;
}

const mergeabilityCache = new Map<string, MergeCheck>();

/**
 * Whether `headSha` merges onto `targetSha` without conflict, and when it does not, the conflicting
 * files and the target's commit that last changed them (`conflictOf`). Cached per (repo, head,
 * target): both are immutable commits.
 */
export async function mergeabilityOf(repoDir: string, headSha: string, targetSha: string): Promise<MergeCheck> {
  const key = `${repoDir}\0${headSha}\0${targetSha}`;
  const hit = mergeabilityCache.get(key);
  if (hit) return hit;
  const m = await mergeTrees(repoDir, targetSha, headSha);
  const result: MergeCheck = m.ok
    ? { mergeability: 'mergeable' }
    : { mergeability: 'not_mergeable', conflict: await conflictOf(repoDir, headSha, targetSha, m.files) };
  if (mergeabilityCache.size >= CACHE_MAX) mergeabilityCache.delete(mergeabilityCache.keys().next().value!);
  mergeabilityCache.set(key, result);
  return result;
}

/**
 * The conflicting files and the commit on the target (since the PR's merge base, following the
 * target's first parents, so a landed PR shows as its squash or merge commit) that last changed
 * one of them, with its PR number when its subject names one (`title (#7)` or `Merge pull request #7: …`).
 */
async function conflictOf(repoDir: string, headSha: string, targetSha: string, files: string[]): Promise<PrConflict> {
  if (!files.length) return {};
  const base = (await git(repoDir, ['merge-base', targetSha, headSha], { okCodes: [0, 1] })).stdout.trim();
  if (!base) return { files };
  const log = await git(repoDir, ['log', '--first-parent', '-n1', '--format=%H%x00%s', `${base}..${targetSha}`, '--', ...files]);
  const [sha = '', subject = ''] = log.stdout.replace(/\n$/, '').split('\0');
  if (!sha) return { files };
  const pr = /\(#(\d+)\)$/.exec(subject) ?? /^Merge pull request #(\d+)\b/.exec(subject);
  return { files, commit: { sha, subject, ...(pr ? { prNumber: Number(pr[1]) } : {}) } };
}

