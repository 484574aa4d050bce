/** Runs a test run's checks (the git forge's CI): the commands of railyard.json, isolated when a sandbox is set, and their verdicts. */
import { execFile, spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { appendFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { git } from '../git/exec.js';
import { ChecksConfigError } from '../checks/config.js';
import {
  acquireIdentity,
  checkCommand,
  checkEnv,
  createCheckDir,
  DEFAULT_CHECK_OUTPUT_BYTES,
  DEFAULT_CHECK_TIMEOUT_MS,
  killAllOf,
  removeFilesOf,
  unreachableBy,
  type CheckDir,
  type CheckIdentity,
  type CheckIsolationOptions,
} from './isolation.js';
import {
  createCheckCgroups,
  DEFAULT_CHECK_LIMITS,
  limitDetail,
  prelude,
  processesOf,
  tmpFull,
  type CheckCgroups,
  type LimitName,
} from './limits.js';
import { collectReports, type CheckReport } from './reports.js';

export type CheckOutcome = 'success' | 'failure' | 'timed_out' | 'cancelled';

export interface CheckResult {
  outcome: CheckOutcome;
  /** Exit code of `sh -c`; null when it was killed by a signal or never started. */
  exitCode: number | null;
  /** Time the command ran (0 when it never started). */
  durationMs: number;
  /** The combined stdout+stderr of the check (always written, also for checks that never ran). */
  logPath: string;
  /** The test reports the check declares, read from its worktree once it ended (./reports.ts); absent when it declares none. */
  reports?: CheckReport[];
  /** Why the runner stopped it, when it did at one of its limits (`check exceeded its memory limit (4096 MiB)`). */
  detail?: string;
}

export interface RunChecksOptions {
  /** Bare repository holding `sha`. */
  repoDir: string;
  /** The test commit. */
  sha: string;
  /** Every check of the configuration: status name → shell command. */
  checks: Record<string, string>;
  /** Statuses to run (the queue's requiredStatuses); null = all checks. */
  required: readonly string[] | null;
  /** Deadline for the whole run, from the call (0 = none). Checks still running are killed. */
  timeoutMs: number;
  /** Directory for the logs (created); one `<status>.log` per check. */
  logDir: string;
  /** Abort to cancel: running checks are killed, the others never start. */
  signal?: AbortSignal;
  /** Checks run at once (default: the machine's parallelism). */
  concurrency?: number;
  /** Stop the other checks as soon as one fails (they end `cancelled`). Default false. */
  failFast?: boolean;
  /** Between SIGTERM and SIGKILL to the check's process group (default 2000 ms). */
  killGraceMs?: number;
  /**
   * Where each check's directory (clone of the commit, HOME, TMPDIR) goes (default: the OS temp
   * dir). Never the data dir; when checks run as their own uid, it must be reachable by others (0711).
   */
  worktreeParent?: string;
  /** Per check: globs of the test reports it writes, read after it ran (railyard.json `reports`). */
  reports?: Record<string, readonly string[]>;
  /** What railyard.json declares (`env`); the rest of the environment is an allowlist (isolation.ts). */
  env?: Record<string, string>;
  /** Sandbox, uid pool and hidden paths (isolation.ts). */
  isolation?: CheckIsolationOptions;
  /** Wall-clock limit of one check (default 1 hour; 0 = none): it ends `timed_out`. */
  checkTimeoutMs?: number;
  /** Output kept per check (default 16 MiB): the rest is cut, with a note in the log. */
  maxOutputBytes?: number;
  onCheckStarted?: (name: string, info: { logPath: string }) => void;
  onCheckFinished?: (name: string, result: CheckResult) => void;
}

export interface RunChecksResult {
  /** One entry per required check, in configuration order. */
  results: Record<string, CheckResult>;
  /** Every required check succeeded. */
  passed: boolean;
  /** The run hit `timeoutMs`. */
  timedOut: boolean;
  /** The run was cancelled through `signal`. */
  cancelled: boolean;
}

/**
 * The checks a run must pass: all of `checks` when `required` is null, else `required` (in
 * configuration order). Throws ChecksConfigError START_TEST_RUN_CONFIG_MISSING_REQUIRED_STATUSES
 * naming the required statuses without a check, or START_TEST_RUN_NO_REQUIRED_STATUSES when
 * nothing would run.
 */
export function resolveRequiredChecks(
  checks: Record<string, string>,
  required: readonly string[] | null,
): string[] {
  const names = Object.keys(checks);
  if (required !== null) {
    const missing = [...new Set(required)].filter((r) => !Object.hasOwn(checks, r));
    if (missing.length > 0) {
      throw new ChecksConfigError(
        'START_TEST_RUN_CONFIG_MISSING_REQUIRED_STATUSES',
        `requiredStatuses: ${missing.map((m) => `"${m}"`).join(', ')} ${missing.length === 1 ? 'has' : 'have'} no check in railyard.json (checks: ${names.join(', ') || 'none'})`,
        missing,
      );
    }
  }
  const selected = required === null ? names : names.filter((n) => required.includes(n));
  if (selected.length === 0) {
    throw new ChecksConfigError('START_TEST_RUN_NO_REQUIRED_STATUSES', 'requiredStatuses: no status to run');
  }
  return selected;
}

/** The log file of each check: its name made safe for a file name, numbered when two collide. */
export function logFileNames(names: readonly string[]): Map<string, string> {
  const used = new Set<string>();
  const out = new Map<string, string>();
  for (const name of names) {
    const base =
      name
        .replace(/[^A-Za-z0-9._-]+/g, '_')
        .replace(/^\.+/, '_')
        .slice(0, 100) || 'check';
    let file = `${base}.log`;
    for (let i = 2; used.has(file); i++) file = `${base}-${i}.log`;
    used.add(file);
    out.set(name, file);
  }
  return out;
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    /* the group is gone already */
  }
}

type StopReason = 'timeout' | 'cancel' | 'failFast';
type CheckStop = StopReason | 'checkTimeout' | 'limit';

let cgroupSeq = 0;

const outcomeOfStop: Record<CheckStop, CheckOutcome> = {
  timeout: 'timed_out',
  cancel: 'cancelled',
  failFast: 'cancelled',
  checkTimeout: 'timed_out',
  limit: 'failure',
};

/** Disk used by `dir` in MiB (null when it cannot be measured), and how long measuring took. */
async function diskUsedMib(dir: string): Promise<{ mib: number | null; ms: number }> {
  const started = Date.now();
  const mib = await new Promise<number | null>((resolve) => {
    execFile('du', ['-s', '-k', '-x', dir], { maxBuffer: 1024 * 1024 }, (_error, stdout) => {
      const kib = Number(/^(\d+)/.exec(String(stdout))?.[1]);
      resolve(Number.isFinite(kib) ? kib / 1024 : null);
    });
  });
  return { mib, ms: Date.now() - started };
}

/**
 * Run the required checks of a test commit. Each check runs as `sh -c <command>` in its own
 * temporary worktree of `sha` (removed afterwards, whatever happened) and in its own process
 * group, so a timeout or cancel kills everything it started (SIGTERM, then SIGKILL after
 * `killGraceMs`). Output goes to `<logDir>/<status>.log` as it is produced.
 *
 * Rejects only for setup problems: ChecksConfigError (missing/no required statuses) or an
 * unknown `sha`. Check failures, timeouts and cancellation are results, not exceptions.
 */
export async function runChecks(opts: RunChecksOptions): Promise<RunChecksResult> {
  const names = resolveRequiredChecks(opts.checks, opts.required);
  await git(opts.repoDir, ['cat-file', '-e', `${opts.sha}^{commit}`]).catch(() => {
    throw new Error(`sha: ${opts.sha} is not a commit of ${opts.repoDir}`);
  });
  // Logs may hold secrets a check printed: the owner alone reads them (0700 directories, 0600 files).
  await mkdir(opts.logDir, { recursive: true, mode: 0o700 });
  const files = logFileNames(names);
  const grace = opts.killGraceMs ?? 2000;
  const limit = Math.max(1, opts.concurrency ?? os.availableParallelism());

  // One stop signal for the whole run: timeout, cancel or fail-fast, whichever comes first.
  let stopped: StopReason | null = null;
  const stopListeners = new Set<(r: StopReason) => void>();
  const stop = (reason: StopReason): void => {
    if (stopped) return;
    stopped = reason;
    for (const l of stopListeners) l(reason);
  };
  const onAbort = (): void => stop('cancel');
  if (opts.signal?.aborted) stop('cancel');
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  const deadline = opts.timeoutMs > 0 ? setTimeout(() => stop('timeout'), opts.timeoutMs) : null;

  const results: Record<string, CheckResult> = {};

  const notRun = async (name: string, logPath: string, reason: StopReason): Promise<CheckResult> => {
    await appendFile(
      logPath,
      `[railyard] ${name}: not started (${reason === 'timeout' ? 'testing timeout reached' : 'run cancelled'})\n`,
      { mode: 0o600 },
    );
    return { outcome: outcomeOfStop[reason], exitCode: null, durationMs: 0, logPath };
  };

  const isolation = opts.isolation ?? {};
  const checkTimeout = opts.checkTimeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS;
  const maxOutput = opts.maxOutputBytes ?? DEFAULT_CHECK_OUTPUT_BYTES;
  const parentDir = opts.worktreeParent ?? isolation.parentDir ?? os.tmpdir();
  const limits = { ...DEFAULT_CHECK_LIMITS, ...isolation.limits };

  const runOne = async (name: string): Promise<CheckResult> => {
    const logPath = path.join(opts.logDir, files.get(name)!);
    if (stopped) return notRun(name, logPath, stopped);
    let identity: CheckIdentity | null = null;
    let dir: CheckDir | undefined;
    let cgroups: CheckCgroups | undefined;
    try {
      identity = await acquireIdentity(isolation.uidBase);
      const unreachable = identity ? unreachableBy(parentDir, identity.uid) : null;
      if (unreachable) throw new Error(unreachable);
      dir = await createCheckDir(parentDir, opts.repoDir, opts.sha, identity);
      cgroups = await createCheckCgroups(
        `railyard-check-${identity ? identity.uid : `${process.pid}-${++cgroupSeq}`}`,
        limits,
      );
    } catch (err) {
      await dir?.remove();
      identity?.release();
      await appendFile(
        logPath,
        `[railyard] ${name}: could not prepare a checkout of ${opts.sha}: ${(err as Error).message}\n`,
        { mode: 0o600 },
      );
      return { outcome: 'failure', exitCode: null, durationMs: 0, logPath };
    }
    try {
      if (stopped) return await notRun(name, logPath, stopped);
      const log = createWriteStream(logPath, { mode: 0o600 });
      // A log that cannot be opened or written (EMFILE) loses the output, never the process.
      log.on('error', () => undefined);
      const logClosed = new Promise<void>((resolve) => log.once('close', () => resolve()));
      const started = Date.now();
      const sandbox = isolation.sandbox ?? 'none';
      const command = checkCommand(sandbox, dir, opts.checks[name]!, isolation.hide, limits.tmpMib);
      // Started as the server's user: the prelude closes other descriptors, joins the cgroups, then drops to the check's uid.
      const { file, args } = prelude(command, limits, cgroups, identity);
      const child = spawn(file, args, {
        cwd: dir.work,
        detached: true, // own process group: kill(-pid) reaches every descendant
        stdio: ['ignore', 'pipe', 'pipe'],
        env: checkEnv({ home: dir.home, tmp: dir.tmp, sha: opts.sha, check: name }, opts.env),
      });
      // Output as it comes, up to the limit; past it the check goes on and its output is dropped.
      let written = 0;
      let cut = false;
      const onData = (chunk: Buffer): void => {
        if (cut) return;
        if (written + chunk.length > maxOutput) {
          log.write(chunk.subarray(0, maxOutput - written));
          log.write(
            `\n[railyard] ${name}: output cut at ${maxOutput} bytes (the per-check output limit); the check goes on\n`,
          );
          cut = true;
          return;
        }
        written += chunk.length;
        log.write(chunk);
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      const streamsDone = Promise.all(
        [child.stdout, child.stderr].map((s) =>
          s ? new Promise<void>((resolve) => s.once('close', () => resolve())) : undefined,
        ),
      );
      opts.onCheckStarted?.(name, { logPath });
      const pid = child.pid;
      let stopReason: CheckStop | null = null;
      let killTimer: NodeJS.Timeout | null = null;
      const onStop = (reason: CheckStop): void => {
        if (stopReason) return;
        stopReason = reason;
        if (pid === undefined) return;
        killGroup(pid, 'SIGTERM');
        killTimer = setTimeout(() => killGroup(pid, 'SIGKILL'), grace);
      };
      stopListeners.add(onStop);
      if (stopped) onStop(stopped);
      const ownDeadline = checkTimeout > 0 ? setTimeout(() => onStop('checkTimeout'), checkTimeout) : null;
      // The limits the kernel enforces (cgroups) and the one measured (disk), looked at while it runs.
      let overLimit: LimitName | null = null;
      const atLimit = (limit: LimitName): void => {
        overLimit ??= limit;
        onStop('limit');
      };
      let watching = true;
      const checkDir = dir;
      const watch = (async () => {
        let nextDisk = 0;
        while (watching && !stopReason) {
          const hit = await cgroups!.exceeded();
          if (hit) return atLimit(hit);
          if (Date.now() >= nextDisk) {
            const used = await diskUsedMib(checkDir.dir);
            if (used.mib !== null && used.mib >= limits.diskMib) return atLimit('disk');
            nextDisk = Date.now() + Math.max(1000, used.ms * 10);
            if (
              sandbox === 'bwrap' &&
              (await tmpFull(await processesOf(cgroups!, identity?.uid ?? null), limits.tmpMib))
            )
              return atLimit('tmp');
          }
          await new Promise((r) => setTimeout(r, 250));
        }
      })();
      const { code, error } = await new Promise<{ code: number | null; error?: Error }>((resolve) => {
        child.once('error', (e) => resolve({ code: null, error: e }));
        child.once('exit', (c) => resolve({ code: c }));
      });
      const durationMs = Date.now() - started;
      watching = false;
      await watch;
      // Killed by the kernel at a limit: the memory cgroup's OOM kill, or a file past the disk limit.
      overLimit ??=
        (await cgroups.exceeded()) ??
        (child.signalCode === 'SIGXFSZ' ||
        code === 128 + 25 ||
        ((await diskUsedMib(dir.dir)).mib ?? 0) >= limits.diskMib
          ? 'disk'
          : null);
      stopListeners.delete(onStop);
      if (killTimer) clearTimeout(killTimer);
      if (ownDeadline) clearTimeout(ownDeadline);
      // Whatever the check left running in its group (background jobs, a child ignoring SIGTERM),
      // and with a uid of its own, whatever left the group (setsid, daemons).
      if (pid !== undefined) killGroup(pid, 'SIGKILL');
      if (identity) await killAllOf(identity);
      // Output still buffered in the pipes (a background job holding them is dead by now).
      await Promise.race([streamsDone, new Promise((r) => setTimeout(r, 1000))]);
      child.stdout?.destroy();
      child.stderr?.destroy();
      log.end();
      await logClosed;
      const reason = stopReason as CheckStop | null;
      const limitHit = overLimit as LimitName | null;
      const detail = limitHit ? limitDetail(limitHit, limits) : undefined;
      const outcome: CheckOutcome = reason
        ? outcomeOfStop[reason]
        : detail
          ? 'failure'
          : code === 0
            ? 'success'
            : 'failure';
      const why =
        detail ??
        (reason === 'checkTimeout'
          ? `the per-check limit of ${Math.round(checkTimeout / 1000)} s reached`
          : reason === 'timeout'
            ? 'testing timeout reached'
            : 'run cancelled');
      const how =
        detail && !reason
          ? `failure (${detail}; exit code ${code})`
          : error
            ? `could not start: ${error.message}`
            : reason
              ? `${outcome} (${why})`
              : `${outcome} (exit code ${code})`;
      await appendFile(logPath, `\n[railyard] ${name}: ${how} after ${durationMs} ms\n`);
      const declared = opts.reports?.[name];
      const reports = declared?.length ? await collectReports(dir.work, declared).catch(() => []) : undefined;
      return {
        outcome,
        exitCode: reason ? null : code,
        durationMs,
        logPath,
        ...(reports ? { reports } : {}),
        ...(detail ? { detail } : {}),
      };
    } finally {
      // Nothing of it outlives it: its files in the shared temporary directories go too (after its
      // reports were read: its own directory may be among them).
      if (identity) await removeFilesOf(identity.uid);
      await cgroups?.remove();
      await dir.remove();
      identity?.release();
    }
  };

  try {
    const queue = [...names];
    const worker = async (): Promise<void> => {
      for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
        const result = await runOne(name);
        results[name] = result;
        opts.onCheckFinished?.(name, result);
        if (opts.failFast && result.outcome === 'failure') stop('failFast');
      }
    };
    await Promise.all(Array.from({ length: Math.min(limit, names.length) }, worker));
  } finally {
    if (deadline) clearTimeout(deadline);
    opts.signal?.removeEventListener('abort', onAbort);
  }
  const ordered: Record<string, CheckResult> = {};
  for (const n of names) ordered[n] = results[n]!;
  return {
    results: ordered,
    passed: names.every((n) => ordered[n]!.outcome === 'success'),
    timedOut: stopped === 'timeout',
    cancelled: stopped === 'cancel',
  };
}
