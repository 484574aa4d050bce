/**
 * What the end-to-end harnesses of the remote forges (test/e2e/github-harness.ts,
 * gitlab-harness.ts) share: cleanups registered per test (and the emulators' schema violations
 * turned into a failure), temp dirs, the real built `railyard serve` as a child process waited on
 * until it listens, and waiting on a submitted PR through the API.
 *
 * Cleanups belong to the test that registered them: a test wrapped in `ownCleanups` (the harnesses'
 * `scoped`) has its own list, run when that test finishes, so tests of one file can run side by side
 * (`it.concurrent`); a test not wrapped registers on the file's list, which `cleanup` (afterEach) runs.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'vitest';
import { ok } from '../server/helpers.js';
import { BIN } from './cli.js';
import type { TestServer } from './server.js';

export const API_TOKEN = 'e2e-api-token';

export interface RailyardProcess extends TestServer {
  /** Everything the process wrote (stdout + stderr), for assertions that no secret was logged. */
  output(): string;
  /** SIGTERM and wait for the exit (the data dir stays). */
  stop(): Promise<void>;
  /** Kill it at once, as a crash would. */
  kill(): Promise<void>;
}

/** An emulator whose answers are checked against the forge's published shapes. */
export interface CheckedEmulator {
  idle(): Promise<void>;
  readonly schemaViolations: readonly string[];
}

/** What a test (or, unwrapped, the file's current test) must undo, and the emulators to check. */
class Cleanups {
  private readonly fns: Array<() => Promise<void> | void> = [];
  private readonly emulators: CheckedEmulator[] = [];

  add(fn: () => Promise<void> | void): void {
    this.fns.push(fn);
  }

  check(emulator: CheckedEmulator): void {
    this.emulators.push(emulator);
  }

  /** Reads the emulators' schema violations, runs the cleanups (last registered first), then fails on violations. */
  async run(shapes: string): Promise<void> {
    const violations: string[] = [];
    for (const e of this.emulators.splice(0)) {
      await e.idle().catch(() => undefined);
      violations.push(...e.schemaViolations);
    }
    for (const c of this.fns.splice(0).reverse()) {
      try {
        await c();
      } catch {
        /* keep cleaning */
      }
    }
    if (violations.length) throw new Error(`the emulator's answers broke ${shapes}:\n${violations.join('\n')}`);
  }
}

const fileCleanups = new Cleanups();
const testCleanups = new AsyncLocalStorage<Cleanups>();
const current = (): Cleanups => testCleanups.getStore() ?? fileCleanups;

/** Runs `fn` at cleanup (last registered first). */
export function onCleanup(fn: () => Promise<void> | void): void {
  current().add(fn);
}

/** Checks an emulator's answers at cleanup (and closes it). */
export function checkAtCleanup(emulator: CheckedEmulator & { close(): Promise<void> }): void {
  current().add(() => emulator.close());
  current().check(emulator);
}

/**
 * Runs the cleanups registered by tests not wrapped in `ownCleanups` (call from afterEach), then
 * fails the test if any answer an emulator gave the server did not match the forge's published
 * description (`shapes`).
 */
export function cleanup(shapes: string): Promise<void> {
  return fileCleanups.run(shapes);
}

/**
 * A test body whose servers, emulators and temp dirs are its own: cleaned up (and the emulators'
 * answers checked against `shapes`) when this test finishes, whatever runs beside it. Use it for
 * tests that run concurrently (`it.concurrent`), where afterEach's `cleanup` would not know whose
 * resources are whose.
 */
export function ownCleanups<C extends TestContext>(shapes: string, fn: (ctx: C) => Promise<void>): (ctx: C) => Promise<void> {
  return (ctx: C) => {
    const mine = new Cleanups();
    ctx.onTestFinished(() => mine.run(shapes));
    return testCleanups.run(mine, () => fn(ctx));
  };
}

export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Starts `railyard <args…>` (after BIN) and waits until it listens; HOME is `home` (the secrets dir). */
export async function spawnRailyard(args: string[], home: string, dataDir: string): Promise<RailyardProcess> {
  const child: ChildProcess = spawn(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: home, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  let alive = true;
  void exited.then(() => (alive = false));
  const port = await new Promise<string>((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error(`railyard serve did not start: ${out}`)), 30_000);
    const check = () => {
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)\/v1/.exec(out);
      if (m) {
        clearTimeout(deadline);
        resolve(m[1]!);
      } else if (!alive) {
        clearTimeout(deadline);
        reject(new Error(`railyard serve exited: ${out}`));
      } else setTimeout(check, 25);
    };
    check();
  });
  const stop = async () => {
    if (!alive) return;
    child.kill('SIGTERM');
    await exited;
  };
  const proc: RailyardProcess = {
    url: `http://127.0.0.1:${port}/v1`,
    token: API_TOKEN,
    org: 'local',
    dataDir,
    output: () => out,
    stop,
    close: stop,
    async kill() {
      if (!alive) return;
      child.kill('SIGKILL');
      await exited;
    },
  };
  onCleanup(stop);
  if (process.env.RAILYARD_E2E_DEBUG) onCleanup(() => console.log(`--- railyard output ---\n${out}`));
  return proc;
}

/** The base URL (no /v1) of a started server, for webhook routes. */
export const baseUrlOf = (server: TestServer) => server.url.replace(/\/v1$/, '');

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Pr = any;

type Repo = { host: string; owner: string; name: string };

/** Waits until the submitted PR `n` of `repo`'s `main` queue satisfies `done`; `ref` names it in the error. */
export async function waitForPr(
  server: TestServer,
  repo: Repo,
  n: number,
  ref: string,
  done: (pr: Pr) => boolean,
  timeoutMs = 30_000,
): Promise<Pr> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pr = await ok(server, 'getSubmittedPullRequest', { repo, targetBranch: 'main', pr: { number: n } });
    if (done(pr)) return pr;
    if (Date.now() > deadline) throw new Error(`${ref} is still ${pr.state} (${pr.stateReason ?? ''})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Polls `check` until it returns true (or throws after timeoutMs with `what`). */
export async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 20_000, everyMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export const settled = (pr: { state: string }) => ['merged', 'failed', 'cancelled'].includes(pr.state);

/** Submits PR `n` to `repo`'s `main` queue. */
export function submitTo(server: TestServer, repo: Repo, n: number, extra: Record<string, unknown> = {}) {
  return ok(server, 'submitPullRequest', { repo, targetBranch: 'main', pr: { number: n }, ...extra });
}
