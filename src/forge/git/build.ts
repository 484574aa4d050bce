/**
 * Test commits of the git forge (shared with the GitHub forge, which builds in a bare cache): a run's
 * commit is built on the basis the engine named, applying each PR the way the queue's merge method
 * lands it, so that what is tested is what lands.
 */
import type { MergeMethod } from '../../contract/index.js';
import { findEntry, type Entry, type QueueModel, type TestBasis, type TestRun } from '../../engine/index.js';
import { MergeConflictError } from './errors.js';
import { git, RAILYARD_IDENTITY } from '../../git/exec.js';
import { commitIdent, mergeTrees, testBranchName } from './repo.js';

/** One pull request of a test commit. */
export interface TestUnit {
  prNumber: number;
  /** The head that was tested (not re-read from the ref: what is tested is what lands). */
  headSha: string;
  title: string;
  /** Author name (informational; squash commits take name and email from the head commit). */
  author: string;
  /**
   * A stacked PR: the head of the PR it is based on (which lands before it, or landed). Its own
   * change is its head against that one, not against the target: the PR below is in it already.
   */
  belowHeadSha?: string;
}

/** A PR of the queue as a unit of a test commit (its tested head, title and author; for a stacked PR, the head below it). */
export const unitOf = (entry: Entry, model?: QueueModel): TestUnit => {
  const on = entry.pr.stackedOn;
  const below = on !== undefined && on !== null && model ? findEntry(model, on) : undefined;
  return {
    prNumber: entry.prNumber,
    headSha: entry.pr.headSha,
    title: entry.pr.title,
    author: entry.pr.author,
    ...(below ? { belowHeadSha: below.pr.headSha } : {}),
  };
};

/**
 * Where the test commit of `run` starts and what goes on it, as the engine's basis says: on the
 * test commit of the named run (its own PRs on top), or on `targetHead` with the unmerged base
 * PRs applied first. A named run without a commit (it could not be built) falls back to the target.
 */
export function planTestCommit(
  model: QueueModel,
  run: TestRun,
  basis: TestBasis,
  targetHead: string,
): { baseSha: string; units: TestUnit[] } {
  const entryOf = (pr: number) => {
    const e = findEntry(model, pr);
    if (!e) throw new Error(`run ${run.id}: pull request #${pr} is not in the queue`);
    return e;
  };
  const own = run.prNumbers.map((pr) => unitOf(entryOf(pr), model));
  if (basis.on === 'run') {
    const below = model.runs.find((r) => r.id === basis.runId);
    if (below?.sha) return { baseSha: below.sha, units: own };
  }
  const base = run.basePrNumbers.map(entryOf).filter((e) => e.state !== 'merged');
  return { baseSha: targetHead, units: [...base.map((e) => unitOf(e, model)), ...own] };
}

/**
 * The test commit of `run` in the bare repository `repoDir`, built on `basis` as the engine named
 * it (`targetHead`: the target's current head). The git and GitHub forges both build this way.
 */
export async function buildRunCommit(
  repoDir: string,
  model: QueueModel,
  run: TestRun,
  basis: TestBasis,
  targetHead: string,
): Promise<BuiltTestCommit> {
  const { baseSha, units } = planTestCommit(model, run, basis, targetHead);
  return buildTestCommit({
    repoDir,
    targetBranch: model.branch,
    baseSha,
    units,
    mergeMethod: run.mergeMethod,
    branchName: testBranchName([...run.basePrNumbers, ...run.prNumbers], run.id),
  });
}

export interface BuildTestCommitInput {
  /** Bare repository. */
  repoDir: string;
  /** The queue's target branch (named in errors). */
  targetBranch: string;
  /** The target head the prediction starts from. */
  baseSha: string;
  /** In queue order: the PRs of the predicted base first, then the PRs under test. */
  units: readonly TestUnit[];
  mergeMethod: MergeMethod;
  /** Test branch to create or overwrite, e.g. testBranchName(prs, runId). */
  branchName: string;
}

export interface BuiltTestCommit {
  /** The test commit: what the target branch is fast-forwarded to when the run merges. */
  sha: string;
  branch: string;
  /** The commit after each unit, in order: a prefix can land on its own (optimistic merging). */
  steps: Array<{ prNumber: number; sha: string }>;
}

interface Ident {
  name: string;
  email: string;
  date?: string;
}

function authorEnv(a: Ident): Record<string, string> {
  const env: Record<string, string> = { GIT_AUTHOR_NAME: a.name, GIT_AUTHOR_EMAIL: a.email };
  if (a.date) env.GIT_AUTHOR_DATE = a.date;
  return env;
}

async function commitTree(
  repoDir: string,
  tree: string,
  parents: readonly string[],
  message: string,
  author: Ident = RAILYARD_IDENTITY,
): Promise<string> {
  const args = ['commit-tree', tree, ...parents.flatMap((p) => ['-p', p]), '-F', '-'];
  const r = await git(repoDir, args, {
    input: message.endsWith('\n') ? message : message + '\n',
    env: authorEnv(author),
  });
  return r.stdout.trim();
}

async function treeOf(repoDir: string, rev: string): Promise<string> {
  return (await git(repoDir, ['rev-parse', `${rev}^{tree}`])).stdout.trim();
}

/** The empty tree, written into the repo (parent tree of a root commit). */
async function emptyTree(repoDir: string): Promise<string> {
  return (await git(repoDir, ['mktree'], { input: '' })).stdout.trim();
}

function conflict(input: BuildTestCommitInput, unit: TestUnit, files: string[]): MergeConflictError {
  const shown = files.slice(0, 5).join(', ') + (files.length > 5 ? ` and ${files.length - 5} more` : '');
  return new MergeConflictError(
    unit.prNumber,
    files,
    `PR #${unit.prNumber} conflicts with ${input.targetBranch}${input.units[0] !== unit ? ' and the PRs ahead of it' : ''}${shown ? ` in ${shown}` : ''}`,
  );
}

interface PrCommit {
  sha: string;
  tree: string;
  parentTree: string | null;
  author: Ident;
  message: string;
}

/** The PR's own commits (not yet in `onto`), oldest first, merge commits skipped as `git rebase` does. */
async function prCommits(repoDir: string, head: string, onto: string, below?: string): Promise<PrCommit[]> {
  const r = await git(repoDir, [
    'log',
    '-z',
    '--reverse',
    '--topo-order',
    '--no-merges',
    '--format=%H%x1f%T%x1f%P%x1f%an%x1f%ae%x1f%ad%x1f%B',
    '--date=raw',
    head,
    `^${onto}`,
    ...(below ? [`^${below}`] : []),
  ]);
  const commits: PrCommit[] = [];
  const parents: string[] = [];
  for (const rec of r.stdout.split('\0')) {
    if (!rec.trim()) continue;
    const [sha = '', tree = '', parentList = '', name = '', email = '', date = '', ...msg] =
      rec.split('\x1f');
    const firstParent = parentList.split(' ').filter(Boolean)[0] ?? '';
    parents.push(firstParent);
    commits.push({ sha, tree, parentTree: null, author: { name, email, date }, message: msg.join('\x1f') });
  }
  const withParent = parents.filter(Boolean);
  if (withParent.length > 0) {
    const t = await git(repoDir, ['rev-parse', ...withParent.map((p) => `${p}^{tree}`)]);
    const trees = t.stdout.trim().split('\n');
    let i = 0;
    commits.forEach((c, k) => {
      if (parents[k]) c.parentTree = trees[i++]!;
    });
  }
  return commits;
}

/**
 * Apply one commit's change (its diff against its first parent) on top of `onto`: a cherry-pick
 * without a worktree. git 2.39's merge-tree cannot take an explicit merge base, so we give it one:
 * two throw-away commits with a common root whose tree is the commit's parent tree.
 */
async function cherryPickTree(
  repoDir: string,
  c: Pick<PrCommit, 'tree' | 'parentTree'>,
  onto: string,
  ontoTree: string,
): Promise<{ ok: true; tree: string } | { ok: false; files: string[] }> {
  const base = await commitTree(
    repoDir,
    c.parentTree ?? (await emptyTree(repoDir)),
    [],
    'railyard: cherry-pick base',
  );
  const [theirs, ours] = await Promise.all([
    commitTree(repoDir, c.tree, [base], 'railyard: cherry-pick theirs'),
    commitTree(repoDir, ontoTree, [base], `railyard: cherry-pick onto ${onto}`),
  ]);
  return mergeTrees(repoDir, ours, theirs);
}

/**
 * Build the test commit of a run on `baseSha`, landing each unit exactly the way `mergeMethod`
 * would, then point `refs/heads/<branchName>` at it. No worktree, no checkout: only
 * `merge-tree`/`commit-tree` (git ≥ 2.38).
 *
 * - merge_commit: one merge commit per PR, parents (previous, PR head), message
 *   `Merge pull request #N: <title>`, author and committer Railyard.
 * - squash: one commit per PR holding the PR's combined diff, message `<title> (#N)`, author =
 *   the PR head commit's author, committer Railyard.
 * - rebase: the PR's commits (those not already on the base; merge commits skipped) replayed
 *   one by one, keeping author, date and message; commits that become empty are dropped.
 *
 * Throws MergeConflictError naming the first PR (in queue order) that does not apply.
 */
export async function buildTestCommit(input: BuildTestCommitInput): Promise<BuiltTestCommit> {
  const { repoDir, units, mergeMethod } = input;
  if (units.length === 0) throw new Error('buildTestCommit: units must contain at least one PR');
  let cur = input.baseSha;
  let curTree = await treeOf(repoDir, cur);
  const steps: BuiltTestCommit['steps'] = [];
  for (const unit of units) {
    if (mergeMethod === 'squash' && unit.belowHeadSha) {
      // A stacked PR: its change against the PR below it (already applied), not against the target.
      const m = await cherryPickTree(
        repoDir,
        { tree: await treeOf(repoDir, unit.headSha), parentTree: await treeOf(repoDir, unit.belowHeadSha) },
        cur,
        curTree,
      );
      if (!m.ok) throw conflict(input, unit, m.files);
      const who = await commitIdent(repoDir, unit.headSha);
      cur = await commitTree(repoDir, m.tree, [cur], `${unit.title} (#${unit.prNumber})`, {
        name: who.authorName,
        email: who.authorEmail,
      });
      curTree = m.tree;
    } else if (mergeMethod === 'merge_commit' || mergeMethod === 'squash') {
      const m = await mergeTrees(repoDir, cur, unit.headSha);
      if (!m.ok) throw conflict(input, unit, m.files);
      if (mergeMethod === 'merge_commit') {
        cur = await commitTree(
          repoDir,
          m.tree,
          [cur, unit.headSha],
          `Merge pull request #${unit.prNumber}: ${unit.title}`,
        );
      } else {
        const who = await commitIdent(repoDir, unit.headSha);
        cur = await commitTree(repoDir, m.tree, [cur], `${unit.title} (#${unit.prNumber})`, {
          name: who.authorName,
          email: who.authorEmail,
        });
      }
      curTree = m.tree;
    } else {
      for (const c of await prCommits(repoDir, unit.headSha, cur, unit.belowHeadSha)) {
        const m = await cherryPickTree(repoDir, c, cur, curTree);
        if (!m.ok) throw conflict(input, unit, m.files);
        if (m.tree === curTree) continue; // already applied: dropped like `git rebase` does
        cur = await commitTree(repoDir, m.tree, [cur], c.message, c.author);
        curTree = m.tree;
      }
    }
    steps.push({ prNumber: unit.prNumber, sha: cur });
  }
  await git(repoDir, ['update-ref', '-m', 'railyard: test commit', `refs/heads/${input.branchName}`, cur]);
  return { sha: cur, branch: input.branchName, steps };
}
