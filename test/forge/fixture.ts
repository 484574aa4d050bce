/**
 * Real bare git repositories for tests, built with plumbing only (no worktree):
 *
 *   const repo = await createRepo({ files: { 'a.txt': 'a\n' }, checks: { test: 'true' } });
 *   await repo.openPr(1, { 'a.txt': 'A\n' }, { title: 'Capitalise a', author: 'Ada' });
 *   repo.dir  // the bare repo (pass it to src/forge/git)
 *   await repo.cleanup();
 *
 * Every commit gets a fixed, increasing date so histories are deterministic.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** Path → new content; null deletes the file. */
export type FileEdits = Record<string, string | null>;

export interface Person {
  name: string;
  email?: string;
}

export interface CommitSpec {
  files: FileEdits;
  message: string;
  author?: Person | string;
}

export interface LogEntry {
  sha: string;
  parents: string[];
  subject: string;
  body: string;
  authorName: string;
  authorEmail: string;
  committerName: string;
}

export interface FixtureRepo {
  /** The bare repository. */
  dir: string;
  /** The temp directory holding it (gitRoot-style: `<root>/<host>/<owner>/<name>.git` when asked). */
  root: string;
  git(args: string[], input?: string): string;
  /** Create a commit on `parent` (null = root commit) without moving any ref. */
  commit(parent: string | null, spec: CommitSpec): string;
  /** Commit on top of a branch and move it (a missing branch starts at the default branch's head). */
  commitOn(branch: string, files: FileEdits, message?: string, author?: Person | string): string;
  headOf(ref: string): string | null;
  /**
   * Open PR n: commits on top of `base` (default: the current head of the default branch), ref
   * `refs/pull/n/head`. `edits` is one commit's files, or a list of commits.
   */
  openPr(n: number, edits: FileEdits | CommitSpec[], opts?: { title?: string; author?: Person | string; from?: string }): string;
  /** Add a commit to PR n (a push to the PR branch). */
  pushPr(n: number, files: FileEdits, message?: string, author?: Person | string): string;
  /** Delete `refs/pull/n/head` (closing the PR). */
  closePr(n: number): void;
  /** Set PR n's base branch via the `refs/pull/n/base` blob. */
  setPrBase(n: number, branch: string): void;
  /** Content of `file` at `rev`, or null when absent. */
  read(rev: string, file: string): string | null;
  /** First-parent log (newest first) of `rev`, or full log with `all`. */
  log(rev: string, opts?: { all?: boolean; limit?: number }): LogEntry[];
  /** Paths in the tree of `rev`. */
  files(rev: string): string[];
  cleanup(): Promise<void>;
}

export interface CreateRepoOptions {
  branch?: string;
  /** Files of the initial commit (besides railyard.json). */
  files?: FileEdits;
  /** Checks written to railyard.json; null = no railyard.json. Default `{ test: 'true' }`. */
  checks?: Record<string, string> | null;
  /** Place the repo at `<root>/<host>/<owner>/<name>.git` (as `serve --git-root` expects). */
  location?: { host: string; owner: string; name: string };
  /** Use this directory as root instead of a fresh temp dir (the fixture never deletes it then). */
  root?: string;
}

const BASE_TIME = 1_700_000_000;

/** A path as `git fast-import` reads it: as is, or C-quoted when it would be misread. */
function fastImportPath(file: string): string {
  if (!/^"|[\n\\"]/.test(file)) return file;
  return `"${file.replace(/[\\"]/g, (c) => `\\${c}`).replace(/\n/g, '\\n')}"`;
}

function ident(p: Person | string | undefined): Person & { email: string } {
  if (p === undefined) return { name: 'Test Author', email: 'author@example.com' };
  const person = typeof p === 'string' ? { name: p } : p;
  return { name: person.name, email: person.email ?? `${person.name.toLowerCase().replace(/[^a-z0-9]+/g, '.')}@example.com` };
}

export async function createRepo(opts: CreateRepoOptions = {}): Promise<FixtureRepo> {
  const ownRoot = opts.root === undefined;
  const root = opts.root ?? mkdtempSync(path.join(os.tmpdir(), 'railyard-fx-'));
  const dir = opts.location ? path.join(root, opts.location.host, opts.location.owner, `${opts.location.name}.git`) : path.join(root, 'repo.git');
  await mkdir(dir, { recursive: true });
  const mainBranch = opts.branch ?? 'main';
  let clock = 0;

  const baseEnv: NodeJS.ProcessEnv = { ...process.env, GIT_TERMINAL_PROMPT: '0', LC_ALL: 'C' };
  for (const k of ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE']) delete baseEnv[k];

  const run = (args: string[], input?: string, env: NodeJS.ProcessEnv = {}): string =>
    execFileSync('git', [`--git-dir=${dir}`, ...args], { input: input ?? '', env: { ...baseEnv, ...env }, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });

  execFileSync('git', ['init', '--bare', '--quiet', `--initial-branch=${mainBranch}`, dir], { env: baseEnv });

  const headOf = (ref: string): string | null => {
    try {
      return run(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]).trim();
    } catch {
      return null;
    }
  };
  const resolveRef = (name: string): string => (name.startsWith('refs/') || /^[0-9a-f]{40}$/.test(name) ? name : `refs/heads/${name}`);

  /**
   * Commits `specs` one on another, starting on `parent` (null = a root commit), in ONE
   * `git fast-import` (the commits, their trees and blobs, and the ref), and returns their shas.
   * The ref ends at the last commit; without one, a scratch ref is used and deleted in the same
   * run. The same objects as read-tree, hash-object, update-index, write-tree and commit-tree
   * would write (same shas), for one process instead of 5 + one per file.
   */
  const commits = (parent: string | null, specs: CommitSpec[], ref?: string): string[] => {
    const target = ref ?? `refs/fixture-scratch/${process.pid}`;
    const data = (text: string) => `data ${Buffer.byteLength(text)}\n${text}\n`;
    const stream: string[] = [];
    specs.forEach((spec, i) => {
      const who = ident(spec.author);
      const signature = `${who.name} <${who.email}> ${BASE_TIME + ++clock * 60} +0000`;
      stream.push(`commit ${target}\nmark :${i + 1}\nauthor ${signature}\ncommitter ${signature}\n`, data(spec.message + '\n'));
      const from = i > 0 ? `:${i}` : parent;
      if (from) stream.push(`from ${from}\n`);
      for (const [file, content] of Object.entries(spec.files)) {
        stream.push(content === null ? `D ${fastImportPath(file)}\n` : `M 100644 inline ${fastImportPath(file)}\n${data(content)}`);
      }
      stream.push('\n');
    });
    for (let i = 1; i <= specs.length; i++) stream.push(`get-mark :${i}\n`);
    if (!ref) stream.push(`reset ${target}\n\n`); // a reset without `from` deletes the ref
    return run(['fast-import', '--quiet', '--force'], stream.join('')).trim().split('\n');
  };

  const commit = (parent: string | null, spec: CommitSpec): string => commits(parent, [spec])[0];

  const commitOn = (branch: string, files: FileEdits, message = `edit ${Object.keys(files).join(', ')}`, author?: Person | string): string => {
    const ref = resolveRef(branch);
    // A new branch starts at the default branch's head (or is a root commit in an empty repo).
    const parent = headOf(ref) ?? headOf(`refs/heads/${mainBranch}`);
    return commits(parent, [{ files, message, author }], ref)[0];
  };

  const initial: FileEdits = { ...(opts.files ?? { 'README.md': '# fixture\n' }) };
  const checks = opts.checks === undefined ? { test: 'true' } : opts.checks;
  if (checks !== null) initial['railyard.json'] = JSON.stringify({ checks }, null, 2) + '\n';
  commitOn(mainBranch, initial, 'Initial commit', { name: 'Founder' });

  const repo: FixtureRepo = {
    dir,
    root,
    git: (args, input) => run(args, input),
    commit,
    commitOn,
    headOf: (ref) => headOf(resolveRef(ref)),
    openPr(n, edits, o = {}) {
      const from = o.from ? (headOf(resolveRef(o.from)) ?? o.from) : headOf(`refs/heads/${mainBranch}`);
      const specs: CommitSpec[] = Array.isArray(edits)
        ? edits
        : [{ files: edits, message: o.title ?? `PR ${n}`, author: o.author }];
      const last = specs.length - 1;
      const shas = commits(
        from,
        specs.map((s, i) => ({ ...s, message: i === last && o.title ? o.title : s.message, author: s.author ?? o.author })),
        `refs/pull/${n}/head`,
      );
      return shas[last];
    },
    pushPr(n, files, message = `update PR ${n}`, author) {
      return commitOn(`refs/pull/${n}/head`, files, message, author);
    },
    closePr(n) {
      run(['update-ref', '-d', `refs/pull/${n}/head`]);
    },
    setPrBase(n, branch) {
      const blob = run(['hash-object', '-w', '--stdin'], branch + '\n').trim();
      run(['update-ref', `refs/pull/${n}/base`, blob]);
    },
    read(rev, file) {
      try {
        return run(['cat-file', 'blob', `${rev}:${file}`]);
      } catch {
        return null;
      }
    },
    log(rev, o = {}) {
      const args = ['log', '-z', '--format=%H%x1f%P%x1f%s%x1f%b%x1f%an%x1f%ae%x1f%cn'];
      if (!o.all) args.push('--first-parent');
      if (o.limit) args.push(`-n${o.limit}`);
      args.push(rev);
      return run(args)
        .split('\0')
        .filter((r) => r.trim())
        .map((r) => {
          const [sha = '', parents = '', subject = '', body = '', authorName = '', authorEmail = '', committerName = ''] = r.split('\x1f');
          return { sha: sha.trim(), parents: parents.split(' ').filter(Boolean), subject, body: body.trim(), authorName, authorEmail, committerName };
        });
    },
    files(rev) {
      return run(['ls-tree', '-r', '--name-only', rev]).split('\n').filter(Boolean);
    },
    async cleanup() {
      if (ownRoot) rmSync(root, { recursive: true, force: true });
    },
  };
  return repo;
}
