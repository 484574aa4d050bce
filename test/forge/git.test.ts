import { afterEach, describe, expect, it } from 'vitest';
import {
  ChecksConfigError,
  GitForge,
  MergeConflictError,
  NotFastForwardError,
  buildTestCommit,
  casUpdateBranch,
  diffSnapshots,
  getPullRequest,
  headOf,
  listTestBranches,
  pruneTestBranches,
  readChecksConfig,
  repoDirFor,
  snapshot,
  testBranchName,
  type TestUnit,
  type RepoChange,
  watchRepo,
} from '../../src/forge/git/index.js';
import { createRepo, type FixtureRepo } from './fixture.js';

const repos: FixtureRepo[] = [];
async function repo(...args: Parameters<typeof createRepo>): Promise<FixtureRepo> {
  const r = await createRepo(...args);
  repos.push(r);
  return r;
}
afterEach(async () => {
  await Promise.all(repos.splice(0).map((r) => r.cleanup()));
});

async function unit(r: FixtureRepo, n: number): Promise<TestUnit> {
  const pr = await getPullRequest(r.dir, n, 'main');
  if (!pr) throw new Error(`PR ${n} missing`);
  return { prNumber: n, headSha: pr.headSha, title: pr.title, author: pr.author };
}

describe('getPullRequest', () => {
  it('reads head, title, author, base and mergeability from the refs', async () => {
    const r = await repo({ files: { 'a.txt': 'a\n', 'b.txt': 'b\n' } });
    const head = r.openPr(7, [
      { files: { 'a.txt': 'a1\n' }, message: 'first step', author: 'Someone Else' },
      { files: { 'a.txt': 'a2\n' }, message: 'Make a better\n\nLong body.', author: { name: 'Grace Hopper', email: 'grace@navy.mil' } },
    ]);
    const pr = await getPullRequest(r.dir, 7, 'main');
    expect(pr).toEqual({
      headSha: head,
      headBranch: 'pull/7',
      title: 'Make a better',
      author: 'Grace Hopper',
      baseBranch: 'main',
      mergeability: 'mergeable',
      open: true,
    });
  });

  it('returns null for a PR without a head ref, and after the ref is deleted', async () => {
    const r = await repo();
    expect(await getPullRequest(r.dir, 1, 'main')).toBeNull();
    r.openPr(1, { 'x.txt': 'x\n' });
    expect(await getPullRequest(r.dir, 1, 'main')).not.toBeNull();
    r.closePr(1);
    expect(await getPullRequest(r.dir, 1, 'main')).toBeNull();
  });

  it('takes the base branch from refs/pull/N/base, else git config railyard.pr-N.base, else the queue branch', async () => {
    const r = await repo();
    r.commitOn('develop', { 'd.txt': 'd\n' });
    r.openPr(1, { 'x.txt': 'x\n' });
    r.openPr(2, { 'y.txt': 'y\n' });
    r.setPrBase(1, 'develop');
    r.git(['config', 'railyard.pr-2.base', 'release']);
    expect((await getPullRequest(r.dir, 1, 'main'))?.baseBranch).toBe('develop');
    const pr2 = await getPullRequest(r.dir, 2, 'main');
    expect(pr2?.baseBranch).toBe('release');
    expect(pr2?.mergeability).toBe('unspecified'); // no such branch to merge into
    r.git(['config', '--unset', 'railyard.pr-2.base']);
    expect((await getPullRequest(r.dir, 2, 'main'))?.baseBranch).toBe('main');
  });

  it("merges onto the queue's branch as it is now, and reports unspecified when that branch does not exist", async () => {
    const r = await repo({ files: { 'a.txt': 'line\n' } });
    r.openPr(1, { 'a.txt': 'pr version\n' });
    r.commitOn('release/1.x', { 'a.txt': 'release version\n' }); // under refs/heads/release/, not the branch release
    expect(await getPullRequest(r.dir, 1, 'release')).toMatchObject({ baseBranch: 'release', mergeability: 'unspecified' });
    r.commitOn('stable', { 'b.txt': 'b\n' });
    expect(await getPullRequest(r.dir, 1, 'stable')).toMatchObject({ baseBranch: 'stable', mergeability: 'mergeable' });
    r.commitOn('stable', { 'a.txt': 'stable version\n' });
    expect(await getPullRequest(r.dir, 1, 'stable')).toMatchObject({ baseBranch: 'stable', mergeability: 'not_mergeable' });
  });

  it('reports not_mergeable when the PR conflicts with the current target head', async () => {
    const r = await repo({ files: { 'a.txt': 'line\n' } });
    r.openPr(1, { 'a.txt': 'pr version\n' });
    expect((await getPullRequest(r.dir, 1, 'main'))?.mergeability).toBe('mergeable');
    r.commitOn('main', { 'a.txt': 'main version\n' });
    expect((await getPullRequest(r.dir, 1, 'main'))?.mergeability).toBe('not_mergeable');
    // An unrelated change on main keeps other PRs mergeable.
    r.openPr(2, { 'other.txt': 'o\n' });
    expect((await getPullRequest(r.dir, 2, 'main'))?.mergeability).toBe('mergeable');
  });
});

describe('buildTestCommit', () => {
  async function threePrs() {
    const r = await repo({ files: { 'a.txt': '1\n2\n3\n', 'b.txt': 'b\n' } });
    r.openPr(1, [
      { files: { 'a.txt': '1 one\n2\n3\n' }, message: 'a: first line', author: 'Ann' },
      { files: { 'new.txt': 'new\n' }, message: 'Add new file', author: 'Ann' },
    ]);
    r.openPr(2, { 'a.txt': '1\n2\n3 three\n' }, { title: 'Edit third line', author: 'Bob' });
    r.openPr(3, { 'b.txt': null, 'c/d.txt': 'deep\n' }, { title: 'Move b to c/d', author: { name: 'Cy', email: 'cy@x.org' } });
    // main moves on after the PRs were opened: the test commit must build on the new head.
    r.commitOn('main', { 'm.txt': 'main moved\n' }, 'Unrelated main change', 'Founder');
    return r;
  }

  const expectedTree = { 'a.txt': '1 one\n2\n3 three\n', 'new.txt': 'new\n', 'c/d.txt': 'deep\n', 'm.txt': 'main moved\n' };

  function expectTree(r: FixtureRepo, sha: string) {
    for (const [f, c] of Object.entries(expectedTree)) expect(r.read(sha, f)).toBe(c);
    expect(r.read(sha, 'b.txt')).toBeNull();
    expect(r.files(sha).sort()).toEqual(['a.txt', 'c/d.txt', 'm.txt', 'new.txt', 'railyard.json'].sort());
  }

  it('merge_commit: a merge commit per PR on the predicted base, stacked in queue order', async () => {
    const r = await threePrs();
    const base = r.headOf('main')!;
    const units = [await unit(r, 1), await unit(r, 2), await unit(r, 3)];
    const branch = testBranchName([1, 2, 3], 'run-1');
    const built = await buildTestCommit({ repoDir: r.dir, targetBranch: 'main', baseSha: base, units, mergeMethod: 'merge_commit', branchName: branch });
    expect(branch).toBe('railyard-merge/pr-1-2-3/run-1');
    expect(r.headOf(branch)).toBe(built.sha);
    expectTree(r, built.sha);
    const log = r.log(built.sha, { limit: 4 });
    expect(log.map((c) => c.subject)).toEqual([
      'Merge pull request #3: Move b to c/d',
      'Merge pull request #2: Edit third line',
      'Merge pull request #1: Add new file',
      'Unrelated main change',
    ]);
    expect(log[3]!.sha).toBe(base);
    // second parent of each merge is the tested PR head
    expect(log.slice(0, 3).map((c) => c.parents[1])).toEqual([units[2]!.headSha, units[1]!.headSha, units[0]!.headSha]);
    expect(log.slice(0, 3).map((c) => [c.authorName, c.committerName])).toEqual(Array(3).fill(['Railyard', 'Railyard']));
    expect(built.steps.map((s) => s.prNumber)).toEqual([1, 2, 3]);
    expect(built.steps.map((s) => s.sha)).toEqual([log[2]!.sha, log[1]!.sha, log[0]!.sha]);
    // main itself is untouched until the CAS
    expect(r.headOf('main')).toBe(base);
  });

  it('squash: one commit per PR with its combined diff, titled "<title> (#N)", authored by the PR author', async () => {
    const r = await threePrs();
    const base = r.headOf('main')!;
    const built = await buildTestCommit({
      repoDir: r.dir, targetBranch: 'main', baseSha: base, mergeMethod: 'squash', branchName: testBranchName([1, 2, 3], 'run-2'),
      units: [await unit(r, 1), await unit(r, 2), await unit(r, 3)],
    });
    expectTree(r, built.sha);
    const log = r.log(built.sha, { all: true, limit: 4 });
    expect(log.map((c) => [c.subject, c.authorName, c.committerName, c.parents.length])).toEqual([
      ['Move b to c/d (#3)', 'Cy', 'Railyard', 1],
      ['Edit third line (#2)', 'Bob', 'Railyard', 1],
      ['Add new file (#1)', 'Ann', 'Railyard', 1],
      ['Unrelated main change', 'Founder', 'Founder', 1],
    ]);
    expect(log[0]!.authorEmail).toBe('cy@x.org');
    // PR 1's squash holds both of its commits
    expect(r.read(log[2]!.sha, 'a.txt')).toBe('1 one\n2\n3\n');
    expect(r.read(log[2]!.sha, 'new.txt')).toBe('new\n');
  });

  it('rebase: every PR commit replayed in order with its author and message', async () => {
    const r = await threePrs();
    const base = r.headOf('main')!;
    const built = await buildTestCommit({
      repoDir: r.dir, targetBranch: 'main', baseSha: base, mergeMethod: 'rebase', branchName: testBranchName([1, 2, 3], 'run-3'),
      units: [await unit(r, 1), await unit(r, 2), await unit(r, 3)],
    });
    expectTree(r, built.sha);
    const log = r.log(built.sha, { all: true, limit: 5 });
    expect(log.map((c) => [c.subject, c.authorName, c.committerName, c.parents.length])).toEqual([
      ['Move b to c/d', 'Cy', 'Railyard', 1],
      ['Edit third line', 'Bob', 'Railyard', 1],
      ['Add new file', 'Ann', 'Railyard', 1],
      ['a: first line', 'Ann', 'Railyard', 1],
      ['Unrelated main change', 'Founder', 'Founder', 1],
    ]);
    expect(log[4]!.sha).toBe(base);
    // intermediate states are the PR's own commits replayed: after 'a: first line' no new.txt yet
    expect(r.read(log[3]!.sha, 'new.txt')).toBeNull();
    expect(r.read(log[3]!.sha, 'm.txt')).toBe('main moved\n');
    expect(built.steps.map((s) => s.sha)).toEqual([log[2]!.sha, log[1]!.sha, log[0]!.sha]);
  });

  it('rebase drops commits a stacked PR shares with the PR ahead of it', async () => {
    const r = await repo({ files: { 'a.txt': 'a\n' } });
    const h1 = r.openPr(1, { 'a.txt': 'A\n' }, { title: 'Upper a' });
    r.openPr(2, { 'b.txt': 'b\n' }, { title: 'Add b', from: h1 }); // PR 2 is stacked on PR 1
    r.commitOn('main', { 'z.txt': 'z\n' });
    const built = await buildTestCommit({
      repoDir: r.dir, targetBranch: 'main', baseSha: r.headOf('main')!, mergeMethod: 'rebase', branchName: 'railyard-merge/pr-1-2/x',
      units: [await unit(r, 1), await unit(r, 2)],
    });
    expect(r.log(built.sha, { limit: 3 }).map((c) => c.subject)).toEqual(['Add b', 'Upper a', 'edit z.txt']);
    expect(r.read(built.sha, 'a.txt')).toBe('A\n');
  });

  for (const mergeMethod of ['merge_commit', 'squash', 'rebase'] as const) {
    it(`${mergeMethod}: a conflict names the PR that does not apply on the predicted base`, async () => {
      const r = await repo({ files: { 'a.txt': 'a\n', 'b.txt': 'b\n' } });
      r.openPr(1, { 'b.txt': 'b from 1\n' }, { title: 'one' });
      r.openPr(2, { 'a.txt': 'a from 2\n' }, { title: 'two' });
      r.openPr(3, { 'a.txt': 'a from 3\n' }, { title: 'three' }); // conflicts only with PR 2
      // Each PR alone merges cleanly onto main:
      for (const n of [1, 2, 3]) expect((await getPullRequest(r.dir, n, 'main'))?.mergeability).toBe('mergeable');
      const branch = `railyard-merge/pr-1-2-3/${mergeMethod}`;
      const err = await buildTestCommit({
        repoDir: r.dir, targetBranch: 'main', baseSha: r.headOf('main')!, mergeMethod, branchName: branch,
        units: [await unit(r, 1), await unit(r, 2), await unit(r, 3)],
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MergeConflictError);
      expect((err as MergeConflictError).prNumber).toBe(3);
      expect((err as MergeConflictError).files).toEqual(['a.txt']);
      expect((err as MergeConflictError).reason).toBe('START_TEST_RUN_MERGE_CONFLICT');
      expect((err as Error).message).toMatch(/PR #3 conflicts with main and the PRs ahead of it in a\.txt/);
      expect(r.headOf(branch)).toBeNull(); // no branch for a commit that could not be built
    });
  }
});

describe('casUpdateBranch', () => {
  it('fast-forwards the target to the tested commit, then refuses once someone else moved it', async () => {
    const r = await repo();
    r.openPr(1, { 'x.txt': 'x\n' }, { title: 'x' });
    r.openPr(2, { 'y.txt': 'y\n' }, { title: 'y' });
    const base = r.headOf('main')!;
    const b1 = await buildTestCommit({ repoDir: r.dir, targetBranch: 'main', baseSha: base, mergeMethod: 'merge_commit', branchName: 'railyard-merge/pr-1/a', units: [await unit(r, 1)] });
    const b2 = await buildTestCommit({ repoDir: r.dir, targetBranch: 'main', baseSha: b1.sha, mergeMethod: 'merge_commit', branchName: 'railyard-merge/pr-1-2/b', units: [await unit(r, 1), await unit(r, 2)].slice(1) });
    expect(await casUpdateBranch(r.dir, 'main', base, b1.sha)).toBe(true);
    expect(await headOf(r.dir, 'main')).toBe(b1.sha);
    // a push outside the queue
    const outside = r.commitOn('main', { 'hotfix.txt': 'h\n' }, 'hotfix');
    expect(await casUpdateBranch(r.dir, 'main', b1.sha, b2.sha)).toBe(false);
    expect(await headOf(r.dir, 'main')).toBe(outside);
    // never a non-fast-forward
    await expect(casUpdateBranch(r.dir, 'main', outside, b2.sha)).rejects.toBeInstanceOf(NotFastForwardError);
    expect(await headOf(r.dir, 'main')).toBe(outside);
  });

  it('lets exactly one of two concurrent merges win', async () => {
    const r = await repo();
    r.openPr(1, { 'x.txt': 'x\n' });
    r.openPr(2, { 'y.txt': 'y\n' });
    const base = r.headOf('main')!;
    const [a, b] = await Promise.all([1, 2].map(async (n) =>
      buildTestCommit({ repoDir: r.dir, targetBranch: 'main', baseSha: base, mergeMethod: 'squash', branchName: `railyard-merge/pr-${n}/r`, units: [await unit(r, n)] })));
    const results = await Promise.all([casUpdateBranch(r.dir, 'main', base, a!.sha), casUpdateBranch(r.dir, 'main', base, b!.sha)]);
    expect(results.filter(Boolean)).toHaveLength(1);
    expect([a!.sha, b!.sha]).toContain(await headOf(r.dir, 'main'));
  });
});

describe('snapshot / diffSnapshots', () => {
  it('detects a push to a PR, a closed PR, a new PR, a base change and a target moved outside the queue', async () => {
    const r = await repo();
    const h1 = r.openPr(1, { 'x.txt': 'x\n' });
    const h2 = r.openPr(2, { 'y.txt': 'y\n' });
    const main0 = r.headOf('main')!;
    const before = await snapshot(r.dir);
    expect(before.pulls).toEqual({ 1: { head: h1, base: null }, 2: { head: h2, base: null } });
    expect(before.branches).toEqual({ main: main0 });

    const h1b = r.pushPr(1, { 'x.txt': 'x2\n' });
    r.closePr(2);
    const h3 = r.openPr(3, { 'z.txt': 'z\n' });
    r.setPrBase(3, 'develop');
    const main1 = r.commitOn('main', { 'hot.txt': 'fix\n' });
    r.git(['update-ref', 'refs/heads/railyard-merge/pr-1/run', h1b]); // test branches are not "moves"
    const after = await snapshot(r.dir);
    expect(diffSnapshots(before, after)).toEqual([
      { type: 'prPushed', prNumber: 1, from: h1, to: h1b },
      { type: 'prClosed', prNumber: 2, lastHead: h2 },
      { type: 'prOpened', prNumber: 3, head: h3 },
      { type: 'branchMoved', branch: 'main', from: main0, to: main1 },
    ]);
    expect(after.pulls[3]).toEqual({ head: h3, base: 'develop' });
    expect(after.testBranches).toEqual({ 'railyard-merge/pr-1/run': h1b });
    r.git(['config', 'railyard.pr-1.base', 'release']);
    expect(diffSnapshots(after, await snapshot(r.dir))).toEqual([{ type: 'prBaseChanged', prNumber: 1, from: null, to: 'release' }]);
    expect(diffSnapshots(after, after)).toEqual([]);
    // The config's parse is kept between polls: an edit of the same size in the same instant is still seen.
    const released = await snapshot(r.dir);
    r.git(['config', 'railyard.pr-1.base', 'feature']);
    expect(diffSnapshots(released, await snapshot(r.dir))).toEqual([{ type: 'prBaseChanged', prNumber: 1, from: 'release', to: 'feature' }]);
  });
});

describe('readChecksConfig', () => {
  it('parses railyard.json at the root of the target branch', async () => {
    const r = await repo({ checks: { unit: 'npm test', lint: 'npm run lint' } });
    expect(await readChecksConfig(r.dir, 'main')).toEqual({ checks: { unit: 'npm test', lint: 'npm run lint' }, reports: {} });
    expect(await readChecksConfig(r.dir, r.headOf('main')!)).toEqual({ checks: { unit: 'npm test', lint: 'npm run lint' }, reports: {} });
    r.commitOn('main', { 'railyard.json': '{"checks": {"unit": "npm test"}, "env": {"NODE_ENV": "test", "FEATURE_X": ""}}' });
    expect(await readChecksConfig(r.dir, 'main')).toEqual({ checks: { unit: 'npm test' }, reports: {}, env: { NODE_ENV: 'test', FEATURE_X: '' } });
  });

  it('takes the object form of a check: its command and the reports it writes', async () => {
    const r = await repo({ checks: null });
    r.commitOn('main', { 'railyard.json': JSON.stringify({ checks: { unit: { run: 'npm test', reports: ['junit.xml', 'reports/*.xml'] }, lint: 'npm run lint', e2e: { run: 'npm run e2e' } } }) });
    expect(await readChecksConfig(r.dir, 'main')).toEqual({
      checks: { unit: 'npm test', lint: 'npm run lint', e2e: 'npm run e2e' },
      reports: { unit: ['junit.xml', 'reports/*.xml'] },
    });
  });

  it.each([
    ['no file', null, 'START_TEST_RUN_CONFIG_NOT_FOUND', /railyard\.json: not found at the root of main/],
    ['bad JSON', '{"checks": {', 'START_TEST_RUN_CONFIG_PARSING_FAILURE', /invalid JSON/],
    ['no checks key', '{"check": {}}', 'START_TEST_RUN_CONFIG_PARSING_FAILURE', /checks: required/],
    ['a non-string command', '{"checks": {"unit": 3}}', 'START_TEST_RUN_CONFIG_PARSING_FAILURE', /checks\.unit: must be a non-empty shell command/],
    ['empty checks', '{"checks": {}}', 'START_TEST_RUN_NO_REQUIRED_STATUSES', /no checks defined/],
    ['env not an object', '{"checks": {"u": "true"}, "env": ["A=1"]}', 'START_TEST_RUN_CONFIG_PARSING_FAILURE', /env: must be an object/],
    ['env with a bad name', '{"checks": {"u": "true"}, "env": {"A-B": "1"}}', 'START_TEST_RUN_CONFIG_PARSING_FAILURE', /env: "A-B" is not a variable name/],
    ['env setting HOME', '{"checks": {"u": "true"}, "env": {"HOME": "/root"}}', 'START_TEST_RUN_CONFIG_PARSING_FAILURE', /env\.HOME: set by the runner for every check/],
    ['env setting LD_PRELOAD', '{"checks": {"u": "true"}, "env": {"LD_PRELOAD": "x.so"}}', 'START_TEST_RUN_CONFIG_PARSING_FAILURE', /env\.LD_PRELOAD: set by the runner/],
    ['env with a number', '{"checks": {"u": "true"}, "env": {"N": 1}}', 'START_TEST_RUN_CONFIG_PARSING_FAILURE', /env\.N: must be a string/],
    ['an object without run', '{"checks": {"unit": {"reports": ["j.xml"]}}}', 'START_TEST_RUN_CONFIG_PARSING_FAILURE', /checks\.unit\.run: must be a non-empty shell command string/],
    ['reports not a list', '{"checks": {"unit": {"run": "t", "reports": "j.xml"}}}', 'START_TEST_RUN_CONFIG_PARSING_FAILURE', /checks\.unit\.reports: must be a list/],
    ['a report outside the checkout', '{"checks": {"unit": {"run": "t", "reports": ["../../etc/passwd"]}}}', 'START_TEST_RUN_CONFIG_PARSING_FAILURE', /"\.\.\/\.\.\/etc\/passwd" is outside the checkout/],
    ['an unknown key', '{"checks": {"unit": {"run": "t", "env": {}}}}', 'START_TEST_RUN_CONFIG_PARSING_FAILURE', /checks\.unit\.env: unknown key/],
  ])('%s → %s', async (_label, text, reason, message) => {
    const r = await repo({ checks: null });
    if (text !== null) r.commitOn('main', { 'railyard.json': text });
    const err = await readChecksConfig(r.dir, 'main').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChecksConfigError);
    expect((err as ChecksConfigError).reason).toBe(reason);
    expect((err as Error).message).toMatch(message);
  });

  it('refuses a railyard.json nested deeper than the JSON bound without parsing it (pull-request code writes it)', async () => {
    const r = await repo({ checks: null });
    // Valid JSON with a valid `checks`: parsed, 2,000,000 levels held the server's thread for seconds.
    const levels = 2_000_000;
    r.commitOn('main', { 'railyard.json': `{"checks": {"unit": "true"}, "x": ${'['.repeat(levels)}${']'.repeat(levels)}}` });
    const t0 = performance.now();
    const err = await readChecksConfig(r.dir, 'main').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChecksConfigError);
    expect((err as ChecksConfigError).reason).toBe('START_TEST_RUN_CONFIG_PARSING_FAILURE');
    expect((err as Error).message).toBe('railyard.json (main): nested deeper than 64 levels (arrays and objects)');
    expect(performance.now() - t0).toBeLessThan(2_000);
  });

  it('reports a missing branch as config not found', async () => {
    const r = await repo();
    await expect(readChecksConfig(r.dir, 'nope')).rejects.toMatchObject({ reason: 'START_TEST_RUN_CONFIG_NOT_FOUND' });
  });
});

describe('test branches and layout', () => {
  it('lists and prunes test branches, keeping active runs and other branches', async () => {
    const r = await repo();
    const main = r.headOf('main')!;
    for (const b of ['railyard-merge/pr-1/aaa', 'railyard-merge/pr-1-2/bbb', 'railyard-merge/pr-3/ccc', 'feature']) r.git(['update-ref', `refs/heads/${b}`, main]);
    expect((await listTestBranches(r.dir)).map((b) => [b.branch, b.prNumbers, b.testRunId])).toEqual([
      ['railyard-merge/pr-1-2/bbb', [1, 2], 'bbb'],
      ['railyard-merge/pr-1/aaa', [1], 'aaa'],
      ['railyard-merge/pr-3/ccc', [3], 'ccc'],
    ]);
    expect((await pruneTestBranches(r.dir, ['bbb'])).sort()).toEqual(['railyard-merge/pr-1/aaa', 'railyard-merge/pr-3/ccc']);
    const snap = await snapshot(r.dir);
    expect(Object.keys(snap.testBranches)).toEqual(['railyard-merge/pr-1-2/bbb']);
    expect(Object.keys(snap.branches).sort()).toEqual(['feature', 'main']);
  });

  it('maps host/owner/name under the git root and rejects escaping names', () => {
    expect(repoDirFor('/srv/git', 'github.com', 'acme', 'app')).toBe('/srv/git/github.com/acme/app.git');
    expect(() => repoDirFor('/srv/git', 'github.com', '..', 'app')).toThrow(/repo\.owner/);
    expect(() => repoDirFor('/srv/git', 'github.com', 'acme', 'a/b')).toThrow(/repo\.name/);
  });
});

describe('GitForge', () => {
  it('finds PRs of repositories laid out as <root>/<host>/<owner>/<name>.git', async () => {
    const r = await repo({ location: { host: 'github.com', owner: 'acme', name: 'app' } });
    const head = r.openPr(4, { 'f.txt': 'f\n' }, { title: 'Add f', author: 'Dee' });
    const forge = new GitForge(r.root);
    expect(forge.kind).toBe('git');
    expect(await forge.getPullRequest({ host: 'github.com', owner: 'acme', name: 'app' }, 4, 'main')).toMatchObject({ headSha: head, title: 'Add f', author: 'Dee' });
    expect(await forge.getPullRequest({ host: 'github.com', owner: 'acme', name: 'app' }, 5, 'main')).toBeNull();
    expect(await forge.getPullRequest({ host: 'github.com', owner: 'acme', name: 'other' }, 4, 'main')).toBeNull();
    expect(await forge.getPullRequest({ host: 'github.com', owner: '..', name: 'app' }, 4, 'main')).toBeNull();
  });
});

describe('watchRepo', () => {
  it('reports changes as they happen and stops when aborted', async () => {
    const r = await repo();
    const h1 = r.openPr(1, { 'x.txt': 'x\n' });
    const ac = new AbortController();
    const seen: RepoChange[] = [];
    const baseline = await watchRepo(r.dir, { intervalMs: 30, signal: ac.signal, onChanges: (c) => void seen.push(...c) });
    expect(baseline.pulls[1]?.head).toBe(h1);
    const h1b = r.pushPr(1, { 'x.txt': 'x2\n' });
    await expect.poll(() => seen, { timeout: 3000 }).toEqual([{ type: 'prPushed', prNumber: 1, from: h1, to: h1b }]);
    ac.abort();
    r.closePr(1);
    await new Promise((res) => setTimeout(res, 150));
    expect(seen).toHaveLength(1);
  });
});
