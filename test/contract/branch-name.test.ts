import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { branchNameProblem, MAX_BRANCH_NAME_BYTES } from '../../src/contract/index.js';

/** What `git check-ref-format --branch` says of `name` (the reference the rules follow). */
function gitAccepts(name: string): boolean {
  try {
    execFileSync('git', ['check-ref-format', '--branch', name], { stdio: 'ignore', cwd: '/' });
    return true;
  } catch {
    return false;
  }
}

const VALID = [
  'main',
  'release/1.x',
  'feature/a-b_c',
  'v1.2.3',
  'a/b/c',
  'é-branch',
  'x@y',
  'a.b',
  'some.lockx',
  'HEADS',
  '@x',
  'a-',
];
const INVALID: [string, RegExp][] = [
  ['main~1', /"~"/],
  ['main^', /"\^"/],
  ['a:b', /":"/],
  ['a?b', /"\?"/],
  ['a*b', /"\*"/],
  ['a[b', /"\["/],
  ['a\\b', /"\\"/],
  ['a b', /spaces/],
  ['a\tb', /control characters/],
  ['a\u007fb', /control characters/],
  ['a..b', /"\.\."/],
  ['x@{1}', /"@\{"/],
  ['HEAD', /"HEAD"/],
  ['-rf', /start with "-"/],
  ['/main', /start with "\/"/],
  ['a//b', /"\/\/"/],
  ['main/', /end with "\/"/],
  ['main.', /end with "\."/],
  ['.hidden', /starting with "\."/],
  ['a/.b', /starting with "\."/],
  ['main.lock', /ending in "\.lock"/],
  ['a.lock/b', /ending in "\.lock"/],
];

describe('branch names', () => {
  it('accepts ordinary names, as git does', () => {
    for (const name of VALID) {
      expect(branchNameProblem(name), name).toBeNull();
      expect(gitAccepts(name), name).toBe(true);
    }
  });

  it('refuses what git check-ref-format --branch refuses, naming the rule', () => {
    for (const [name, rule] of INVALID) {
      expect(branchNameProblem(name), name).toMatch(rule);
      expect(gitAccepts(name), name).toBe(false);
    }
  });

  it('also refuses refs/ names (git would take them), "@" (git reads it as HEAD) and names over 255 bytes', () => {
    expect(branchNameProblem('@')).toMatch(/"@"/);
    for (const name of ['refs/tags/v1', 'refs/pull/8/head', 'refs/heads/main']) {
      expect(branchNameProblem(name), name).toMatch(/not a ref: drop the "refs\/\.\.\." prefix/);
    }
    expect(branchNameProblem('a'.repeat(MAX_BRANCH_NAME_BYTES))).toBeNull();
    expect(branchNameProblem('a'.repeat(MAX_BRANCH_NAME_BYTES + 1))).toMatch(/at most 255 bytes/);
    // 128 two-byte characters: 128 characters but 256 bytes.
    expect(branchNameProblem('é'.repeat(128))).toMatch(/at most 255 bytes/);
  });

  it('agrees with git on random names made of the characters the rules are about', () => {
    const alphabet = ['a', 'b', '.', '/', '@', '{', '-', '~', ' ', 'lock', 'k', '*'];
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let n = 0; n < 300; n++) {
      let name = '';
      const length = 1 + Math.floor(random() * 6);
      for (let i = 0; i < length; i++) name += alphabet[Math.floor(random() * alphabet.length)];
      // git takes refs/... and reads @ as HEAD; our rules refuse both: compare the rest.
      if (name.startsWith('refs/') || name === '@') continue;
      expect(branchNameProblem(name) === null, JSON.stringify(name)).toBe(gitAccepts(name));
    }
  });

  it('refuses a megabyte of spaces by its length, before looking at the characters', () => {
    expect(branchNameProblem(' '.repeat(1_000_000))).toMatch(/at most 255 bytes/);
  });
});
