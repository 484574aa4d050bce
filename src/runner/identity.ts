/**
 * The uids checks run as when the server runs as root. A uid is claimed machine-wide with `flock`
 * on a file in a directory only root can write (`/run/railyard-check-uids`, mode 0700), held by a
 * small `flock` process of the server's for as long as the check and its clean-up last: no check
 * and no other user can take a uid away, and nothing listens for a check to connect to. The claim
 * file says whether the uid is in use; a uid whose last holder died mid-check is cleaned (its
 * processes killed, its files in the shared temporary directories removed) before it is used
 * again, so nothing a check leaves outside its own directory reaches a later check.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import type { Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** First uid (and gid) of the pool checks run as when the server runs as root. */
export const DEFAULT_CHECK_UID_BASE = 61184;
const POOL_SIZE = 4096;

/** Directories every user may write: what a check leaves there is removed once it ended. */
export const SHARED_TMP_DIRS = ['/tmp', '/var/tmp', '/dev/shm', '/run/lock', '/var/lock'];

export interface CheckIdentity {
  uid: number;
  gid: number;
  /** Marks the uid clean (its processes and files gone) and lets it go. */
  release(): void;
}

const usedSlots = new Set<number>();

/** Where claims live: root's, 0700. Refuses a directory someone else made or opened up. */
export function claimsDir(): string {
  const dir = existsSync('/run') ? '/run/railyard-check-uids' : path.join(os.tmpdir(), 'railyard-check-uids');
  try {
    mkdirSync(dir, { mode: 0o700 });
    chmodSync(dir, 0o700);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const st = lstatSync(dir);
  if (!st.isDirectory() || st.uid !== 0 || (st.mode & 0o077) !== 0) {
    throw new Error(
      `checks: ${dir}, where check uids are claimed, must be a directory of root's with mode 0700: remove it and start again`,
    );
  }
  return dir;
}

/** Holds an exclusive lock on `file` in a child `flock` process until its stdin closes (or the server dies); null when taken. */
function lock(file: string): Promise<ChildProcess | null> {
  return new Promise((resolve) => {
    const child = spawn(
      'flock',
      ['--nonblock', '--conflict-exit-code', '75', file, 'sh', '-c', 'echo held; exec cat >/dev/null'],
      {
        stdio: ['pipe', 'pipe', 'ignore'],
        env: { PATH: '/usr/bin:/bin:/usr/sbin:/sbin' },
      },
    );
    child.once('error', () => resolve(null));
    child.once('exit', () => resolve(null));
    child.stdout!.once('data', () => {
      child.stdout!.destroy();
      child.unref();
      (child.stdin as unknown as Socket).unref();
      resolve(child);
    });
  });
}

/** Kills every process of `uid` (what escaped its process group, e.g. with setsid), until none is left running. */
export async function killAllOf(identity: { uid: number; gid: number }): Promise<void> {
  for (let round = 0; round < 20; round++) {
    await new Promise<void>((resolve) => {
      const child = spawn('sh', ['-c', 'kill -KILL -1'], {
        uid: identity.uid,
        gid: identity.gid,
        stdio: 'ignore',
        env: { PATH: '/usr/bin:/bin' },
      });
      child.once('error', () => resolve());
      child.once('exit', () => resolve());
    });
    if (!(await hasProcesses(identity.uid))) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Whether `uid` still has a process that is not a zombie. A zombie runs nothing and holds nothing;
 * one whose parent died first (bubblewrap's inner process when the outer one is killed) waits for
 * the machine's init to reap it, which takes seconds where init is a container's own process.
 */
async function hasProcesses(uid: number): Promise<boolean> {
  const pids = await readdir('/proc').catch(() => [] as string[]);
  for (const pid of pids) {
    if (!/^\d+$/.test(pid)) continue;
    const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
    const realUid = /^Uid:\s+(\d+)/m.exec(status)?.[1];
    if (realUid === String(uid) && !/^State:\s+Z/m.test(status)) return true;
  }
  return false;
}

/** Removes every file `uid` owns in the shared temporary directories (the check is dead by now). */
export async function removeFilesOf(uid: number): Promise<void> {
  const roots = SHARED_TMP_DIRS.filter((d) => existsSync(d));
  if (roots.length === 0) return;
  await run('find', [...roots, '-xdev', '-user', String(uid), '-delete'], { maxBuffer: 1024 * 1024 }).catch(
    () => undefined,
  );
}

/**
 * A uid of its own for one check while the server runs as root (null otherwise: the check runs as
 * the server's user). `cleanStale` runs before a uid is used whose last holder did not mark it
 * clean (a server killed mid-check).
 */
export async function acquireIdentity(
  uidBase = DEFAULT_CHECK_UID_BASE,
  cleanStale?: (uid: number) => Promise<void>,
): Promise<CheckIdentity | null> {
  if (process.getuid?.() !== 0) return null;
  const dir = claimsDir();
  for (let slot = 0; slot < POOL_SIZE; slot++) {
    if (usedSlots.has(slot)) continue;
    usedSlots.add(slot);
    const id = uidBase + slot;
    const file = path.join(dir, String(id));
    const held = await lock(file);
    if (!held) {
      usedSlots.delete(slot);
      continue;
    }
    let state = '';
    try {
      state = readFileSync(file, 'utf8');
    } catch {
      /* new */
    }
    if (state.startsWith('in use')) {
      await killAllOf({ uid: id, gid: id });
      await removeFilesOf(id);
      await cleanStale?.(id);
    }
    writeFileSync(file, `in use by pid ${process.pid}\n`);
    return {
      uid: id,
      gid: id,
      release: () => {
        try {
          writeFileSync(file, '');
        } catch {
          /* the claims directory went away: nothing to mark */
        }
        held.stdin?.end();
        usedSlots.delete(slot);
      },
    };
  }
  throw new Error(`checks: all ${POOL_SIZE} uids from ${uidBase} are in use`);
}
