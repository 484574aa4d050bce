/**
 * Checks are untrusted code (issue 26): what a check sees and what it is allowed. Real checks in
 * real clones of a real bare repository, run as a uid of their own (the tests run as root, as the
 * server does on CI), with and without bubblewrap.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, type TestContext } from 'vitest';
import { runChecks, type ChecksSandbox, type RunChecksOptions } from '../../src/runner/index.js';
import { createRepo } from '../forge/fixture.js';
import { skipUnlessRoot, skipWithoutBwrap } from '../support/bwrap.js';

const notRoot = skipUnlessRoot();
const noBwrap = await skipWithoutBwrap();

/** A repository, a checks directory and a stand-in data dir for one test, removed when it ends. */
async function setup(t: TestContext) {
  const repo = await createRepo({ files: { 'data.txt': 'hello\n' } });
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'railyard-iso-'));
  chmodSync(tmp, 0o711);
  const parent = path.join(tmp, 'checks');
  mkdirSync(parent, { mode: 0o711 });
  // A stand-in for the data dir: the server's alone.
  const data = path.join(tmp, 'data');
  mkdirSync(data, { mode: 0o700 });
  writeFileSync(path.join(data, 'railyard.sqlite'), 'SQLite format 3\0 secret rows', { mode: 0o600 });
  t.onTestFinished(async () => {
    await repo.cleanup();
    rmSync(tmp, { recursive: true, force: true });
  });
  const sha = repo.headOf('main')!;
  const run = async (checks: Record<string, string>, extra: Partial<RunChecksOptions> = {}) => {
    const res = await runChecks({ repoDir: repo.dir, sha, logDir: path.join(data, 'runs', String(Math.random()).slice(2)), timeoutMs: 0, required: null, worktreeParent: parent, checks, ...extra });
    const logs = Object.fromEntries(Object.entries(res.results).map(([n, r]) => [n, readFileSync(r.logPath, 'utf8')]));
    return { res, logs };
  };
  return { repo, sha, parent, data, run };
}

// The server's secrets, in this process's environment while the tests run: no check may see them.
const SECRETS = {
  RAILYARD_SERVER_TOKEN: 'ry_server_token_that_must_not_leak',
  RAILYARD_DATABASE_URL: 'postgres://railyard:db-password-that-must-not-leak@127.0.0.1/railyard',
  RAILYARD_GITHUB_TOKEN: 'ghp_github_token_that_must_not_leak',
  AWS_SECRET_ACCESS_KEY: 'aws-secret-that-must-not-leak',
};

// Side by side: each test has its own repository and directories, and each check its own uid.
describe.skipIf(notRoot)('checks run as untrusted code', { concurrent: true }, () => {
  beforeAll(() => {
    Object.assign(process.env, SECRETS);
  });
  afterAll(() => {
    for (const k of Object.keys(SECRETS)) delete process.env[k];
  });

  it.for(noBwrap ? (['none'] as const) : (['none', 'bwrap'] as const))(
    '%s: the environment is an allowlist plus what railyard.json declares; no secret of the server reaches it',
    async (sandbox: ChecksSandbox, t: TestContext) => {
      const { sha, run } = await setup(t);
      for (const [k, v] of Object.entries(SECRETS)) expect(process.env[k]).toBe(v);
      const { res, logs } = await run(
        { env: 'env; echo "uid=$(id -u)"; echo "pwd=$(pwd)"' },
        { env: { NODE_ENV: 'test' }, isolation: { sandbox } },
      );
      expect(res.passed, logs.env).toBe(true);
      const log = logs.env!;
      for (const value of Object.values(SECRETS)) expect(log).not.toContain(value);
      const vars = new Map(log.split('\n').filter((l) => /^[A-Za-z_]+=/.test(l)).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
      expect(vars.get('CI')).toBe('true');
      expect(vars.get('NODE_ENV')).toBe('test');
      expect(vars.get('RAILYARD_SHA')).toBe(sha);
      expect(vars.get('RAILYARD_CHECK')).toBe('env');
      expect(vars.get('HOME')).toMatch(/\/home$/);
      expect(Number(vars.get('uid'))).toBeGreaterThan(0);
      const names = [...vars.keys()].filter((k) => !['uid', 'pwd'].includes(k));
      const allowed = ['PATH', 'HOME', 'LANG', 'TMPDIR', 'USER', 'LOGNAME', 'CI', 'RAILYARD_SHA', 'RAILYARD_CHECK', 'GIT_TERMINAL_PROMPT', 'NODE_ENV', 'PWD', 'SHLVL', 'OLDPWD', '_'];
      expect(names.filter((n) => !allowed.includes(n))).toEqual([]);
    },
  );

  it.for(noBwrap ? (['none'] as const) : (['none', 'bwrap'] as const))(
    '%s: a check cannot read the data dir, and git works in its checkout (history included)',
    async (sandbox: ChecksSandbox, t: TestContext) => {
      const { sha, data, run, repo } = await setup(t);
      repo.commitOn('main', { 'two.txt': '2\n' }, 'Second');
      const head = repo.headOf('main')!;
      const { res, logs } = await run(
        {
          steal: `cat ${data}/railyard.sqlite; ls ${data}; cat ${data}/runs/*/*.log; true`,
          git: `test "$(git rev-parse HEAD)" = "${sha}" && git log --oneline -1 && git status --short && git diff --stat HEAD origin/main && git -c user.name=c -c user.email=c@c commit -q --allow-empty -m from-check && echo GIT-OK`,
        },
        { isolation: { sandbox } },
      );
      expect(logs.steal).not.toContain('SQLite format 3');
      expect(logs.steal).not.toContain('secret rows');
      expect(logs.steal).toMatch(sandbox === 'bwrap' ? /No such file or directory/ : /Permission denied/);
      expect(res.results.git!.outcome, logs.git).toBe('success');
      expect(logs.git).toContain('GIT-OK');
      expect(logs.git).toContain('two.txt');
      // What the check did in its clone stays there: the bare repository has no new commit.
      expect(repo.headOf('main')).toBe(head);
    },
  );

  it('bwrap: only the check\'s own directory is writable; the rest of the machine is read-only or absent', async (t) => {
    if (noBwrap) return;
    const { run, parent } = await setup(t);
    const { res, logs } = await run(
      {
        probe: [
          'touch /usr/railyard-probe 2>&1 || echo USR-READONLY',
          'touch /etc/railyard-probe 2>&1 || echo ETC-READONLY',
          `ls ${path.dirname(parent)} 2>&1 || echo PARENT-ABSENT`,
          'ls /root /home /srv 2>&1 | head -3; echo listed',
          'touch "$HOME/ok" && touch ./ok && touch "$TMPDIR/ok" && echo OWN-WRITABLE',
        ].join('; '),
      },
      { isolation: { sandbox: 'bwrap' } },
    );
    expect(res.passed, logs.probe).toBe(true);
    expect(logs.probe).toContain('USR-READONLY');
    expect(logs.probe).toContain('ETC-READONLY');
    expect(logs.probe).toContain('OWN-WRITABLE');
    expect(logs.probe).not.toContain('railyard-iso-'); // nothing of the test's temp dir but its own directory
  });

  it('two checks running at once have different uids and cannot read each other\'s checkout', async (t) => {
    const { run } = await setup(t);
    const { res, logs } = await run(
      {
        a: 'echo "uid=$(id -u)"; echo secret-of-a > mine.txt; sleep 1.5',
        b: 'sleep 0.5; echo "uid=$(id -u)"; cat ../../check-*/work/mine.txt 2>&1; ls ../.. 2>&1; true',
      },
      { concurrency: 2 },
    );
    expect(res.passed).toBe(true);
    const uid = (l: string) => /uid=(\d+)/.exec(l)?.[1];
    expect(uid(logs.a!)).not.toBe(uid(logs.b!));
    expect(logs.b).not.toContain('secret-of-a');
  });

  it('a process that leaves the check\'s process group (setsid) is killed with the check', async (t) => {
    const { run } = await setup(t);
    const marker = `${200 + Math.floor(Math.random() * 700)}.${process.pid}`;
    const { res } = await run({ daemon: `setsid sh -c 'sleep ${marker}' </dev/null >/dev/null 2>&1 & sleep 0.3; echo started` });
    expect(res.passed).toBe(true);
    const alive = execFileSync('ps', ['-eo', 'args='], { encoding: 'utf8' }).split('\n').filter((l) => l.includes(`sleep ${marker}`));
    expect(alive).toEqual([]);
  });

  // Alone (between the others): it bounds its own time.
  it.sequential('a check over its own time limit ends timed_out with a note; one printing too much is cut with a note and still passes', async (t) => {
    const { run } = await setup(t);
    const t0 = Date.now();
    const { res, logs } = await run(
      { slow: 'echo begun; sleep 30', loud: 'head -c 3000000 /dev/zero | tr "\\0" x; echo; echo done >&2' },
      { checkTimeoutMs: 800, maxOutputBytes: 10_000, killGraceMs: 200 },
    );
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(res.results.slow).toMatchObject({ outcome: 'timed_out', exitCode: null });
    expect(logs.slow).toMatch(/\[railyard\] slow: timed_out \(the per-check limit of 1 s reached\)/);
    expect(res.results.loud).toMatchObject({ outcome: 'success' });
    expect(statSync(res.results.loud!.logPath).size).toBeLessThan(11_000);
    expect(logs.loud).toContain('[railyard] loud: output cut at 10000 bytes (the per-check output limit); the check goes on');
    expect(res.timedOut).toBe(false); // the run's own deadline is another matter
  });

  it('the checks\' parent directory must be reachable by their uid: else the check fails saying what to fix', async (t) => {
    const { parent, run } = await setup(t);
    chmodSync(parent, 0o700);
    const { res, logs } = await run({ t: 'true' });
    expect(res.results.t!.outcome).toBe('failure');
    expect(logs.t).toMatch(/mode 0700\) cannot be entered by the checks' uid \d+: make it 0711 or put the checks elsewhere with --checks-dir/);
    expect(readdirSync(parent)).toEqual([]);
  });
});
