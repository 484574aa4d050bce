/**
 * Per-check limits: memory and processes through the kernel's cgroups (v2, or v1's `memory` and
 * `pids` hierarchies) where the server may write them, rlimits where not; the disk of the check's
 * own directory by measuring it while the check runs (and RLIMIT_FSIZE, so no single file grows past
 * it); bubblewrap's /tmp as a tmpfs of a fixed size (isolation.ts). Every check starts through a
 * small bash prelude that closes every descriptor above 2, sets `oom_score_adj` 1000 (the kernel's
 * OOM killer picks the check, never the server), lowers its CPU and I/O priority, joins the check's cgroups and sets its rlimits,
 * then drops to the check's uid and execs the check.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rmdir, statfs, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface CheckLimits {
  /** Memory of the check, all its processes together (MiB). */
  memoryMib: number;
  /** Processes (and threads) of the check at once. */
  processes: number;
  /** Size of each of bubblewrap's /tmp, /var/tmp and /dev/shm (MiB). */
  tmpMib: number;
  /** Disk of the check's own directory: its checkout, HOME and TMPDIR (MiB). */
  diskMib: number;
}

export const DEFAULT_CHECK_LIMITS: CheckLimits = {
  memoryMib: 4096,
  processes: 1024,
  tmpMib: 1024,
  diskMib: 20480,
};

export type LimitName = 'memory' | 'process' | 'disk' | 'tmp';

/** The detail of a check killed at a limit. */
export function limitDetail(limit: LimitName, limits: CheckLimits): string {
  switch (limit) {
    case 'memory':
      return `check exceeded its memory limit (${limits.memoryMib} MiB)`;
    case 'process':
      return `check exceeded its process limit (${limits.processes})`;
    case 'disk':
      return `check exceeded its disk limit (${limits.diskMib} MiB)`;
    case 'tmp':
      return `check exceeded its /tmp limit (${limits.tmpMib} MiB)`;
  }
}

// ------------------------------------------------------------------ cgroups

type Controller = 'memory' | 'pids';

/** Where this machine lets the server make a cgroup per check, per controller (null: rlimits instead). */
interface CgroupBases {
  version: 1 | 2;
  memory: string | null;
  pids: string | null;
}

let bases: Promise<CgroupBases | null> | null = null;

/** The server's own cgroup per hierarchy, from /proc/self/cgroup. */
function ownCgroups(): Map<string, string> {
  const out = new Map<string, string>();
  let text = '';
  try {
    text = readFileSync('/proc/self/cgroup', 'utf8');
  } catch {
    return out;
  }
  for (const line of text.split('\n')) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    for (const c of m[1]!.split(',')) out.set(c, m[2]!);
  }
  return out;
}

async function writable(dir: string): Promise<boolean> {
  const probe = path.join(dir, `railyard-probe-${process.pid}`);
  try {
    await mkdir(probe);
    await rmdir(probe);
    return true;
  } catch {
    return false;
  }
}

async function findBases(): Promise<CgroupBases | null> {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return null;
  const own = ownCgroups();
  if (existsSync('/sys/fs/cgroup/cgroup.controllers')) {
    // v2: the checks' cgroups go under the server's own, which must hand memory and pids down.
    const dir = path.join('/sys/fs/cgroup', own.get('') ?? '/');
    const sub = path.join(dir, 'cgroup.subtree_control');
    await writeFile(sub, '+memory +pids').catch(() => undefined);
    const enabled = await readFile(sub, 'utf8').catch(() => '');
    const ok = (await writable(dir)) ? dir : null;
    return {
      version: 2,
      memory: ok && enabled.includes('memory') ? ok : null,
      pids: ok && enabled.includes('pids') ? ok : null,
    };
  }
  const v1 = async (c: Controller): Promise<string | null> => {
    const mount = `/sys/fs/cgroup/${c}`;
    if (!existsSync(path.join(mount, 'cgroup.procs'))) return null;
    const dir = path.join(mount, own.get(c) ?? '/');
    return (await writable(dir)) ? dir : null;
  };
  return { version: 1, memory: await v1('memory'), pids: await v1('pids') };
}

function cgroupBases(): Promise<CgroupBases | null> {
  bases ??= findBases().catch(() => null);
  return bases;
}

/** How each limit is enforced here, one line each: `serve` prints them at start. */
export async function describeLimits(limits: CheckLimits, sandbox: 'none' | 'bwrap'): Promise<string[]> {
  const b = await cgroupBases();
  const v = b ? `cgroup v${b.version}` : '';
  return [
    b?.memory
      ? `memory ${limits.memoryMib} MiB per check (${v}; the kernel's OOM killer picks the check: oom_score_adj 1000)`
      : `memory ${limits.memoryMib} MiB per process only (RLIMIT_AS: no writable memory cgroup here), not per check; oom_score_adj 1000`,
    b?.pids
      ? `processes ${limits.processes} per check (${v})`
      : `processes ${limits.processes} per check uid (RLIMIT_NPROC: no writable pids cgroup here)${process.getuid?.() === 0 ? '' : ", counted with every process of the server's user"}`,
    sandbox === 'bwrap'
      ? `/tmp, /var/tmp, /dev/shm ${limits.tmpMib} MiB each (bubblewrap tmpfs)`
      : `/tmp not limited in --checks-sandbox none (files of a check there are removed after it; use bwrap for a size limit)`,
    `disk of the check's directory ${limits.diskMib} MiB (measured every second, and no file larger: RLIMIT_FSIZE)`,
  ];
}

/** One check's cgroups: joined by its prelude, watched while it runs, removed after. */
export interface CheckCgroups {
  /** The `cgroup.procs` files the prelude writes itself into. */
  procsFiles: string[];
  /** Which limit the kernel enforced so far (null: none). */
  exceeded(): Promise<LimitName | null>;
  /** Processes still in the check's cgroups. */
  alive(): Promise<boolean>;
  remove(): Promise<void>;
  /** Limits the cgroups do not hold (the prelude sets rlimits for them). */
  memoryByCgroup: boolean;
  pidsByCgroup: boolean;
}

function counter(text: string, key: string): number {
  const m = new RegExp(`^${key} (\\d+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

export async function createCheckCgroups(name: string, limits: CheckLimits): Promise<CheckCgroups> {
  const b = await cgroupBases();
  const dirs: Partial<Record<Controller, string>> = {};
  for (const c of ['memory', 'pids'] as const) {
    const base = b?.[c];
    if (!base) continue;
    const dir = path.join(base, name);
    await rmdir(dir).catch(() => undefined); // a stale one of a server killed mid-check (its processes are dead)
    try {
      await mkdir(dir);
      if (c === 'memory') {
        const bytes = String(limits.memoryMib * 1024 * 1024);
        if (b!.version === 2) {
          await writeFile(path.join(dir, 'memory.max'), bytes);
          await writeFile(path.join(dir, 'memory.swap.max'), '0').catch(() => undefined);
        } else {
          await writeFile(path.join(dir, 'memory.limit_in_bytes'), bytes);
          await writeFile(path.join(dir, 'memory.memsw.limit_in_bytes'), bytes).catch(() => undefined);
        }
      } else {
        await writeFile(path.join(dir, 'pids.max'), String(limits.processes));
      }
      dirs[c] = dir;
    } catch {
      await rmdir(dir).catch(() => undefined);
    }
  }
  if (b?.version === 2 && dirs.memory && dirs.pids && dirs.memory === dirs.pids) delete dirs.pids;
  const unique = [...new Set(Object.values(dirs))];
  const read = (f: string) => readFile(f, 'utf8').catch(() => '');
  return {
    procsFiles: unique.map((d) => path.join(d, 'cgroup.procs')),
    memoryByCgroup: dirs.memory !== undefined,
    pidsByCgroup:
      dirs.pids !== undefined || (b?.version === 2 && dirs.memory !== undefined && b.pids !== null),
    async exceeded() {
      if (dirs.memory) {
        const kills =
          b!.version === 2
            ? counter(await read(path.join(dirs.memory, 'memory.events')), 'oom_kill')
            : counter(await read(path.join(dirs.memory, 'memory.oom_control')), 'oom_kill');
        if (kills > 0) return 'memory';
      }
      const pidsDir = dirs.pids ?? (b?.version === 2 ? dirs.memory : undefined);
      if (pidsDir && counter(await read(path.join(pidsDir, 'pids.events')), 'max') > 0) return 'process';
      return null;
    },
    async alive() {
      for (const d of unique) if ((await read(path.join(d, 'cgroup.procs'))).trim() !== '') return true;
      return false;
    },
    async remove() {
      for (const d of unique) {
        for (let i = 0; i < 20; i++) {
          try {
            await rmdir(d);
            break;
          } catch {
            await new Promise((r) => setTimeout(r, 50));
          }
        }
      }
    },
  };
}

const TMPFS_MAGIC = 0x01021994;

/**
 * Whether one of bubblewrap's tmpfs (/tmp, /var/tmp, /dev/shm) of a check is full, seen through
 * `/proc/<pid>/root` of its processes: the kernel refused its writes at the size limit.
 */
export async function tmpFull(pids: readonly number[], tmpMib: number): Promise<boolean> {
  const size = tmpMib * 1024 * 1024;
  for (const pid of pids.slice(-4)) {
    for (const dir of ['tmp', 'var/tmp', 'dev/shm']) {
      const st = await statfs(`/proc/${pid}/root/${dir}`).catch(() => null);
      if (!st || st.type !== TMPFS_MAGIC || st.blocks * st.bsize > size + 65536) continue;
      if (st.bfree === 0) return true;
    }
  }
  return false;
}

/** The processes of a check: those of its cgroups, else of its uid. */
export async function processesOf(
  cgroups: Pick<CheckCgroups, 'procsFiles'>,
  uid: number | null,
): Promise<number[]> {
  const pids = new Set<number>();
  for (const f of cgroups.procsFiles) {
    for (const l of (await readFile(f, 'utf8').catch(() => '')).split('\n'))
      if (l.trim()) pids.add(Number(l));
  }
  if (pids.size === 0 && uid !== null) {
    const out = await run('pgrep', ['-U', String(uid)]).then(
      (r) => r.stdout,
      () => '',
    );
    for (const l of out.split('\n')) if (l.trim()) pids.add(Number(l));
  }
  return [...pids];
}

// ------------------------------------------------------------------ the prelude

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * `bash -c <prelude> … <file> <args>`: closes descriptors above 2, oom_score_adj 1000, joins the
 * cgroups, sets the rlimits the cgroups do not cover, then (as root) drops to `identity` with
 * setpriv, and execs the check.
 */
export function prelude(
  target: { file: string; args: string[] },
  limits: CheckLimits,
  cgroups: Pick<CheckCgroups, 'procsFiles' | 'memoryByCgroup' | 'pidsByCgroup'>,
  identity: { uid: number; gid: number } | null,
): { file: string; args: string[] } {
  const lines = [
    'for p in /proc/$$/fd/*; do n=${p##*/}; if [ "$n" -gt 2 ] 2>/dev/null; then eval "exec $n>&-"; fi; done',
    'echo 1000 > /proc/$$/oom_score_adj || exit 125',
    // Below the server (and its git for other organisations) for the CPU and the disk.
    'renice -n 10 -p $$ >/dev/null 2>&1; ionice -c 2 -n 7 -p $$ >/dev/null 2>&1',
    ...cgroups.procsFiles.map((f) => `echo $$ > ${quote(f)} || exit 125`),
    `ulimit -f ${limits.diskMib * 1024} || exit 125`,
  ];
  if (!cgroups.pidsByCgroup) lines.push(`ulimit -u ${limits.processes} || exit 125`);
  // Without a memory cgroup, each process at most the limit in address space (a weaker bound).
  if (!cgroups.memoryByCgroup) lines.push(`ulimit -v ${limits.memoryMib * 1024} || exit 125`);
  const drop = identity
    ? ['setpriv', `--reuid=${identity.uid}`, `--regid=${identity.gid}`, '--clear-groups', '--']
    : [];
  lines.push('exec "$@"');
  return {
    file: 'bash',
    args: ['-c', lines.join('\n'), 'railyard-check', ...drop, target.file, ...target.args],
  };
}
