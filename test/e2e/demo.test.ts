import { spawn, spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { BIN, isolatedEnv, railyard } from '../support/cli.js';

describe('railyard demo (the README main job)', () => {
  it('lands the good PRs, fails the broken, conflicting and combination-broken ones, and exits 0', async () => {
    const started = Date.now();
    const run = await railyard(['demo', '--json'], isolatedEnv());
    expect(run.code, run.stderr).toBe(0);
    expect(Date.now() - started).toBeLessThan(60_000);
    const result = JSON.parse(run.stdout);
    expect(result.merged.sort()).toEqual([1, 3, 4, 7, 8]);
    expect(
      result.failed.sort((a: { prNumber: number }, b: { prNumber: number }) => a.prNumber - b.prNumber),
    ).toEqual([
      { prNumber: 2, reason: 'TEST_RUN_REQUIRED_STATUS_FAILED' },
      { prNumber: 5, reason: 'TEST_RUN_REQUIRED_STATUS_FAILED' },
      { prNumber: 6, reason: 'START_TEST_RUN_MERGE_CONFLICT' },
    ]);
    // main holds exactly the merged PRs, once each, squashed, after the initial commit.
    const subjects: string[] = result.log.map((l: string) => l.replace(/^[0-9a-f]+ /, ''));
    expect(subjects.at(-1)).toBe('Initial shop (Railyard Demo)');
    expect(
      subjects
        .slice(0, -1)
        .map((s) => Number(/\(#(\d+)\)/.exec(s)?.[1]))
        .sort(),
    ).toEqual([1, 3, 4, 7, 8]);
    // Progress went to stderr, with the outcome explained.
    expect(run.stderr).toMatch(/Merged: #1, #3, #4, #7, #8/);
    expect(run.stderr).toMatch(/#5 Checkout uses cart.total .* passes alone/);
    expect(result.dir).toBeNull();
    // The closing hint is a command that works from where the demo was started (here: no
    // `railyard` on PATH, so node and this checkout's bin/run.js): run with --help instead of --open.
    const hint = /See it as a picture: (.+) \(the web dashboard/.exec(run.stderr)?.[1] ?? '';
    expect(hint).toMatch(/ demo --open$/);
    const env = isolatedEnv();
    const [command, ...args] = hint.split(' ');
    const help = spawnSync(command!, args.map((a) => (a === '--open' ? '--help' : a)), { env, cwd: env.HOME, encoding: 'utf8' });
    expect(help.status, `${hint}: ${help.error?.message ?? help.stderr}`).toBe(0);
    expect(help.stdout).toContain('Watch a merge queue land real pull requests');
  });
});

describe('railyard demo --open', () => {
  it("points at the demo server's dashboard with the token to paste, keeps it up until Ctrl-C, then exits 0", async () => {
    const env = isolatedEnv();
    const child = spawn(process.execPath, [BIN, 'demo', '--open'], {
      env,
      cwd: env.HOME,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    try {
      await expect
        .poll(() => /Dashboard: (http:\S+\/) {2}\(API token (\S+):/.exec(out), {
          timeout: 120_000,
          interval: 200,
        })
        .not.toBeNull();
      const [, url, token] = /Dashboard: (http:\S+\/) {2}\(API token (\S+):/.exec(out)!;
      // Still up after the outcome: the page and the API it reads, with the printed token.
      await new Promise((r) => setTimeout(r, 500));
      const page = await fetch(url);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<div id="app">');
      const queues = await fetch(`${url}v1/listQueues`, {
        method: 'POST',
        headers: { 'x-api-token': token },
        body: '{}',
      });
      expect(queues.status).toBe(200);
      expect(((await queues.json()) as { queues: unknown[] }).queues[0]).toMatchObject({
        targetBranch: 'main',
        mergedLastDay: 5,
        failedLastDay: 3,
      });
      child.kill('SIGINT');
      expect(await exited).toBe(0);
      expect(out).toContain('Stopping the demo server.');
    } finally {
      child.kill('SIGKILL');
    }
  }, 150_000);
});
