// A new bare repository for the forge emulators: `git init --bare` with the config a forge's
// repositories have (refs it keeps to itself hidden from pushes or fetches, pushes over HTTP
// allowed, no automatic gc), and its first commit written in one git process (fast-import).
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { appendFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/** git with no user or system config: the emulator's repositories must not depend on the machine. */
const ENV = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };

export interface BareRepoOptions {
  /** Ref prefixes a push may not touch nor see (`receive.hideRefs`). */
  hideFromPush?: string[];
  /** Ref prefixes a fetch may not see (`uploadpack.hideRefs`). */
  hideFromFetch?: string[];
}

/** `git init --bare -b <branch> <dir>` (parents made) with the forge's hidden refs. */
export function initBareRepo(dir: string, defaultBranch: string, o: BareRepoOptions = {}): void {
  mkdirSync(dir, { recursive: true });
  execFileSync('git', ['init', '-q', '--bare', '-b', defaultBranch, dir], { env: ENV });
  const section = (name: string, refs: string[] | undefined) =>
    refs?.length ? `[${name}]\n${refs.map((r) => `\thideRefs = ${r}\n`).join('')}` : '';
  appendFileSync(
    join(dir, 'config'),
    section('receive', o.hideFromPush) +
      section('uploadpack', o.hideFromFetch) +
      '[http]\n\treceivepack = true\n[gc]\n\tauto = 0\n',
  );
}

/** Copies the branches of `from` into the bare repository `dir` (a fork's start). */
export function fetchBranches(dir: string, from: string): void {
  execFileSync('git', ['--git-dir', dir, 'fetch', '-q', from, '+refs/heads/*:refs/heads/*'], { env: ENV });
}

/**
 * The first commit on `branch` (`files` at the root, message "Initial commit") by `author` and
 * `committer` (`Name <email>`), in one git process; temporary files go under `scratch`. Returns its sha.
 */
export function initialCommit(
  dir: string,
  scratch: string,
  branch: string,
  files: Record<string, string>,
  who: { author: string; committer: string },
): string {
  const data = (text: string) => `data ${Buffer.byteLength(text)}\n${text}\n`;
  const when = `${Math.floor(Date.now() / 1000)} +0000`;
  const stream =
    `commit refs/heads/${branch}\nmark :1\n` +
    `author ${who.author} ${when}\ncommitter ${who.committer} ${when}\n` +
    data('Initial commit') +
    Object.entries(files)
      .map(
        ([path, content]) =>
          `M 100644 inline ${/[\s"\\]/.test(path) ? JSON.stringify(path) : path}\n${data(content)}`,
      )
      .join('') +
    '\n';
  const marks = join(scratch, `marks-${randomUUID()}`);
  execFileSync('git', ['--git-dir', dir, 'fast-import', '--quiet', `--export-marks=${marks}`], {
    env: ENV,
    input: stream,
  });
  const sha = readFileSync(marks, 'utf8').trim().split(' ')[1];
  rmSync(marks, { force: true });
  return sha;
}
