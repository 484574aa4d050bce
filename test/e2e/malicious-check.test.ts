/**
 * A malicious pull request (issue 26): its check reads the environment, walks up from its
 * checkout, lists and reads the data dir, looks for databases and other runs' logs, and reads
 * other processes' environments. Two organisations share one server and one git root; the
 * server's environment holds its token, a database URL with a password and a GitHub token. The
 * check's log, as the API serves it, holds none of them and nothing of the other organisation.
 * Runs with `--checks-sandbox none` (a uid of its own: the tests run as root, like the server on
 * CI) and with `bwrap` (required on CI).
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ChecksSandbox } from '../../src/runner/index.js';
import { createRepo, type FixtureRepo } from '../forge/fixture.js';
import { call, ok } from '../server/helpers.js';
import { skipUnlessRoot, skipWithoutBwrap } from '../support/bwrap.js';
import { isolatedEnv, railyard, unwrapOclif } from '../support/cli.js';
import { startTestServer, type TestServer } from '../support/server.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const notRoot = skipUnlessRoot();
const noBwrap = await skipWithoutBwrap();

const ACME = { host: 'github.com', owner: 'acme', name: 'web' };
const EVIL = { host: 'github.com', owner: 'evil', name: 'tool' };

async function settle(s: TestServer, q: object, pr: number, token: string): Promise<{ state: string; testRunId?: string }> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const got = await ok(s, 'getSubmittedPullRequest', { ...q, pr: { number: pr } }, token);
    if (['merged', 'failed', 'cancelled'].includes(got.state)) return got;
    if (Date.now() > deadline) throw new Error(`#${pr} is still ${got.state}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The attack, as a shell script: it never fails, it prints what it finds. */
function attack(dataDir: string, gitRoot: string): string {
  return [
    'set +e',
    'echo "== env"; env',
    'echo "== who"; echo "uid=$(id -u)"; echo "pwd=$(pwd)"',
    'echo "== walk up"; ls -la .. ../.. ../../.. ../../../.. 2>&1',
    'cat ../../runs/*/*.log ../../../runs/*/*.log ../../../../runs/*/*.log 2>&1',
    `echo "== data dir"; ls -la ${dataDir} ${dataDir}/runs 2>&1`,
    `cat ${dataDir}/railyard.sqlite ${dataDir}/railyard.sqlite-wal 2>&1 | head -c 200000 | strings 2>/dev/null | head -200`,
    `cat ${dataDir}/runs/*/*.log 2>&1`,
    `echo "== git root"; ls -R ${gitRoot} 2>&1 | head -40`,
    `git --git-dir=${gitRoot}/github.com/acme/web.git show main:secret.txt 2>&1`,
    'echo "== find"; timeout 20 find / -maxdepth 6 \\( -name "*.sqlite*" -o -name "*.log" \\) -path "*railyard*" 2>/dev/null | head -20',
    'echo "== other processes"; for e in /proc/[0-9]*/environ; do tr "\\0" "\\n" < "$e" 2>/dev/null | grep -E "RAILYARD|TOKEN|PASSWORD"; done',
    'echo "== end"',
  ].join('\n');
}

describe.skipIf(notRoot)('a malicious check finds no secret and nothing of another organisation', () => {
  it.each(noBwrap ? (['none'] as const) : (['none', 'bwrap'] as const))('--checks-sandbox %s', async (sandbox: ChecksSandbox) => {
    const alphaToken = `ry_${randomBytes(24).toString('hex')}`;
    const betaToken = `ry_${randomBytes(24).toString('hex')}`;
    const dbPassword = `pw-${randomBytes(12).toString('hex')}`;
    const ghToken = `ghp_${randomBytes(18).toString('hex')}`;
    const acmeLogSecret = `ACME-LOG-${randomBytes(8).toString('hex')}`;
    const acmeCodeSecret = `ACME-CODE-${randomBytes(8).toString('hex')}`;
    // The server's environment, as `serve` gets it in production.
    const secrets = {
      RAILYARD_SERVER_TOKEN: alphaToken,
      RAILYARD_DATABASE_URL: `postgres://railyard:${dbPassword}@127.0.0.1:5432/railyard`,
      RAILYARD_GITHUB_TOKEN: ghToken,
    };
    Object.assign(process.env, secrets);
    cleanups.push(() => {
      for (const k of Object.keys(secrets)) delete process.env[k];
    });

    const acme: FixtureRepo = await createRepo({
      location: ACME,
      files: { 'secret.txt': `${acmeCodeSecret}\n` },
      checks: { test: `echo ${acmeLogSecret}; cat secret.txt` },
    });
    cleanups.push(() => acme.cleanup());
    acme.openPr(1, { 'one.txt': '1\n' }, { title: 'One' });

    const s = await startTestServer({
      gitRoot: acme.root,
      tokens: { [alphaToken]: 'alpha', [betaToken]: 'beta' },
      orgRepos: ['alpha=github.com/acme/*', 'beta=github.com/evil/*'],
      checks: { sandbox },
    });
    cleanups.push(() => s.close());
    const evil: FixtureRepo = await createRepo({ location: EVIL, root: acme.root, checks: { test: attack(s.dataDir, acme.root) } });
    cleanups.push(() => evil.cleanup());
    evil.openPr(1, { 'x.txt': 'x\n' }, { title: 'Innocent change' });

    // alpha's run leaves its log (with its secret) in the data dir.
    const QA = { repo: ACME, targetBranch: 'main' };
    await ok(s, 'createQueue', QA, alphaToken);
    await ok(s, 'submitPullRequest', { ...QA, pr: { number: 1 } }, alphaToken);
    expect((await settle(s, QA, 1, alphaToken)).state).toBe('merged');
    const alphaLogs = readdirSync(join(s.dataDir, 'runs')).flatMap((run) =>
      readdirSync(join(s.dataDir, 'runs', run)).map((f) => readFileSync(join(s.dataDir, 'runs', run, f), 'utf8')),
    );
    expect(alphaLogs.join('')).toContain(acmeLogSecret);

    // beta's pull request runs the attack.
    const QE = { repo: EVIL, targetBranch: 'main' };
    await ok(s, 'createQueue', QE, betaToken);
    await ok(s, 'submitPullRequest', { ...QE, pr: { number: 1 } }, betaToken);
    const done = await settle(s, QE, 1, betaToken);
    const served = await call(
      s,
      'getCheckRunLog',
      { repoHost: 'github.com', repo: 'evil/tool', targetBranch: 'main', testRunId: done.testRunId!, check: 'test' },
      { token: betaToken },
    );
    expect(served.status).toBe(200);
    const log = served.text;
    // The attack ran to its end (its output was not cut or killed before it looked everywhere).
    expect(log).toContain('== find');
    expect(log).toContain('== end');

    for (const secret of [alphaToken, betaToken, dbPassword, ghToken, acmeLogSecret, acmeCodeSecret]) {
      expect(log).not.toContain(secret);
    }
    expect(log).not.toContain('SQLite format 3');
    expect(log).not.toMatch(/^RAILYARD_(SERVER_TOKEN|DATABASE_URL|GITHUB_TOKEN)=/m);
    // It ran as a uid of its own, outside the data dir.
    const uid = Number(/^uid=(\d+)$/m.exec(log)?.[1]);
    expect(uid).toBeGreaterThan(0);
    const pwd = /^pwd=(.*)$/m.exec(log)?.[1] ?? '';
    expect(pwd).not.toBe('');
    expect(pwd.startsWith(s.dataDir)).toBe(false);
    // The data dir could not even be listed, nor the database found.
    expect(log).not.toMatch(/(^|\s|\/)railyard\.sqlite(-wal|-shm)?$/m);
  });
});

describe('railyard serve --checks-*', () => {
  it('refuses checks inside the data dir, and says so before starting (exit 2)', async () => {
    const root = await mkdtemp(join(tmpdir(), 'railyard-checks-flags-'));
    cleanups.push(() => rm(root, { recursive: true, force: true }));
    await mkdir(join(root, 'git'));
    const data = join(root, 'data');
    const r = await railyard(
      ['serve', '--git-root', join(root, 'git'), '--data-dir', data, '--port', '0', '--checks-dir', join(data, 'checks')],
      isolatedEnv(),
    );
    expect(r.code).toBe(2);
    expect(unwrapOclif(r.stderr)).toContain(`--checks-dir: ${join(data, 'checks')} is inside the data dir ${data}: checks must not live where the database and logs are`);
    const bad = await railyard(['serve', '--git-root', join(root, 'git'), '--data-dir', data, '--port', '0', '--checks-sandbox', 'docker'], isolatedEnv());
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--checks-sandbox/);
  });
});
