/**
 * What the server holds open: at most `--max-connections` client connections (Node closes the
 * ones past it as soon as they are accepted), and as many descriptors as the system allows it.
 * Node raises the soft open-files limit (RLIMIT_NOFILE) to the hard one when it starts; where that
 * did not happen, `prlimit` (util-linux) raises it for this process. Out of descriptors anyway, a
 * spawn or an open fails that one operation (src/git/exec.ts, runner), never the process.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Server } from 'node:net';

/** `--max-connections` default (the flag in commands/serve.ts says it too). */
export const DEFAULT_MAX_CONNECTIONS = 4096;

export interface OpenFilesLimit {
  soft: number;
  hard: number;
}

/** This process's RLIMIT_NOFILE, read from /proc (null where there is no /proc). */
export function openFilesLimit(pid: number | 'self' = 'self'): OpenFilesLimit | null {
  try {
    const line = readFileSync(`/proc/${pid}/limits`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const m = line && /^Max open files\s+(\S+)\s+(\S+)/.exec(line);
    if (!m) return null;
    const n = (s: string) => (s === 'unlimited' ? Number.POSITIVE_INFINITY : Number(s));
    return { soft: n(m[1]!), hard: n(m[2]!) };
  } catch {
    return null;
  }
}

/**
 * Raises the soft open-files limit to the hard one if it is lower (with `prlimit`; Node has no
 * setrlimit). Answers the limit in force after, and a note when it could not be raised.
 */
export function raiseOpenFilesLimit(): { limit: OpenFilesLimit | null; note: string | null } {
  const before = openFilesLimit();
  if (!before || before.soft >= before.hard) return { limit: before, note: null };
  const hard = Number.isFinite(before.hard) ? String(before.hard) : 'unlimited';
  const r = spawnSync('prlimit', ['--pid', String(process.pid), `--nofile=${hard}:${hard}`], {
    stdio: 'ignore',
    timeout: 5_000,
  });
  const after = openFilesLimit();
  if (after && after.soft >= after.hard) return { limit: after, note: null };
  const why = r.error
    ? `prlimit: ${(r.error as NodeJS.ErrnoException).code ?? r.error.message}`
    : `prlimit exited ${r.status}`;
  return {
    limit: after,
    note: `the soft open-files limit stays ${after?.soft ?? before.soft} (hard ${hard}; ${why}): raise it with \`ulimit -n\` before starting`,
  };
}

/**
 * Applies `--max-connections` to the listener: connections past it are closed at once. An accept
 * that fails (out of descriptors: libuv then accepts and closes the waiting connections itself) is
 * logged, never an unhandled 'error' event; a failed listen is the listen call's to report.
 */
export function limitConnections(server: Server, max: number, log: (message: string) => void): void {
  server.maxConnections = max;
  server.on('error', (error: NodeJS.ErrnoException) => {
    if (error.syscall !== 'listen') log(`accepting a connection failed: ${error.message}`);
  });
}
