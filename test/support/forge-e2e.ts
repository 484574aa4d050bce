/**
 * What the end-to-end harnesses of the remote forges (test/e2e/github-harness.ts,
 * gitlab-harness.ts) share: cleanups registered per test (and the emulators' schema violations
 * turned into a failure), temp dirs, the real built `railyard serve` as a child process waited on
 * until it listens, and waiting on a submitted PR through the API.
 *
 * A failing test explains itself: it prints the last state seen of every PR it waited on (with the
 * failure reason and detail of its history) and the tail of each server's output.
 *
 * Cleanups belong to the test that registered them: a test wrapped in `ownCleanups` (the harnesses'
 * `scoped`) has its own list, run when that test finishes, so tests of one file can run side by side
 * (`it.concurrent`); a test not wrapped registers on the file's list, which `cleanup` (afterEach) runs.
 * What several tests share (`sharedResources`, from a beforeAll) has a list of its own, run afterAll.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFailed, type TestContext } from 'vitest';
import { call, ok } from '../server/helpers.js';
import { BIN } from './cli.js';
import type { TestServer } from './server.js';

export const API_TOKEN = 'e2e-api-token';

export interface RailyardProcess extends TestServer {
  /** The server's process id (for /proc: its memory, its descriptors). */
  pid: number;
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
 * Checks an emulator's answers at cleanup without closing it: for a view of an emulator that
 * several tests share (the answers given during one test).
 */
export function checkAnswersAtCleanup(emulator: CheckedEmulator): void {
  current().check(emulator);
}

/**
 * Starts what several tests share (an emulator and a server, from a beforeAll): `make`'s cleanups
 * go on a list of their own, run (and its emulators' answers checked against `shapes`) by the
 * returned `close` (call it from afterAll).
 */
export async function sharedResources<T>(shapes: string, make: () => Promise<T>): Promise<{ value: T; close(): Promise<void> }> {
  const mine = new Cleanups();
  const value = await testCleanups.run(mine, make);
  return { value, close: () => mine.run(shapes) };
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
    pid: child.pid!,
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
  explainFailures(proc.url, () => out);
  return proc;
}

/** What waitForPr last saw of each PR, by server URL then PR ref: printed when the test fails. */
const lastSeen = new Map<string, Map<string, string>>();

/**
 * When the running test fails, prints what waitForPr last saw of the PRs of the server at `url`
 * and the last lines of its output (`output`, without the access log's successful requests), so that a PR that ended `failed` says why.
 */
export function explainFailures(url: string, output: () => string, lines = 60): void {
  const seen = new Map<string, string>();
  lastSeen.set(url, seen);
  try {
    onTestFailed(({ task }) => {
      const prs = [...seen.entries()].map(([ref, what]) => `  ${ref}: ${what}`).join('\n') || '  (none waited on)';
      // Without the access log's successful requests (the test's own polling of the API).
      const quiet = (l: string) => !/"msg":"request"/.test(l) || !/"status":[23]\d\d/.test(l);
      const tail = output().trimEnd().split('\n').filter(quiet).slice(-lines).join('\n');
      console.error(`--- "${task.name}" failed; the PRs it waited on, as last seen ---\n${prs}\n--- the last ${lines} lines of railyard serve (${url}) ---\n${tail}\n---`);
    });
  } catch {
    /* not inside a running test (a hook): nothing to attach to */
  }
  onCleanup(() => void lastSeen.delete(url));
}

/** One line on a PR: its state, reason and test run, and for a failed or cancelled one the detail of its last transition. */
async function describePr(server: TestServer, repo: Repo, pr: Pr): Promise<string> {
  let line = `${pr.state} (${pr.stateReason ?? 'no reason'}) head ${String(pr.prSha ?? '').slice(0, 12)} run ${pr.testRunId ?? '-'}`;
  if (pr.state === 'failed' || pr.state === 'cancelled') {
    const h = await call(server, 'getPullRequestHistory', { repo, targetBranch: 'main', pr: { number: pr.prNumber } }).catch(() => null);
    const transitions: Array<{ state: string; reason?: string; detail?: string }> = h?.json?.transitions ?? [];
    line += `; history: ${transitions.map((t) => `${t.state}${t.reason ? `(${t.reason})` : ''}${t.detail ? ` "${t.detail}"` : ''}`).join(' -> ')}`;
  }
  return line;
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
  const seen = lastSeen.get(server.url);
  for (;;) {
    const pr = await ok(server, 'getSubmittedPullRequest', { repo, targetBranch: 'main', pr: { number: n } });
    const settledNow = settled(pr);
    if (seen) seen.set(ref, settledNow ? await describePr(server, repo, pr) : `${pr.state} (${pr.stateReason ?? 'no reason'})`);
    if (done(pr)) return pr;
    if (Date.now() > deadline) throw new Error(`${ref} is still ${settledNow ? seen?.get(ref) : `${pr.state} (${pr.stateReason ?? ''})`}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Polls `check` until it returns true (or throws after timeoutMs with `what`). */
export function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs?: number,
  everyMs?: number,
): Promise<void>;
/** Polls `get` until it answers something truthy, and answers that (or throws after timeoutMs with `what`). */
export function until<T>(
  what: string,
  get: () => T | Promise<T>,
  timeoutMs?: number,
  everyMs?: number,
): Promise<NonNullable<T>>;
export async function until<T>(
  what: string,
  get: () => T | Promise<T>,
  timeoutMs = 20_000,
  everyMs = 100,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await get();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export const settled = (pr: { state: string }) => ['merged', 'failed', 'cancelled'].includes(pr.state);

/** Submits PR `n` to `repo`'s `main` queue. */
export function submitTo(server: TestServer, repo: Repo, n: number, extra: Record<string, unknown> = {}) {
  return ok(server, 'submitPullRequest', { repo, targetBranch: 'main', pr: { number: n }, ...extra });
}
