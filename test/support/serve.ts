/** Runs the real `railyard serve` binary on 127.0.0.1 for end-to-end tests. */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync } from 'node:fs';
import { BIN } from './cli.js';
import { tempDirSync } from './tmp.js';

export interface ServeProcess {
  child: ChildProcess;
  /** `http://127.0.0.1:PORT/v1` */
  url: string;
  /** Everything printed so far. */
  output(): { stdout: string; stderr: string };
  /** Resolves with the exit code (null after a signal). */
  exit: Promise<number | null>;
  /** SIGKILL unless it already exited; waits for the exit. */
  kill(): Promise<void>;
  /** SIGTERM (a graceful close), SIGKILL if it has not exited after `graceMs`; waits for the exit. */
  stop(graceMs?: number): Promise<void>;
}

export interface SpawnOptions {
  /** Another build's `bin/run.js` (default: this checkout's). */
  bin?: string;
  /** Arguments for node itself, before the script (e.g. `--cpu-prof`). */
  nodeArgs?: string[];
  /** A command that execs node with the arguments it is given (e.g. `['prlimit', '--nofile=256:256']`, or a shell opening more descriptors first). */
  wrapper?: string[];
}

/**
 * `--checks-dir` in a temp dir of the test for a `--git-root` server that has none: its checks'
 * directories go there instead of `<os tmp>/railyard-checks-<hash>`, which a killed server leaves
 * behind. Mode 0711, as the OS temp dir lets checks running as uids of their own through.
 */
export function withChecksDir(args: string[]): string[] {
  if (!args.includes('--git-root') || args.some((a) => a === '--checks-dir' || a.startsWith('--checks-dir=')))
    return args;
  const dir = tempDirSync('railyard-checks-parent-');
  chmodSync(dir, 0o711);
  return [...args, '--checks-dir', dir];
}

/**
 * Runs the real `railyard serve` (the built binary) on 127.0.0.1 and a free port; resolves once it
 * listens. Pass `--data-dir` and `--sandbox` (or `--git-root`) in `args` (a `--git-root` server
 * gets a `--checks-dir` in the test's temp dirs: withChecksDir). Kill it in the test's cleanup.
 */
export function spawnServe(
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
  options: SpawnOptions = {},
): Promise<ServeProcess> {
  const argv = [
    process.execPath,
    ...(options.nodeArgs ?? []),
    options.bin ?? BIN,
    'serve',
    '--port',
    '0',
    ...withChecksDir(args),
  ];
  const [file, ...rest] = [...(options.wrapper ?? []), ...argv] as [string, ...string[]];
  const child = spawn(file, rest, {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const kill = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exit;
  };
  const stop = async (graceMs = 10_000) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exit;
    clearTimeout(timer);
  };
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const m = /Railyard API listening on (http:\/\/127\.0\.0\.1:(\d+)\/v1)\n/.exec(stdout);
      if (m && m[2] !== '0')
        resolve({ child, url: m[1], output: () => ({ stdout, stderr }), exit, kill, stop });
    });
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    void exit.then((code) =>
      reject(new Error(`serve exited (${code}) before it was ready: ${stdout} ${stderr}`)),
    );
  });
}
