import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, type TestContext } from 'vitest';
import { ChecksConfigError, runChecks, type CheckResult } from '../../src/runner/index.js';
import { createRepo, type FixtureRepo } from '../forge/fixture.js';

/** A repository and directories for test `t`, removed when it ends (the tests run side by side). */
async function setup(t: TestContext, files: Record<string, string> = {}) {
  const repo = await createRepo({ files: { 'data.txt': 'hello from the test commit\n', ...files } });
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'railyard-run-'));
  // As root, checks run as a uid of their own: it must reach its directory (never list the others').
  chmodSync(tmp, 0o711);
  const wtParent = path.join(tmp, 'wt');
  execFileSync('mkdir', ['-p', '-m', '0711', wtParent]);
  t.onTestFinished(async () => {
    await repo.cleanup();
    rmSync(tmp, { recursive: true, force: true });
  });
  const sha = repo.headOf('main')!;
  return { repo, sha, logDir: path.join(tmp, 'logs'), wtParent };
}

function worktreesOf(repo: FixtureRepo): string[] {
  return repo.git(['worktree', 'list', '--porcelain']).split('\n').filter((l) => l.startsWith('worktree ')).map((l) => l.slice(9));
}

/** Processes whose command line contains `marker`. */
function alive(marker: string): string[] {
  return execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' }).split('\n').filter((l) => l.includes(marker) && !l.includes('ps -eo'));
}

// Side by side: each test has its own repository and directories (and, as root, each check its own
// uid); the three with a bound on their time run alone, in order, between the others.
describe.concurrent('runChecks', () => {
  it('passes when every required check succeeds, running each in a worktree of the commit', async (t) => {
    const { repo, sha, logDir, wtParent } = await setup(t);
    const started: string[] = [];
    const finished: Array<[string, CheckResult['outcome']]> = [];
    const res = await runChecks({
      repoDir: repo.dir, sha, logDir, timeoutMs: 0, required: null, worktreeParent: wtParent,
      checks: {
        read: 'cat data.txt && echo "sha=$RAILYARD_SHA check=$RAILYARD_CHECK" && echo to-stderr >&2',
        'lint/style': 'test -f railyard.json && touch made-by-check',
      },
      onCheckStarted: (n) => started.push(n),
      onCheckFinished: (n, r) => finished.push([n, r.outcome]),
    });
    expect(res).toMatchObject({ passed: true, timedOut: false });
    expect(Object.keys(res.results)).toEqual(['read', 'lint/style']);
    expect(res.results.read).toMatchObject({ outcome: 'success', exitCode: 0 });
    const log = readFileSync(res.results.read!.logPath, 'utf8');
    expect(log).toContain('hello from the test commit');
    expect(log).toContain(`sha=${sha} check=read`);
    expect(log).toContain('to-stderr');
    expect(log).toMatch(/\[railyard\] read: success \(exit code 0\) after \d+ ms/);
    expect(path.dirname(res.results['lint/style']!.logPath)).toBe(logDir);
    // Logs may hold what a check printed (secrets included): the owner's alone.
    expect(statSync(logDir).mode & 0o777).toBe(0o700);
    expect(statSync(res.results.read!.logPath).mode & 0o777).toBe(0o600);
    expect(started.sort()).toEqual(['lint/style', 'read']);
    expect(finished.sort()).toEqual([['lint/style', 'success'], ['read', 'success']]);
    // worktrees are gone, from disk and from git
    expect(readdirSync(wtParent)).toEqual([]);
    expect(worktreesOf(repo)).toEqual([repo.dir]);
  });

  it('reads the reports a check declares from its worktree; never through a symlink out of it', async (t) => {
    const { repo, sha, logDir, wtParent } = await setup(t);
    const secret = path.join(path.dirname(logDir), 'secret.xml');
    execFileSync('sh', ['-c', `echo '<secret/>' > ${secret}`]);
    const res = await runChecks({
      repoDir: repo.dir, sha, logDir, timeoutMs: 0, required: null, worktreeParent: wtParent,
      checks: {
        unit: 'mkdir -p out && echo "<testsuite/>" > out/a.xml && echo "<testsuites/>" > junit.xml; exit 1',
        sneaky: `ln -s ${secret} junit.xml && mkdir out && ln -s ${path.dirname(secret)} out/dir`,
        none: 'true',
      },
      reports: { unit: ['junit.xml', 'out/*.xml'], sneaky: ['junit.xml', 'out/**/*.xml'] },
    });
    expect(res.results.unit).toMatchObject({ outcome: 'failure', reports: [{ name: 'junit.xml', content: '<testsuites/>\n' }, { name: 'out/a.xml', content: '<testsuite/>\n' }] });
    expect(res.results.sneaky).toMatchObject({ outcome: 'success', reports: [] });
    expect(res.results.none).not.toHaveProperty('reports');
    expect(readdirSync(wtParent)).toEqual([]);
  });

  it('fails when a required check fails, and runs only the required ones', async (t) => {
    const { repo, sha, logDir } = await setup(t);
    const res = await runChecks({
      repoDir: repo.dir, sha, logDir, timeoutMs: 0, required: ['unit', 'lint'],
      checks: { unit: 'echo broken; exit 3', lint: 'true', slow: 'sleep 30' },
    });
    expect(res.passed).toBe(false);
    expect(Object.keys(res.results)).toEqual(['unit', 'lint']);
    expect(res.results.unit).toMatchObject({ outcome: 'failure', exitCode: 3 });
    expect(res.results.lint).toMatchObject({ outcome: 'success', exitCode: 0 });
    expect(readFileSync(res.results.unit!.logPath, 'utf8')).toMatch(/broken\n[\s\S]*failure \(exit code 3\)/);
  });

  it.sequential('kills the whole process tree at the timeout (SIGKILL for children that ignore SIGTERM)', async (t) => {
    const { repo, sha, logDir, wtParent } = await setup(t);
    const marker = `sleep ${100 + Math.floor(Math.random() * 800)}.${process.pid}`;
    const t0 = Date.now();
    const res = await runChecks({
      repoDir: repo.dir, sha, logDir, timeoutMs: 700, killGraceMs: 300, required: null, worktreeParent: wtParent, concurrency: 1,
      checks: {
        // a child in the background, one that ignores SIGTERM, and the shell waiting for them
        hang: `${marker} & (trap '' TERM; ${marker}) & echo started; wait`,
        never: 'echo should not run',
      },
    });
    const elapsed = Date.now() - t0;
    expect(elapsed).toBeLessThan(5000);
    expect(res).toMatchObject({ timedOut: true, passed: false });
    expect(res.results.hang).toMatchObject({ outcome: 'timed_out', exitCode: null });
    expect(res.results.never).toMatchObject({ outcome: 'timed_out', durationMs: 0 });
    expect(readFileSync(res.results.never!.logPath, 'utf8')).toContain('not started (testing timeout reached)');
    expect(readFileSync(res.results.hang!.logPath, 'utf8')).toContain('started');
    await new Promise((r) => setTimeout(r, 100));
    expect(alive(marker)).toEqual([]);
    expect(readdirSync(wtParent)).toEqual([]);
    expect(worktreesOf(repo)).toEqual([repo.dir]);
  });

  it.sequential('cancels through the signal: running checks killed, waiting ones never start', async (t) => {
    const { repo, sha, logDir, wtParent } = await setup(t);
    const marker = `sleep ${100 + Math.floor(Math.random() * 800)}.${process.pid}1`;
    const ac = new AbortController();
    const t0 = Date.now();
    const res = await runChecks({
      repoDir: repo.dir, sha, logDir, timeoutMs: 0, required: null, signal: ac.signal, worktreeParent: wtParent, concurrency: 1,
      checks: { long: marker, later: 'true' },
      onCheckStarted: () => setTimeout(() => ac.abort(), 200),
    });
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(res.cancelled).toBe(true);
    expect(res.results.long).toMatchObject({ outcome: 'cancelled' });
    expect(res.results.later).toMatchObject({ outcome: 'cancelled', durationMs: 0 });
    expect(alive(marker)).toEqual([]);
    expect(readdirSync(wtParent)).toEqual([]);
  });

  it.sequential('with failFast, stops the other checks once one fails', async (t) => {
    const { repo, sha, logDir } = await setup(t);
    const t0 = Date.now();
    const res = await runChecks({
      repoDir: repo.dir, sha, logDir, timeoutMs: 0, required: null, failFast: true, concurrency: 2,
      checks: { bad: 'sleep 0.2; exit 1', slow: 'sleep 20' },
    });
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(res.results.bad!.outcome).toBe('failure');
    expect(res.results.slow!.outcome).toBe('cancelled');
    expect(res).toMatchObject({ passed: false, cancelled: false });
  });

  it('runs checks in parallel up to the concurrency bound', async (t) => {
    const { repo, sha, logDir } = await setup(t);
    // six worktrees of one repo created at once (git itself races on $GIT_DIR/worktrees).
    // A barrier, not a stopwatch: each check leaves its mark in a shared directory (writable by the
    // checks' own uids) and succeeds only once all six marks are there, i.e. while all six run at
    // the same time; run one after another, the first would give up after 15 s and fail. (A bound
    // on the elapsed time failed on a loaded machine, where six clones take seconds.)
    const barrier = path.join(path.dirname(logDir), 'barrier');
    execFileSync('mkdir', ['-m', '0777', barrier]);
    const waitForAll = (n: string) =>
      `touch ${barrier}/${n}; i=0; while [ "$(ls ${barrier} | wc -l)" -lt 6 ]; do i=$((i+1)); [ $i -le 300 ] || exit 1; sleep 0.05; done`;
    const checks = Object.fromEntries(['a', 'b', 'c', 'd', 'e', 'f'].map((n) => [n, waitForAll(n)]));
    const res = await runChecks({ repoDir: repo.dir, sha, logDir, timeoutMs: 0, required: null, concurrency: 6, checks });
    expect(Object.values(res.results).map((r) => r.outcome)).toEqual(Array(6).fill('success'));
    // As their own uids (root), nothing they left in the shared temp dir outlives them.
    expect(readdirSync(barrier).sort()).toEqual(process.getuid?.() === 0 ? [] : ['a', 'b', 'c', 'd', 'e', 'f']);
  });

  it('rejects a required status with no check, before running anything', async (t) => {
    const { repo, sha, logDir } = await setup(t);
    const err = await runChecks({
      repoDir: repo.dir, sha, logDir, timeoutMs: 0, required: ['unit', 'e2e', 'docs'], checks: { unit: 'true' },
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChecksConfigError);
    expect((err as ChecksConfigError).reason).toBe('START_TEST_RUN_CONFIG_MISSING_REQUIRED_STATUSES');
    expect((err as ChecksConfigError).missing).toEqual(['e2e', 'docs']);
    expect((err as Error).message).toBe('requiredStatuses: "e2e", "docs" have no check in railyard.json (checks: unit)');
    expect(existsSync(logDir)).toBe(false);
    await expect(runChecks({ repoDir: repo.dir, sha, logDir, timeoutMs: 0, required: [], checks: { unit: 'true' } })).rejects.toMatchObject({
      reason: 'START_TEST_RUN_NO_REQUIRED_STATUSES',
    });
  });

  it('tests the commit it is given, not the branch head', async (t) => {
    const { repo, logDir } = await setup(t);
    repo.openPr(1, { 'data.txt': 'pr content\n' });
    const prSha = repo.headOf('refs/pull/1/head')!;
    const res = await runChecks({ repoDir: repo.dir, sha: prSha, logDir, timeoutMs: 0, required: null, checks: { c: 'grep -q "pr content" data.txt' } });
    expect(res).toMatchObject({ passed: true }); // the whole result (logs, exit codes) shows on failure
  });
});
