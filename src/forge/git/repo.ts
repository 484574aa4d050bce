/** The git forge's repository work: test branches, test commits (merge, squash, rebase), landing by compare-and-swap. */
import path from 'node:path';
import { branchNameProblem } from '../../contract/branch-name.js';
import type { PrFacts } from '../../engine/types.js';
import { mergeabilityOf, mergeTrees, type MergeCheck } from './merge-check.js';
import {
  CHECKS_CONFIG_FILE,
  ChecksConfigError,
  parseChecksConfig,
  type ChecksConfig,
} from '../../checks/config.js';
import { git, withRepoLock } from '../../git/exec.js';
import { NotFastForwardError } from './errors.js';
import { configuredBases } from './pr-bases.js';

const SHA_RE = /^[0-9a-f]{40}([0-9a-f]{24})?$/;
/** Prefix of every test branch the queue creates. */
export const TEST_BRANCH_PREFIX = 'railyard-merge/';
/** The file at the root of the target branch that lists the checks. */

// ------------------------------------------------------------------ layout

const SEGMENT_RE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/**
 * Where `railyard serve --git-root DIR` keeps a repository: `DIR/<host>/<owner>/<name>.git`.
 * Throws when a segment could escape the root (slashes, `..`, leading dots, empty).
 */
export function repoDirFor(gitRoot: string, host: string, owner: string, name: string): string {
  for (const [field, value] of [
    ['host', host],
    ['owner', owner],
    ['name', name],
  ] as const) {
    if (!SEGMENT_RE.test(value) || value.includes('..')) {
      throw new Error(`repo.${field}: "${value}" is not a valid path segment for the git forge`);
    }
  }
  return path.join(gitRoot, host, owner, `${name}.git`);
}

function branchRef(branch: string): string {
  return branch.startsWith('refs/') ? branch : `refs/heads/${branch}`;
}

/** The rev to read from: full SHAs are used as-is, anything else is a branch name. */
function revOf(branchOrSha: string): string {
  return SHA_RE.test(branchOrSha) ? branchOrSha : branchRef(branchOrSha);
}

// ------------------------------------------------------------------ heads

/** Current commit of a branch, or null when the branch does not exist. */
export async function headOf(repoDir: string, branch: string): Promise<string | null> {
  const r = await git(repoDir, ['rev-parse', '--verify', '--quiet', `${branchRef(branch)}^{commit}`], {
    okCodes: [0, 1, 128],
  });
  return r.code === 0 ? r.stdout.trim() : null;
}

// ------------------------------------------------------------------ pull requests

/** The git config key that sets PR N's base branch in the bare repository (see README.md). */
export function prBaseConfigKey(prNumber: number): string {
  return `railyard.pr-${prNumber}.base`;
}

interface CommitIdent {
  subject: string;
  authorName: string;
  authorEmail: string;
}

/** Commit metadata never changes: keep a bounded cache. */
const identCache = new Map<string, CommitIdent>();
const IDENT_CACHE_MAX = 10_000;

export async function commitIdent(repoDir: string, sha: string): Promise<CommitIdent> {
  const key = `${repoDir}\0${sha}`;
  const hit = identCache.get(key);
  if (hit) return hit;
  const r = await git(repoDir, ['show', '-s', '--format=%s%x00%an%x00%ae', sha]);
  const [subject = '', authorName = '', authorEmail = ''] = r.stdout.replace(/\n$/, '').split('\0');
  const ident = { subject, authorName, authorEmail };
  if (identCache.size >= IDENT_CACHE_MAX) identCache.delete(identCache.keys().next().value!);
  identCache.set(key, ident);
  return ident;
}

export { mergeabilityOf, mergeTrees, type MergeCheck, type TreeMerge } from './merge-check.js';

async function readBlobs(repoDir: string, shas: string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  if (shas.length === 0) return out;
  // One process for all blobs: `cat-file --batch` prints "<sha> <type> <size>\n<content>\n".
  const r = await git(repoDir, ['cat-file', '--batch'], { input: shas.join('\n') + '\n' });
  const buf = Buffer.from(r.stdout, 'utf8');
  let pos = 0;
  while (pos < buf.length) {
    const nl = buf.indexOf(10, pos);
    if (nl < 0) break;
    const [sha = '', type, size] = buf.subarray(pos, nl).toString('utf8').split(' ');
    pos = nl + 1;
    if (type === 'missing' || size === undefined) continue;
    const n = Number(size);
    if (type === 'blob') out.set(sha, buf.subarray(pos, pos + n).toString('utf8'));
    pos += n + 1;
  }
  return out;
}

function cleanBranchName(raw: string): string | null {
  const name = raw.trim().replace(/^refs\/heads\//, '');
  return name === '' ? null : name;
}

/**
 * The facts of pull request N: `refs/pull/N/head` is its head, the head commit's subject is its
 * title and the head commit's author name its author. Its base is the branch named by
 * `refs/pull/N/base` (a blob holding the branch name), else git config `railyard.pr-N.base`,
 * else `queueBranch`. A base of `refs/pull/M/head` stacks the PR on PR M while M's head exists
 * (`stackedOn`; the engine's rules/stacks.ts). Mergeability: does the head merge onto the base's
 * head without conflict ('unspecified' when that branch does not exist).
 *
 * Returns null when `refs/pull/N/head` does not exist: git cannot tell a PR that was never
 * opened from one that was closed (detect closing with `snapshot`/`diffSnapshots`).
 */
export async function getPullRequest(
  repoDir: string,
  prNumber: number,
  queueBranch: string,
): Promise<PrFacts | null> {
  // The queue's branch (the base of nearly every PR) is read by the same process: a spawn less.
  const queueRef = branchNameProblem(queueBranch) === null ? `refs/heads/${queueBranch}` : null;
  const refs = await git(repoDir, [
    'for-each-ref',
    '--format=%(refname) %(objectname) %(objecttype)',
    `refs/pull/${prNumber}/`,
    ...(queueRef ? [queueRef] : []),
  ]);
  let headSha: string | null = null;
  let baseBlob: string | null = null;
  // null: the queue's branch does not exist; undefined: not read here (headOf peels what is no commit).
  let queueHead: string | null | undefined = queueRef ? null : undefined;
  for (const line of refs.stdout.split('\n')) {
    const [ref, sha, type] = line.split(' ');
    if (ref === `refs/pull/${prNumber}/head` && type === 'commit') headSha = sha!;
    if (ref === `refs/pull/${prNumber}/base` && type === 'blob') baseBlob = sha!;
    if (queueRef && ref === queueRef) queueHead = type === 'commit' ? sha! : undefined;
  }
  if (!headSha) return null;
  let baseBranch: string | null = null;
  if (baseBlob) baseBranch = cleanBranchName((await readBlobs(repoDir, [baseBlob])).get(baseBlob) ?? '');
  if (!baseBranch) {
    baseBranch = cleanBranchName((await configuredBases(repoDir)).byKey.get(prBaseConfigKey(prNumber)) ?? '');
  }
  baseBranch ??= queueBranch;
  // A base that is no branch name (refs/tags/v1, main~1) is reported as it is, for the server to
  // refuse; it is never resolved. `refs/pull/M/head` is another PR's head: this PR is stacked on it.
  const validBase = branchNameProblem(baseBranch) === null;
  const stacked = /^refs\/pull\/([1-9][0-9]{0,8})\/head$/.exec(baseBranch);
  const below =
    stacked && Number(stacked[1]) !== prNumber ? await pullHead(repoDir, Number(stacked[1])) : null;
  const [ident, targetSha] = await Promise.all([
    commitIdent(repoDir, headSha),
    below ??
      (!validBase
        ? null
        : baseBranch === queueBranch && queueHead !== undefined
          ? queueHead
          : headOf(repoDir, baseBranch)),
  ]);
  const check: MergeCheck = targetSha
    ? await mergeabilityOf(repoDir, headSha, targetSha)
    : { mergeability: 'unspecified' };
  return {
    headSha,
    headBranch: `pull/${prNumber}`,
    title: ident.subject,
    author: ident.authorName,
    baseBranch,
    mergeability: check.mergeability,
    ...(check.conflict ? { conflict: check.conflict } : {}),
    open: true,
    ...(below ? { stackedOn: Number(stacked![1]) } : {}),
  };
}

/** The head commit of PR `prNumber` (`refs/pull/N/head`), or null when it has none (closed, or never opened). */
async function pullHead(repoDir: string, prNumber: number): Promise<string | null> {
  const r = await git(repoDir, ['rev-parse', '--verify', '--quiet', `refs/pull/${prNumber}/head^{commit}`], {
    okCodes: [0, 1, 128],
  });
  return r.code === 0 ? r.stdout.trim() : null;
}

/** Whether `ancestor` is reachable from `descendant` (false also when either is unknown). */
export async function isAncestor(repoDir: string, ancestor: string, descendant: string): Promise<boolean> {
  const r = await git(repoDir, ['merge-base', '--is-ancestor', ancestor, descendant], {
    okCodes: [0, 1, 128],
  });
  return r.code === 0;
}

/**
 * Whether a PR head is already in `branch`: `head` when the commit itself is (merged with a merge
 * commit or fast-forward), `changes` when merging it would change nothing (squashed or rebased
 * in), null when it would bring something new or `branch` does not exist.
 */
export async function containedIn(
  repoDir: string,
  headSha: string,
  branch: string,
): Promise<'head' | 'changes' | null> {
  const target = await headOf(repoDir, branch);
  if (!target) return null;
  if (await isAncestor(repoDir, headSha, target)) return 'head';
  const [merged, tree] = await Promise.all([
    mergeTrees(repoDir, target, headSha),
    git(repoDir, ['rev-parse', '--verify', '--quiet', `${target}^{tree}`]),
  ]);
  return merged.ok && merged.tree === tree.stdout.trim() ? 'changes' : null;
}

// ------------------------------------------------------------------ change detection

export interface PullRefState {
  head: string;
  /** Base branch set explicitly (ref or config), or null = the queue's branch. */
  base: string | null;
}

/** All branch heads and pull request refs of a repository at one moment. */
export interface RepoSnapshot {
  /** Branch name → head SHA, without test branches. */
  branches: Record<string, string>;
  /** Test branch name (`railyard-merge/…`) → SHA. */
  testBranches: Record<string, string>;
  /** PR number → head and explicit base. */
  pulls: Record<number, PullRefState>;
}

/** Read every branch and PR ref in one to three git processes (the config is re-read only when it changed). */
export async function snapshot(repoDir: string): Promise<RepoSnapshot> {
  const [refs, configured] = await Promise.all([
    git(repoDir, [
      'for-each-ref',
      '--format=%(objectname) %(objecttype) %(refname)',
      'refs/heads/',
      'refs/pull/',
    ]),
    configuredBases(repoDir),
  ]);
  const snap: RepoSnapshot = { branches: {}, testBranches: {}, pulls: {} };
  const baseBlobs = new Map<number, string>();
  for (const line of refs.stdout.split('\n')) {
    if (!line) continue;
    const [sha = '', type, ref = ''] = line.split(' ');
    if (ref.startsWith('refs/heads/')) {
      const name = ref.slice('refs/heads/'.length);
      if (name.startsWith(TEST_BRANCH_PREFIX)) snap.testBranches[name] = sha;
      else snap.branches[name] = sha;
      continue;
    }
    const m = /^refs\/pull\/(\d+)\/(head|base)$/.exec(ref);
    if (!m) continue;
    const n = Number(m[1]);
    if (m[2] === 'head' && type === 'commit') snap.pulls[n] = { head: sha, base: null };
    if (m[2] === 'base' && type === 'blob') baseBlobs.set(n, sha);
  }
  const contents = await readBlobs(repoDir, [...new Set(baseBlobs.values())]);
  for (const [n, pr] of Object.entries(snap.pulls)) {
    const blob = baseBlobs.get(Number(n));
    pr.base =
      (blob ? cleanBranchName(contents.get(blob) ?? '') : null) ?? configured.byNumber.get(Number(n)) ?? null;
  }
  return snap;
}

export type RepoChange =
  | { type: 'prOpened'; prNumber: number; head: string }
  /** New commits on the PR ref (→ PR_PUSHED_TO for a submitted PR). */
  | { type: 'prPushed'; prNumber: number; from: string; to: string }
  /** The PR ref was deleted (→ PR_CLOSED). */
  | { type: 'prClosed'; prNumber: number; lastHead: string }
  /** Explicit base changed; null = none set (the queue's branch). */
  | { type: 'prBaseChanged'; prNumber: number; from: string | null; to: string | null }
  /** A branch was created (from null), moved, or deleted (to null). Test branches are ignored. */
  | { type: 'branchMoved'; branch: string; from: string | null; to: string | null };

/**
 * What changed between two snapshots. A target branch that moved to a commit the queue did not
 * put there is a push outside the queue (→ MANUAL_PUSH_TO_TARGET_BRANCH): the caller compares
 * `to` with the SHAs it merged itself.
 */
export function diffSnapshots(prev: RepoSnapshot, next: RepoSnapshot): RepoChange[] {
  const changes: RepoChange[] = [];
  const nums = new Set([...Object.keys(prev.pulls), ...Object.keys(next.pulls)].map(Number));
  for (const n of [...nums].sort((a, b) => a - b)) {
    const a = prev.pulls[n];
    const b = next.pulls[n];
    if (!a && b) changes.push({ type: 'prOpened', prNumber: n, head: b.head });
    else if (a && !b) changes.push({ type: 'prClosed', prNumber: n, lastHead: a.head });
    else if (a && b) {
      if (a.head !== b.head) changes.push({ type: 'prPushed', prNumber: n, from: a.head, to: b.head });
      if (a.base !== b.base) changes.push({ type: 'prBaseChanged', prNumber: n, from: a.base, to: b.base });
    }
  }
  const names = new Set([...Object.keys(prev.branches), ...Object.keys(next.branches)]);
  for (const branch of [...names].sort()) {
    const from = prev.branches[branch] ?? null;
    const to = next.branches[branch] ?? null;
    if (from !== to) changes.push({ type: 'branchMoved', branch, from, to });
  }
  return changes;
}

export interface WatchOptions {
  /** Poll interval (default 1000 ms). */
  intervalMs?: number;
  signal?: AbortSignal;
  /** Called with every non-empty batch of changes, in order; the next poll waits for it. */
  onChanges: (changes: RepoChange[], snap: RepoSnapshot) => void | Promise<void>;
  /** Called when a poll fails (the watcher keeps polling). */
  onError?: (err: unknown) => void;
}

/**
 * Poll a repository until `signal` aborts. The first snapshot is the baseline (returned promise
 * resolves with it once taken); later ones are diffed against the previous one.
 */
export async function watchRepo(repoDir: string, opts: WatchOptions): Promise<RepoSnapshot> {
  const interval = opts.intervalMs ?? 1000;
  let prev = await snapshot(repoDir);
  const loop = async (): Promise<void> => {
    while (!opts.signal?.aborted) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, interval);
        opts.signal?.addEventListener(
          'abort',
          () => {
            clearTimeout(t);
            resolve();
          },
          { once: true },
        );
      });
      if (opts.signal?.aborted) return;
      try {
        const next = await snapshot(repoDir);
        const changes = diffSnapshots(prev, next);
        prev = next;
        if (changes.length > 0) await opts.onChanges(changes, next);
      } catch (err) {
        opts.onError?.(err);
      }
    }
  };
  void loop();
  return prev;
}

// ------------------------------------------------------------------ merging

/**
 * Compare-and-swap of a branch: move `branch` from `expectedOldSha` to `newSha` atomically
 * (`git update-ref refs/heads/B NEW OLD`). Returns false when the branch is no longer at
 * `expectedOldSha` (someone else moved it); nothing changes then. Throws NotFastForwardError
 * when `newSha` does not contain `expectedOldSha` (the queue only fast-forwards).
 */
export async function casUpdateBranch(
  repoDir: string,
  branch: string,
  expectedOldSha: string,
  newSha: string,
): Promise<boolean> {
  const anc = await git(repoDir, ['merge-base', '--is-ancestor', expectedOldSha, newSha], {
    okCodes: [0, 1],
  });
  if (anc.code !== 0) throw new NotFastForwardError(branch, expectedOldSha, newSha);
  const r = await git(
    repoDir,
    ['update-ref', '-m', 'railyard: merge', branchRef(branch), newSha, expectedOldSha],
    { okCodes: [0, 128, 1] },
  );
  if (r.code === 0) return true;
  const now = await headOf(repoDir, branch);
  if (now !== expectedOldSha) return false;
  // Still at the expected SHA: the failure was something else (lock, bad object): say so.
  throw new Error(`merge into ${branch} failed: ${r.stderr.trim().split('\n')[0] ?? `exit code ${r.code}`}`);
}

// ------------------------------------------------------------------ checks config

/**
 * Parse `railyard.json` at the root of `branchOrSha` (a branch name or a full commit SHA):
 * `{"checks": {"<status>": "<shell command>"}}`. Throws ChecksConfigError with reason
 * START_TEST_RUN_CONFIG_NOT_FOUND (no branch / no file), START_TEST_RUN_CONFIG_PARSING_FAILURE
 * (bad JSON or shape) or START_TEST_RUN_NO_REQUIRED_STATUSES (no checks).
 */
export async function readChecksConfig(repoDir: string, branchOrSha: string): Promise<ChecksConfig> {
  const rev = revOf(branchOrSha);
  const r = await git(repoDir, ['cat-file', 'blob', `${rev}:${CHECKS_CONFIG_FILE}`], { okCodes: [0, 128] });
  if (r.code !== 0) {
    throw new ChecksConfigError(
      'START_TEST_RUN_CONFIG_NOT_FOUND',
      `${CHECKS_CONFIG_FILE}: not found at the root of ${branchOrSha}`,
    );
  }
  return parseChecksConfig(r.stdout, branchOrSha);
}

export { CHECKS_CONFIG_FILE, parseChecksConfig, RUNNER_ENV, type ChecksConfig } from '../../checks/config.js';

// ------------------------------------------------------------------ test branches

/** `railyard-merge/pr-<n>[-<m>…]/<testRunId>` for the PRs of a run (its own and its predicted base, in queue order). */
export function testBranchName(prNumbers: readonly number[], testRunId: string): string {
  if (prNumbers.length === 0) throw new Error('testBranchName: at least one PR number is required');
  return `${TEST_BRANCH_PREFIX}pr-${prNumbers.join('-')}/${testRunId}`;
}

export interface TestBranch {
  branch: string;
  sha: string;
  prNumbers: number[];
  testRunId: string;
}

const TEST_BRANCH_RE = /^railyard-merge\/pr-(\d+(?:-\d+)*)\/([^/]+)$/;

/** Every `railyard-merge/…` branch of the repository. */
export async function listTestBranches(repoDir: string): Promise<TestBranch[]> {
  const r = await git(repoDir, [
    'for-each-ref',
    '--format=%(objectname) %(refname)',
    `refs/heads/${TEST_BRANCH_PREFIX}`,
  ]);
  const out: TestBranch[] = [];
  for (const line of r.stdout.split('\n')) {
    const [sha = '', ref = ''] = line.split(' ');
    const branch = ref.slice('refs/heads/'.length);
    const m = TEST_BRANCH_RE.exec(branch);
    if (m) out.push({ branch, sha, prNumbers: m[1]!.split('-').map(Number), testRunId: m[2]! });
  }
  return out;
}

/** Delete branches in one transaction; names that do not exist are ignored. Returns those deleted. */
export async function deleteBranches(repoDir: string, branches: readonly string[]): Promise<string[]> {
  if (branches.length === 0) return [];
  const existing = await git(repoDir, [
    'for-each-ref',
    '--format=%(refname) %(objectname)',
    ...branches.map(branchRef),
  ]);
  const wanted = new Set(branches.map(branchRef));
  // for-each-ref patterns also match refs below a name (a/b under a): keep exact names only.
  const present = existing.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split(' ') as [string, string])
    .filter(([ref]) => wanted.has(ref));
  if (present.length === 0) return [];
  // Delete each ref only if it still has the SHA we saw (never drop a concurrent update).
  await git(repoDir, ['update-ref', '--stdin'], {
    input: present.map(([ref, sha]) => `delete ${ref} ${sha}\n`).join(''),
  });
  return present.map(([ref]) => ref.slice('refs/heads/'.length));
}

/** Delete every test branch whose run is not in `keepRunIds`. Returns the deleted branch names. */
export async function pruneTestBranches(repoDir: string, keepRunIds: Iterable<string>): Promise<string[]> {
  const keep = new Set(keepRunIds);
  const doomed = (await listTestBranches(repoDir)).filter((b) => !keep.has(b.testRunId)).map((b) => b.branch);
  return deleteBranches(repoDir, doomed);
}

/** Housekeeping: forget worktrees whose directory is gone and let git pack loose objects if needed. */
export async function maintainRepo(repoDir: string): Promise<void> {
  await withRepoLock(repoDir, () => git(repoDir, ['worktree', 'prune']));
  await git(repoDir, ['gc', '--auto', '--quiet']);
}
