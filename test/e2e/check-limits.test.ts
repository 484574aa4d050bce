/**
 * Checks that cannot hurt: each attack of a pull request's check on the server or on another
 * organisation, made the way it was found. Two organisations share one `railyard serve` (the real
 * binary) and one git root, pinned with --org-repos; beta's PR runs the attack as its check, then a
 * benign PR of alpha must land, and the server is still the same process answering /v1/status.
 * Needs root (checks run as uids of their own, cgroups); the bwrap cases need bubblewrap.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createRepo, type FixtureRepo } from '../forge/fixture.js';
import { skipUnlessRoot, skipWithoutBwrap } from '../support/bwrap.js';
import { spawnServe, type ServeProcess } from '../support/serve.js';
import { tempDir } from '../support/tmp.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const notRoot = skipUnlessRoot();
const noBwrap = notRoot || (await skipWithoutBwrap());

const ACME = { host: 'github.com', owner: 'acme', name: 'web' };
const EVIL = { host: 'github.com', owner: 'evil', name: 'tool' };
const ALPHA = `ry_${randomBytes(24).toString('hex')}`;
const BETA = `ry_${randomBytes(24).toString('hex')}`;
// A uid pool of this file's own: the claims are machine-wide, other servers use the default one.
const UID_BASE = 3_000_000 + (process.pid % 1000) * 4096;

interface World {
  server: ServeProcess;
  acme: FixtureRepo;
  evil: FixtureRepo;
  gitRoot: string;
}

async function api(s: ServeProcess, path: string, token: string, body?: unknown): Promise<{ status: number; json: any; text: string }> {
  const res = await fetch(`${s.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'x-api-token': token, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, json, text };
}

async function post(s: ServeProcess, path: string, token: string, body: unknown): Promise<any> {
  const a = await api(s, path, token, body);
  if (a.status !== 200) throw new Error(`${path} answered ${a.status}: ${a.text}`);
  return a.json;
}

/** Two organisations on one server: alpha owns acme/web (benign), beta owns evil/tool (its check is `attack`). */
async function world(attack: string, args: string[] = [], options: { gitRoot?: string; wrap?: string[]; acmeCheck?: string } = {}): Promise<World> {
  const acme = await createRepo({ location: ACME, checks: { test: options.acmeCheck ?? 'git log --oneline -1 && test -f one.txt' }, ...(options.gitRoot ? { root: options.gitRoot } : {}) });
  cleanups.push(() => acme.cleanup());
  const evil = await createRepo({ location: EVIL, root: acme.root, checks: { test: attack } });
  cleanups.push(() => evil.cleanup());
  const data = await tempDir('railyard-limits-data-');
  const server = await spawnServe(
    [
      '--git-root', acme.root, '--data-dir', data, '--org', 'alpha', '--token', ALPHA, '--org-token', `beta=${BETA}`,
      '--org-repos', 'alpha=github.com/acme/*', '--org-repos', 'beta=github.com/evil/*',
      '--checks-uid-base', String(UID_BASE), '--checks-timeout-minutes', '5', ...args,
    ],
    { PATH: process.env.PATH, HOME: data, RAILYARD_NO_UPDATE_NOTIFIER: '1' },
    options.wrap ? { wrap: options.wrap } : {},
  );
  cleanups.push(() => server.kill());
  return { server, acme, evil, gitRoot: acme.root };
}

/** Submits PR `n` of `repo` and waits until it merged or failed; the last transition's detail too. */
async function land(s: ServeProcess, repo: typeof ACME, n: number, token: string, timeoutMs = 90_000): Promise<{ state: string; detail: string; testRunId?: string }> {
  const q = { repo, targetBranch: 'main' };
  await api(s, '/createQueue', token, q);
  await post(s, '/submitPullRequest', token, { ...q, pr: { number: n } });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = await post(s, '/getSubmittedPullRequest', token, { ...q, pr: { number: n } });
    if (['merged', 'failed', 'cancelled'].includes(got.state)) {
      const history = await post(s, '/getPullRequestHistory', token, { ...q, pr: { number: n } });
      return { state: got.state, detail: String(history.transitions.at(-1)?.detail ?? ''), testRunId: got.testRunId };
    }
    if (Date.now() > deadline) throw new Error(`#${n} of ${repo.owner}/${repo.name} is still ${got.state}\n${s.output().stdout}\n${s.output().stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function checkLog(s: ServeProcess, testRunId: string, token: string): Promise<string> {
  const q = new URLSearchParams({ repoHost: 'github.com', repo: 'evil/tool', targetBranch: 'main', testRunId, check: 'test' });
  const res = await fetch(`${s.url}/getCheckRunLog?${q}`, { headers: { 'x-api-token': token } });
  return res.text();
}

/** The attack did no harm: alpha's benign PR lands, and the server is the process it was, answering. */
async function unharmed(w: World): Promise<void> {
  const pid = w.server.child.pid;
  w.acme.openPr(1, { 'one.txt': '1\n' }, { title: 'Benign' });
  const benign = await land(w.server, ACME, 1, ALPHA);
  expect(benign, benign.detail).toMatchObject({ state: 'merged' });
  expect(w.server.child.exitCode).toBeNull();
  expect(w.server.child.pid).toBe(pid);
  const status = await fetch(`${w.server.url}/status`);
  expect(status.status).toBe(200);
}

const SMALL = ['--checks-memory-mib', '256', '--checks-processes', '64', '--checks-tmp-mib', '32', '--checks-disk-mib', '64'];

describe.skipIf(notRoot)('a check cannot hurt the server or another organisation', () => {
  it('squatting the uid names (anyone on the machine could) takes no uid away; a check can claim none and finds nothing listening', async () => {
    // What took every uid before: a listening socket in the abstract namespace per uid of the pool.
    const squatters: Server[] = [];
    cleanups.push(() => squatters.forEach((s) => s.close()));
    for (let i = 0; i < 4096; i++) {
      const s = createServer();
      squatters.push(s);
      await new Promise<void>((resolve) => {
        s.once('error', () => resolve());
        s.listen({ path: `\0railyard-check-uid-${UID_BASE + i}`, exclusive: true }, () => resolve());
      });
    }
    const w = await world(
      [
        'set +e',
        'echo "== claims"; ls /run/railyard-check-uids 2>&1; flock -n /run/railyard-check-uids/' + UID_BASE + ' true 2>&1; echo "flock=$?"',
        'echo "== listening"; grep -c "@railyard" /proc/net/unix',
        'exit 1',
      ].join('\n'),
      SMALL,
    );
    w.evil.openPr(1, { 'x.txt': 'x\n' });
    const attack = await land(w.server, EVIL, 1, BETA);
    const log = await checkLog(w.server, attack.testRunId!, BETA);
    expect(log).toContain('Permission denied');
    expect(log).toMatch(/^flock=[1-9]/m);
    await unharmed(w);
    // Only the squatter's own names are in the abstract namespace: the server listens on none.
    const abstract = readFileSync('/proc/net/unix', 'utf8').split('\n').filter((l) => l.includes('@railyard-check-uid-'));
    expect(abstract.length).toBe(squatters.filter((s) => s.listening).length);
  });

  it.each(noBwrap ? (['none'] as const) : (['none', 'bwrap'] as const))('a fork bomb (setsid) is killed at the process limit (%s)', async (sandbox) => {
    const w = await world('setsid sh -c "while :; do sleep 600 & done" & while :; do sleep 600 & done', [...SMALL, '--checks-sandbox', sandbox]);
    w.evil.openPr(1, { 'x.txt': 'x\n' });
    expect(await land(w.server, EVIL, 1, BETA)).toMatchObject({ state: 'failed', detail: 'test: check exceeded its process limit (64)' });
    await unharmed(w);
    expect(execFileSync('sh', ['-c', `pgrep -U ${UID_BASE} -c || true`], { encoding: 'utf8' }).trim()).toBe('0');
  });

  it.each(noBwrap ? (['none'] as const) : (['none', 'bwrap'] as const))('an allocation past the memory limit is killed, not the server (%s)', async (sandbox) => {
    const w = await world('/usr/bin/python3 -c "b = b\\"x\\" * (1 << 30); print(len(b))"', [...SMALL, '--checks-sandbox', sandbox]);
    w.evil.openPr(1, { 'x.txt': 'x\n' });
    expect(await land(w.server, EVIL, 1, BETA)).toMatchObject({ state: 'failed', detail: 'test: check exceeded its memory limit (256 MiB)' });
    await unharmed(w);
  });

  it.skipIf(noBwrap)("filling bwrap's /tmp stops at its size, and the check is killed", async () => {
    const w = await world('head -c 100M /dev/zero > /tmp/fill; sleep 600', [...SMALL, '--checks-sandbox', 'bwrap']);
    w.evil.openPr(1, { 'x.txt': 'x\n' });
    expect(await land(w.server, EVIL, 1, BETA)).toMatchObject({ state: 'failed', detail: 'test: check exceeded its /tmp limit (32 MiB)' });
    await unharmed(w);
  });

  it("filling the check's own directory is killed at the disk limit", async () => {
    const w = await world('cat /dev/zero > fill; sleep 600', SMALL);
    w.evil.openPr(1, { 'x.txt': 'x\n' });
    expect(await land(w.server, EVIL, 1, BETA)).toMatchObject({ state: 'failed', detail: 'test: check exceeded its disk limit (64 MiB)' });
    await unharmed(w);
  });

  it.each(noBwrap ? (['none'] as const) : (['none', 'bwrap'] as const))('no descriptor of the server reaches a check (%s)', async (sandbox) => {
    const dir = await tempDir('railyard-fd-');
    const secretFile = join(dir, 'root-only');
    const secret = `FD-SECRET-${randomBytes(8).toString('hex')}`;
    writeFileSync(secretFile, `${secret}\n`, { mode: 0o600 });
    // The server started as `railyard serve … 300<>root-only`.
    const wrap = ['bash', '-c', 'exec 300<>"$0"; exec "$@"', secretFile];
    const w = await world(`bash -c 'cat <&300; echo written >&300; ls /proc/self/fd'; echo "== end"`, ['--checks-sandbox', sandbox], { wrap });
    w.evil.openPr(1, { 'x.txt': 'x\n' });
    const attack = await land(w.server, EVIL, 1, BETA);
    const log = await checkLog(w.server, attack.testRunId!, BETA);
    expect(log).toContain('== end');
    expect(log).not.toContain(secret);
    expect(readFileSync(secretFile, 'utf8')).toBe(`${secret}\n`);
    // ls's own directory descriptor is 3; nothing above it.
    const fds = log.split('== end')[0]!.split('\n').filter((l) => /^\d+$/.test(l.trim())).map(Number);
    expect(fds.filter((fd) => fd > 3)).toEqual([]);
    await unharmed(w);
  });

  it.skipIf(noBwrap)('under bwrap a git root below /opt (mounted read-only) is masked: no other repository can be read', async () => {
    mkdirSync('/opt', { recursive: true });
    const gitRoot = join('/opt', `railyard-test-git-${randomBytes(4).toString('hex')}`);
    mkdirSync(gitRoot, { mode: 0o755 });
    chmodSync(gitRoot, 0o755);
    cleanups.push(() => rmSync(gitRoot, { recursive: true, force: true }));
    const secret = `ACME-CODE-${randomBytes(8).toString('hex')}`;
    const w = await world(
      `set +e; ls -R ${gitRoot} 2>&1 | head; git --git-dir=${gitRoot}/github.com/acme/web.git show main:railyard.json 2>&1; git --git-dir=${gitRoot}/github.com/acme/web.git log --all -p 2>&1 | head -50; echo "== end"`,
      ['--checks-sandbox', 'bwrap'],
      { gitRoot, acmeCheck: `echo ${secret} >/dev/null; test -f one.txt` },
    );
    w.evil.openPr(1, { 'x.txt': 'x\n' });
    const attack = await land(w.server, EVIL, 1, BETA);
    const log = await checkLog(w.server, attack.testRunId!, BETA);
    expect(log).toContain('== end');
    expect(log).not.toContain(secret);
    await unharmed(w);
  });

  it('in none mode nothing a check leaves in /tmp, /var/tmp or /dev/shm outlives it, nor reaches the next check', async () => {
    const tag = randomBytes(6).toString('hex');
    const secret = `ALPHA-TMP-${randomBytes(8).toString('hex')}`;
    // alpha's first check leaves a 0600 file in /tmp, as a build might.
    const w = await world(
      `set +e; cat /tmp/ry-leak-${tag} /dev/shm/ry-leak-${tag} 2>&1; for d in /tmp /var/tmp /dev/shm; do echo planted > $d/ry-plant-${tag}; chmod 666 $d/ry-plant-${tag}; done; echo "== end"`,
      ['--checks-sandbox', 'none'],
      { acmeCheck: `umask 077; echo ${secret} > /tmp/ry-leak-${tag}; echo ${secret} > /dev/shm/ry-leak-${tag}; test ! -e /tmp/ry-plant-${tag}` },
    );
    cleanups.push(() => {
      for (const d of ['/tmp', '/var/tmp', '/dev/shm']) for (const f of ['leak', 'plant']) rmSync(`${d}/ry-${f}-${tag}`, { force: true });
    });
    w.acme.openPr(2, { 'two.txt': '2\n' }, { title: 'Leaves a file in /tmp' });
    expect(await land(w.server, ACME, 2, ALPHA)).toMatchObject({ state: 'merged' });
    expect(existsSync(`/tmp/ry-leak-${tag}`)).toBe(false);
    expect(existsSync(`/dev/shm/ry-leak-${tag}`)).toBe(false);
    w.evil.openPr(1, { 'x.txt': 'x\n' });
    const attack = await land(w.server, EVIL, 1, BETA);
    const log = await checkLog(w.server, attack.testRunId!, BETA);
    expect(log).toContain('== end');
    expect(log).not.toContain(secret);
    for (const d of ['/tmp', '/var/tmp', '/dev/shm']) expect(existsSync(`${d}/ry-plant-${tag}`)).toBe(false);
    await unharmed(w);
  });

  it('checkouts work when the checks dir is on another filesystem than the git root', async () => {
    const mnt = await tempDir('railyard-xdev-');
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256m,mode=0755', 'tmpfs', mnt]);
    cleanups.push(() => execFileSync('umount', ['-l', mnt]));
    const w = await world('test -f x.txt', ['--checks-dir', mnt]);
    w.evil.openPr(1, { 'x.txt': 'x\n' });
    const evil = await land(w.server, EVIL, 1, BETA);
    expect(evil, evil.detail).toMatchObject({ state: 'merged' });
    await unharmed(w);
  });
});
