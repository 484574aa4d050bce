// The git side of the forge emulators (GitHub's and GitLab's): one runner per emulator that starts
// every git process, tracks it so close() can end it, and the repository-level primitives both
// emulators build on — revisions and ancestry, branch reads, commits written straight into a bare
// repository, new commits of a push, merges (merge-tree, merge-base, rebase) and log reads.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';

/** The all-zero object id git writes for "no commit" (a branch created or deleted). */
export const ZERO = '0000000000000000000000000000000000000000';

/** The committer git falls back on when a call gives none. */
export interface GitIdentity {
  name: string;
  email: string;
}

/** A commit as `git show` has it. */
export interface CommitInfo {
  sha: string;
  tree: string;
  parents: string[];
  an: string;
  ae: string;
  /** Author and committer dates, ISO 8601 with the offset. */
  ad: string;
  cn: string;
  ce: string;
  cd: string;
  message: string;
}

/** A branch that moved between two reads of a repository's branches (null: absent). */
export interface BranchChange {
  branch: string;
  before: string | null;
  after: string | null;
}

export class GitRunner {
  readonly children = new Set<ChildProcess>();
  stopped = false;

  /** `forge` names the emulator in errors after close; `identity` is the default author and committer. */
  constructor(
    private readonly forge: string,
    private readonly identity: GitIdentity,
  ) {}

  /** No user or system config, a fixed identity: the emulator's git must not depend on the machine. */
  env(): Record<string, string> {
    return {
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_TERMINAL_PROMPT: '0',
      GIT_AUTHOR_NAME: this.identity.name,
      GIT_AUTHOR_EMAIL: this.identity.email,
      GIT_COMMITTER_NAME: this.identity.name,
      GIT_COMMITTER_EMAIL: this.identity.email,
    };
  }

  /** Starts a process that stop() will end (git itself or git http-backend). */
  spawn(command: string, args: string[], opts: SpawnOptions): ChildProcess {
    const child = spawn(command, args, opts);
    this.children.add(child);
    const forget = () => this.children.delete(child);
    child.on('error', forget);
    child.on('close', forget);
    return child;
  }

  /** Runs git; resolves with stdout (trimmed of its final newline). Rejects on a non-zero exit unless `okCodes` lists it. */
  async run(
    args: string[],
    opts: { cwd?: string; env?: Record<string, string>; input?: string; okCodes?: number[] } = {},
  ): Promise<{ stdout: string; code: number }> {
    if (this.stopped) return Promise.reject(new Error(`the ${this.forge} emulator is closed`));
    return new Promise((resolve, reject) => {
      const child = this.spawn('git', args, {
        cwd: opts.cwd,
        env: { ...process.env, ...this.env(), ...opts.env },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      child.stdout!.on('data', (b: Buffer) => out.push(b));
      child.stderr!.on('data', (b: Buffer) => err.push(b));
      child.on('error', reject);
      child.on('close', (code) => {
        const stdout = Buffer.concat(out).toString('utf8').replace(/\n$/, '');
        const c = code ?? -1;
        if (c === 0 || opts.okCodes?.includes(c)) resolve({ stdout, code: c });
        else
          reject(
            new Error(`git ${args.join(' ')} failed (${c}): ${Buffer.concat(err).toString('utf8').trim()}`),
          );
      });
      child.stdin!.on('error', () => {});
      child.stdin!.end(opts.input ?? '');
    });
  }

  /** git in the bare repository `gitDir`; resolves with stdout. */
  async git(
    gitDir: string,
    args: string[],
    opts: { env?: Record<string, string>; input?: string } = {},
  ): Promise<string> {
    return (await this.run(['--git-dir', gitDir, ...args], opts)).stdout;
  }

  // --- refs ----------------------------------------------------------------------------------

  /** The commit `rev` names in the bare repository `dir`, or null. */
  async resolve(dir: string, rev: string): Promise<string | null> {
    const res = await this.run(['--git-dir', dir, 'rev-parse', '--verify', '--quiet', `${rev}^{commit}`], {
      okCodes: [1, 128],
    });
    return res.code === 0 ? res.stdout : null;
  }

  /** Whether `a` is an ancestor of `b` (false when either is unknown). */
  async isAncestor(dir: string, a: string, b: string): Promise<boolean> {
    const res = await this.run(['--git-dir', dir, 'merge-base', '--is-ancestor', a, b], {
      okCodes: [1, 128],
    });
    return res.code === 0;
  }

  /** The branches as git has them now (`branch → sha`), in git's order. */
  async heads(dir: string): Promise<Map<string, string>> {
    const out = await this.git(dir, [
      'for-each-ref',
      '--format=%(objectname) %(refname:lstrip=2)',
      'refs/heads',
    ]);
    const now = new Map<string, string>();
    for (const line of out.split('\n')) {
      if (!line) continue;
      const i = line.indexOf(' ');
      now.set(line.slice(i + 1), line.slice(0, i));
    }
    return now;
  }

  /** Sets `ref` to `sha`, only if it is still at `old` when given (ZERO: only if absent). */
  async updateRef(dir: string, ref: string, sha: string, old?: string): Promise<void> {
    await this.git(dir, ['update-ref', ref, sha, ...(old === undefined ? [] : [old])]);
  }

  /** Deletes `ref`, only if it is still at `old` when given. */
  async deleteRef(dir: string, ref: string, old?: string): Promise<void> {
    await this.git(dir, ['update-ref', '-d', ref, ...(old === undefined ? [] : [old])]);
  }

  // --- commits -------------------------------------------------------------------------------

  /** A file's content at a commit, or null when the commit has no such file. */
  async readFile(dir: string, sha: string, path: string): Promise<string | null> {
    const res = await this.run(['--git-dir', dir, 'cat-file', 'blob', `${sha}:${path}`], { okCodes: [128] });
    return res.code === 0 ? res.stdout : null;
  }

  async commitInfo(dir: string, sha: string): Promise<CommitInfo> {
    const out = await this.git(dir, [
      'show',
      '-s',
      '--format=%H%x00%T%x00%P%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B',
      sha,
    ]);
    const [h, tree, parents, an, ae, ad, cn, ce, cd, msg] = out.split('\x00');
    return {
      sha: h,
      tree,
      parents: parents ? parents.split(' ') : [],
      an,
      ae,
      ad,
      cn,
      ce,
      cd,
      message: (msg ?? '').trimEnd(),
    };
  }

  /** The commits reachable from `branch`, newest first. */
  async log(
    dir: string,
    branch: string,
  ): Promise<Array<{ sha: string; parents: string[]; message: string }>> {
    const out = await this.git(dir, ['log', '--format=%H%x00%P%x00%B%x1e', `refs/heads/${branch}`]);
    return out
      .split('\x1e')
      .map((s) => s.replace(/^\n/, ''))
      .filter((s) => s.length > 0)
      .map((s) => {
        const [sha, parents, message] = s.split('\x00');
        return { sha, parents: parents ? parents.split(' ') : [], message: message.trimEnd() };
      });
  }

  /** The commits a push of `branch` from `before` (null: a new branch) to `after` brought, oldest first. */
  async newCommits(dir: string, branch: string, before: string | null, after: string): Promise<string[]> {
    const range =
      before === null ? [after, '--not', '--branches', '--exclude', branch] : [`${before}..${after}`];
    return (await this.git(dir, ['rev-list', '--reverse', ...range])).split('\n').filter(Boolean);
  }

  /** The files a commit added, removed and modified (against its first parent; all added for a root). */
  async changedFiles(
    dir: string,
    sha: string,
  ): Promise<{ added: string[]; removed: string[]; modified: string[] }> {
    const out = await this.git(dir, ['diff-tree', '--no-commit-id', '--name-status', '-r', '--root', sha]);
    const added: string[] = [];
    const removed: string[] = [];
    const modified: string[] = [];
    for (const line of out.split('\n').filter(Boolean)) {
      const [st, path] = line.split('\t');
      (st === 'A' ? added : st === 'D' ? removed : modified).push(path);
    }
    return { added, removed, modified };
  }

  /**
   * A commit on `parent` writing `files` (null deletes a file; none: an empty commit), made with a
   * temporary index under `scratch` and the author/committer of `env`.
   */
  async commitFiles(
    dir: string,
    scratch: string,
    parent: string,
    files: Record<string, string | null>,
    message: string,
    env: Record<string, string>,
  ): Promise<string> {
    const index = join(scratch, `index-${randomUUID()}`);
    const withIndex = { GIT_INDEX_FILE: index };
    try {
      await this.git(dir, ['read-tree', parent], { env: withIndex });
      const lines: string[] = [];
      for (const [path, content] of Object.entries(files)) {
        if (content === null) lines.push(`0 ${ZERO}\t${path}`);
        else
          lines.push(
            `100644 ${await this.git(dir, ['hash-object', '-w', '--stdin'], { input: content })}\t${path}`,
          );
      }
      if (lines.length > 0)
        await this.git(dir, ['update-index', '--add', '--remove', '--index-info'], {
          env: withIndex,
          input: lines.join('\n') + '\n',
        });
      const tree = await this.git(dir, ['write-tree'], { env: withIndex });
      return await this.git(dir, ['commit-tree', tree, '-p', parent, '-m', message], { env });
    } finally {
      rmSync(index, { force: true });
    }
  }

  // --- merges --------------------------------------------------------------------------------

  /** Merges `head` into `base` without a worktree: the merged tree, or null on a conflict. */
  async mergeTree(dir: string, base: string, head: string): Promise<string | null> {
    const res = await this.run(['--git-dir', dir, 'merge-tree', '--write-tree', '--name-only', base, head], {
      okCodes: [1],
    });
    return res.code === 1 ? null : res.stdout.split('\n')[0];
  }

  /** The best common ancestor of `a` and `b`, or null when they share none (or one is unknown). */
  async mergeBase(dir: string, a: string, b: string): Promise<string | null> {
    const res = await this.run(['--git-dir', dir, 'merge-base', a, b], { okCodes: [1, 128] });
    return res.code === 0 ? res.stdout : null;
  }

  /**
   * Replays `head`'s commits onto `base` in a temporary worktree under `scratch` (committed with
   * `env`): the new tip, `head` itself when it already contains `base`, or null on a conflict.
   */
  async rebase(
    dir: string,
    scratch: string,
    base: string,
    head: string,
    env: Record<string, string>,
  ): Promise<string | null> {
    if (await this.isAncestor(dir, base, head)) return head;
    const wt = join(scratch, `wt-${randomUUID()}`);
    await this.git(dir, ['worktree', 'add', '--detach', '-q', wt, head]);
    try {
      const res = await this.run(['rebase', '-q', base], { cwd: wt, env, okCodes: [1, 128] });
      if (res.code !== 0) return null;
      return (await this.run(['rev-parse', 'HEAD'], { cwd: wt })).stdout;
    } finally {
      await this.git(dir, ['worktree', 'remove', '--force', wt]).catch(() => undefined);
      rmSync(wt, { recursive: true, force: true });
      await this.git(dir, ['worktree', 'prune']).catch(() => undefined);
    }
  }

  /** Refuses new processes, kills the running ones and resolves once they have all exited. */
  async stop(): Promise<void> {
    this.stopped = true;
    const exits = [...this.children].map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) resolve();
          else {
            c.once('exit', () => resolve());
            c.kill('SIGKILL');
          }
        }),
    );
    await Promise.all(exits);
  }
}

/** What changed from the branches last seen (`before`) to the branches now: moved, new and deleted ones. */
export function branchChanges(before: Map<string, string>, now: Map<string, string>): BranchChange[] {
  const changes: BranchChange[] = [];
  for (const [branch, sha] of now)
    if (before.get(branch) !== sha) changes.push({ branch, before: before.get(branch) ?? null, after: sha });
  for (const [branch, sha] of before)
    if (!now.has(branch)) changes.push({ branch, before: sha, after: null });
  return changes;
}
