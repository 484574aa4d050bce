/**
 * Checks that cannot hurt, limits: a fork bomb, an allocation past the memory limit, a full /tmp
 * (bwrap) and a full check directory, each as beta's PR's check; the check is killed with a detail
 * naming the limit, alpha's PR lands, the server lives on (test/support/check-attacks.ts). Needs
 * root (checks as uids of their own, cgroups); the bwrap cases need bubblewrap.
 */
import { execFileSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import {
  BETA,
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

describe.skipIf(notRoot)(
  'a check over a limit is killed, naming it; the other organisation and the server are unharmed',
  () => {
    it.each(noBwrap ? (['none'] as const) : (['none', 'bwrap'] as const))(
      'a fork bomb (setsid) is killed at the process limit (%s)',
      async (sandbox) => {
        const w = await world('setsid sh -c "while :; do sleep 600 & done" & while :; do sleep 600 & done', [
          ...SMALL,
          '--checks-sandbox',
          sandbox,
        ]);
        w.evil.openPr(1, { 'x.txt': 'x\n' });
        expect(await land(w.server, EVIL, 1, BETA)).toMatchObject({
          state: 'failed',
          detail: 'test: check exceeded its process limit (64)',
        });
        await unharmed(w);
        // Nothing of it runs any more (a zombie left for the machine's init to reap runs nothing).
        const left = execFileSync('sh', ['-c', `ps -U ${UID_BASE} -o pid=,stat=,comm= || true`], {
          encoding: 'utf8',
        })
          .split('\n')
          .filter((line) => line.trim() !== '' && !/^\s*\d+\s+Z/.test(line));
        expect(left).toEqual([]);
      },
    );

    it.each(noBwrap ? (['none'] as const) : (['none', 'bwrap'] as const))(
      'an allocation past the memory limit is killed, not the server (%s)',
      async (sandbox) => {
        const w = await world('/usr/bin/python3 -c "b = b\\"x\\" * (1 << 30); print(len(b))"', [
          ...SMALL,
          '--checks-sandbox',
          sandbox,
        ]);
        w.evil.openPr(1, { 'x.txt': 'x\n' });
        expect(await land(w.server, EVIL, 1, BETA)).toMatchObject({
          state: 'failed',
          detail: 'test: check exceeded its memory limit (256 MiB)',
        });
        await unharmed(w);
      },
    );

    it.skipIf(noBwrap)("filling bwrap's /tmp stops at its size, and the check is killed", async () => {
      const w = await world('head -c 100M /dev/zero > /tmp/fill; sleep 600', [
        ...SMALL,
        '--checks-sandbox',
        'bwrap',
      ]);
      w.evil.openPr(1, { 'x.txt': 'x\n' });
      expect(await land(w.server, EVIL, 1, BETA)).toMatchObject({
        state: 'failed',
        detail: 'test: check exceeded its /tmp limit (32 MiB)',
      });
      await unharmed(w);
    });

    it("filling the check's own directory is killed at the disk limit", async () => {
      const w = await world('cat /dev/zero > fill; sleep 600', SMALL);
      w.evil.openPr(1, { 'x.txt': 'x\n' });
      expect(await land(w.server, EVIL, 1, BETA)).toMatchObject({
        state: 'failed',
        detail: 'test: check exceeded its disk limit (64 MiB)',
      });
      await unharmed(w);
    });
  },
);
