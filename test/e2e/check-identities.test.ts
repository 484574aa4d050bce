/**
 * Checks that cannot hurt, identities: squatted uid names, descriptors of the server, a git root
 * under /opt (bwrap), files left in /tmp (none) and checkouts across filesystems, each as beta's
 * PR's check; alpha's PR lands, the server lives on (test/support/check-attacks.ts). Needs root;
 * the bwrap cases need bubblewrap.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../support/tmp.js';
import {
  ACME,
  ALPHA,
  BETA,
  checkLog,
  cleanups,
  EVIL,
  land,
  noBwrap,
  notRoot,
  runCleanups,
  SMALL,
  UID_BASE,
  unharmed,
  world,
} from '../support/check-attacks.js';

afterEach(runCleanups);

describe.skipIf(notRoot)('a check reaches no identity, descriptor, repository or file of another', () => {
  it.each(noBwrap ? (['none'] as const) : (['none', 'bwrap'] as const))(
    'no descriptor of the server reaches a check (%s)',
    async (sandbox) => {
      const dir = await tempDir('railyard-fd-');
      const secretFile = join(dir, 'root-only');
      const secret = `FD-SECRET-${randomBytes(8).toString('hex')}`;
      writeFileSync(secretFile, `${secret}\n`, { mode: 0o600 });
      // The server started as `railyard serve … 300<>root-only`.
      const wrap = ['bash', '-c', 'exec 300<>"$0"; exec "$@"', secretFile];
      const w = await world(
        `bash -c 'cat <&300; echo written >&300; ls /proc/self/fd'; echo "== end"`,
        ['--checks-sandbox', sandbox],
        { wrap },
      );
      w.evil.openPr(1, { 'x.txt': 'x\n' });
      const attack = await land(w.server, EVIL, 1, BETA);
      const log = await checkLog(w.server, attack.testRunId!, BETA);
      expect(log).toContain('== end');
      expect(log).not.toContain(secret);
      expect(readFileSync(secretFile, 'utf8')).toBe(`${secret}\n`);
      // ls's own directory descriptor is 3; nothing above it.
      const fds = log
        .split('== end')[0]!
        .split('\n')
        .filter((l) => /^\d+$/.test(l.trim()))
        .map(Number);
      expect(fds.filter((fd) => fd > 3)).toEqual([]);
      await unharmed(w);
    },
  );

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
        'echo "== claims"; ls /run/railyard-check-uids 2>&1; flock -n /run/railyard-check-uids/' +
          UID_BASE +
          ' true 2>&1; echo "flock=$?"',
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
    const abstract = readFileSync('/proc/net/unix', 'utf8')
      .split('\n')
      .filter((l) => l.includes('@railyard-check-uid-'));
    expect(abstract.length).toBe(squatters.filter((s) => s.listening).length);
  });

  it.skipIf(noBwrap)(
    'under bwrap a git root below /opt (mounted read-only) is masked: no other repository can be read',
    async () => {
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
    },
  );

  it('in none mode nothing a check leaves in /tmp, /var/tmp or /dev/shm outlives it, nor reaches the next check', async () => {
    const tag = randomBytes(6).toString('hex');
    const secret = `ALPHA-TMP-${randomBytes(8).toString('hex')}`;
    // alpha's first check leaves a 0600 file in /tmp, as a build might.
    const w = await world(
      `set +e; cat /tmp/ry-leak-${tag} /dev/shm/ry-leak-${tag} 2>&1; for d in /tmp /var/tmp /dev/shm; do echo planted > $d/ry-plant-${tag}; chmod 666 $d/ry-plant-${tag}; done; echo "== end"`,
      ['--checks-sandbox', 'none'],
      {
        acmeCheck: `umask 077; echo ${secret} > /tmp/ry-leak-${tag}; echo ${secret} > /dev/shm/ry-leak-${tag}; test ! -e /tmp/ry-plant-${tag}`,
      },
    );
    cleanups.push(() => {
      for (const d of ['/tmp', '/var/tmp', '/dev/shm'])
        for (const f of ['leak', 'plant']) rmSync(`${d}/ry-${f}-${tag}`, { force: true });
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
