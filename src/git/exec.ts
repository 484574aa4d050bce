/** Running git for the git forge: the queue's commit identity, a plain environment, errors in one line. */
import { spawn } from 'node:child_process';

/** Identity of every commit the queue makes (merge commits, squash/rebase committer). */
export const RAILYARD_IDENTITY = { name: 'Railyard', email: 'railyard@localhost' } as const;

/** A git command that failed: the message names the command and git's own first error line. */
export class GitError extends Error {
  constructor(
    readonly args: readonly string[],
    readonly code: number | null,
    readonly stderr: string,
  ) {
    const lines = stderr.split('\n').map((l) => l.trim()).filter(Boolean);
    // Progress lines ("Preparing worktree …") come first; the reason is the fatal/error line.
    const detail = lines.find((l) => /^(fatal|error):/.test(l)) ?? lines[0] ?? `exit code ${code}`;
    super(`git ${args.filter((a) => !a.startsWith('--git-dir=')).slice(0, 3).join(' ')} failed: ${detail}`);
    this.name = 'GitError';
  }
}

/** git could not be started at all (e.g. EMFILE: the server is out of file descriptors). */
export class GitStartError extends Error {
  readonly code: string | undefined;
  constructor(args: readonly string[], cause: unknown) {
    const code = (cause as NodeJS.ErrnoException | undefined)?.code;
    const why = code === 'EMFILE' || code === 'ENFILE' ? 'too many open files' : cause instanceof Error ? cause.message : String(cause);
    super(`git ${args.filter((a) => !a.startsWith('--git-dir=')).slice(0, 3).join(' ')} could not start: ${why}${code ? ` (${code})` : ''}`);
    this.name = 'GitStartError';
    this.code = code;
  }
}

export interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface GitOptions {
  /** Written to git's stdin. */
  input?: string;
  /** Extra environment (e.g. GIT_AUTHOR_*); merged over the sanitised base environment. */
  env?: Record<string, string>;
  /** Exit codes that are answers, not failures (default: only 0). */
  okCodes?: readonly number[];
  /** Working directory (default: the process cwd; commands address the repository by --git-dir). */
  cwd?: string;
}

/** Variables that would point git at another repository or index if inherited (e.g. from a hook). */
const LEAKY = ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_OBJECT_DIRECTORY', 'GIT_ALTERNATE_OBJECT_DIRECTORIES', 'GIT_NAMESPACE', 'GIT_PREFIX', 'GIT_COMMON_DIR'];

/** The process environment without variables that would redirect git to another repo/index. */
export function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of LEAKY) delete env[k];
  return env;
}

/** Environment for every git child: no prompts, stable messages, the queue's committer identity. */
export function gitEnv(extra?: Record<string, string>): NodeJS.ProcessEnv {
  return {
    ...cleanEnv(),
    GIT_TERMINAL_PROMPT: '0',
    LC_ALL: 'C',
    GIT_COMMITTER_NAME: RAILYARD_IDENTITY.name,
    GIT_COMMITTER_EMAIL: RAILYARD_IDENTITY.email,
    GIT_AUTHOR_NAME: RAILYARD_IDENTITY.name,
    GIT_AUTHOR_EMAIL: RAILYARD_IDENTITY.email,
    ...extra,
  };
}

// ------------------------------------------------------------ concurrency

let limit = 8;
let running = 0;
const waiting: Array<() => void> = [];

/** Maximum number of git processes Railyard runs at once (default 8). */
export function setGitConcurrency(n: number): void {
  if (!Number.isInteger(n) || n < 1) throw new Error(`git concurrency: must be a positive integer, got ${n}`);
  limit = n;
  while (running < limit && waiting.length > 0) {
    running++;
    waiting.shift()!();
  }
}

async function acquire(): Promise<void> {
  if (running < limit) {
    running++;
    return;
  }
  await new Promise<void>((resolve) => waiting.push(resolve));
}

function release(): void {
  const next = waiting.shift();
  if (next) next();
  else running--;
}

/**
 * Run `git --git-dir=<repoDir> <args…>` (argument array, never a shell) and collect its output.
 * Rejects with GitError when the exit code is not in `okCodes`.
 */
export async function git(repoDir: string, args: readonly string[], opts: GitOptions = {}): Promise<GitResult> {
  const full = [`--git-dir=${repoDir}`, ...args];
  await acquire();
  try {
    return await new Promise<GitResult>((resolve, reject) => {
      let child: ReturnType<typeof spawn>;
      try {
        child = spawn('git', full, {
          cwd: opts.cwd,
          env: gitEnv(opts.env),
          stdio: ['pipe', 'pipe', 'pipe'],
        });
      } catch (error) {
        return reject(new GitStartError(args, error));
      }
      // Out of descriptors (EMFILE) or processes, git never starts: the child has no pipes and
      // reports 'error' only. That fails this command, never the process.
      child.on('error', (error) => reject(new GitStartError(args, error)));
      if (!child.stdout || !child.stderr || !child.stdin) return;
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      child.stdout.on('data', (b: Buffer) => out.push(b));
      child.stderr.on('data', (b: Buffer) => err.push(b));
      child.stdin.on('error', () => {
        /* git may exit before reading stdin; the exit code tells the story */
      });
      child.on('close', (code) => {
        const res = { code: code ?? -1, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') };
        if ((opts.okCodes ?? [0]).includes(res.code)) resolve(res);
        else reject(new GitError(args, code, res.stderr));
      });
      child.stdin.end(opts.input ?? '');
    });
  } finally {
    release();
  }
}

/**
 * `git worktree add/remove/prune` in one repository are serialised: concurrent ones race on
 * `$GIT_DIR/worktrees/` (git reads another worktree's half-written `commondir` and fails).
 */
const repoLocks = new Map<string, Promise<unknown>>();
export function withRepoLock<T>(repoDir: string, fn: () => Promise<T>): Promise<T> {
  const prev = repoLocks.get(repoDir) ?? Promise.resolve();
  const next = prev.then(fn, fn);
  const tail = next.catch(() => undefined);
  repoLocks.set(repoDir, tail);
  void tail.then(() => {
    if (repoLocks.get(repoDir) === tail) repoLocks.delete(repoDir);
  });
  return next;
}
