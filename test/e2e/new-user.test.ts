/**
 * What a new user tripped over, end to end against real servers: the built CLI, the Action's
 * bundle (dist/) and the dashboard in Chromium. A PR blocked by a conflict with its base ends
 * `mq status --wait`, `mq watch` and the Action's wait at once (exit 3 for the CLI) and is listed
 * outside the queue by `mq queue get`, the board of `mq watch` and the queue page; `flaky list-unhealthy` and the Flaky
 * page list flaky and broken tests alike; a Railyard token is never sent to the default host, and
 * `serve` prints the lines that point the CLI at it.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSettings, type RunEnvironment } from '../../src/action/inputs.js';
import { createRepo, type FixtureRepo } from '../forge/fixture.js';
import { ok } from '../server/helpers.js';
import { browserMissing, launchChromium } from '../support/browser.js';
import { BIN, isolatedEnv, railyard } from '../support/cli.js';
import { spawnServe } from '../support/serve.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { tempDir, tempDirSync } from '../support/tmp.js';

const LOCATION = { host: 'github.com', owner: 'acme', name: 'app' };
const Q = { repo: LOCATION, targetBranch: 'main' };
const FLAGS = ['--repo', 'github.com/acme/app'];
const DIST = resolve(import.meta.dirname, '../../dist/index.js');
const missingBrowser = browserMissing();

/** Runs the Action's bundle as the runner does (INPUT_* variables, an output file); its log and outputs. */
function runAction(inputs: Record<string, string>): Promise<{ code: number; stdout: string; ms: number }> {
  const dir = tempDirSync('railyard-action-');
  const eventPath = join(dir, 'event.json');
  writeFileSync(eventPath, '{}');
  writeFileSync(join(dir, 'output'), '');
  writeFileSync(join(dir, 'summary'), '');
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    GITHUB_EVENT_PATH: eventPath,
    GITHUB_EVENT_NAME: 'workflow_dispatch',
    GITHUB_OUTPUT: join(dir, 'output'),
    GITHUB_STEP_SUMMARY: join(dir, 'summary'),
  };
  for (const [name, value] of Object.entries(inputs)) env[`INPUT_${name.toUpperCase()}`] = value;
  const started = Date.now();
  return new Promise((done, reject) => {
    const child = spawn(process.execPath, [DIST], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stdout += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => done({ code: code ?? -1, stdout, ms: Date.now() - started }));
  });
}

describe('a PR blocked by a conflict with its base', () => {
  let repo: FixtureRepo;
  let server: TestServer;
  let env: Record<string, string>;

  beforeAll(async () => {
    repo = await createRepo({ location: LOCATION, checks: { test: 'true' }, files: { 'app.txt': 'app\n' } });
    server = await startTestServer({ gitRoot: repo.root, tokens: { 'tok-a': 'acme' } });
    env = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: server.token });
    // #1 edits app.txt; so does main after it was opened: only its author can fix that (a rebase).
    repo.openPr(1, { 'app.txt': 'app, by one\n' }, { title: 'One edits app.txt' });
    repo.commitOn('main', { 'app.txt': 'app, on main\n' }, 'Main edits app.txt');
    await ok(server, 'createQueue', Q);
    await ok(server, 'submitPullRequest', { ...Q, pr: { number: 1 } });
    // Waits until the git forge has seen the conflict (a condition, not a time).
    for (let tries = 0; ; tries++) {
      const pr = await ok(server, 'getSubmittedPullRequest', { ...Q, pr: { number: 1 } });
      if (pr.readiness?.conflict?.message?.includes('conflicts with main in app.txt')) break;
      if (tries > 300) throw new Error(`#1 shows no conflict: ${JSON.stringify(pr)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await repo?.cleanup();
  });

  it('mq status --wait and mq submit --wait stop at once with exit 3 and say what only the author can fix', async () => {
    const started = Date.now();
    const status = await railyard(
      ['mq', 'status', '1', ...FLAGS, '--wait', '--timeout', '5m', '--interval', '200ms'],
      env,
    );
    expect(status.code, status.stderr).toBe(3);
    expect(status.stderr).toMatch(
      /#1 is blocked until its author pushes: conflicts with main in app\.txt \(changed by [0-9a-f]{7} 'Main edits app\.txt'\): rebase on main/,
    );
    expect(Date.now() - started).toBeLessThan(60_000);
    const submit = await railyard(
      ['mq', 'submit', '1', ...FLAGS, '--wait', '--timeout', '5m', '--interval', '200ms'],
      env,
    );
    expect(submit.code, submit.stderr).toBe(3);
    expect(submit.stderr).toContain('#1 is blocked until its author pushes: conflicts with main in app.txt');
  });

  it('mq watch N ends with exit 3, the line saying what blocks it', async () => {
    const watch = await railyard(
      ['mq', 'watch', '1', ...FLAGS, '--interval', '200ms', '--timeout', '5m'],
      env,
    );
    expect(watch.code, watch.stderr).toBe(3);
    expect(watch.stdout).toMatch(
      /^\d\d:\d\d:\d\d #1 blocked until its author pushes: conflicts with main in app\.txt/m,
    );
    expect(watch.stderr).toContain('#1 is blocked until its author pushes: conflicts with main in app.txt');
  });

  it('mq queue get lists it outside the queue, with the reason', async () => {
    const get = await railyard(['mq', 'queue', 'get', ...FLAGS, '--wide'], env);
    expect(get.code, get.stderr).toBe(0);
    expect(get.stdout).toContain('0 pull request(s) in the queue');
    expect(get.stdout).toContain('1 waiting outside it (not_ready)');
    expect(get.stdout).toMatch(
      /^#1 +conflicts with main in app\.txt .*: rebase on main +One edits app\.txt/m,
    );
  });

  it('mq watch without PR numbers lists it on the board with the reason, piped and on a terminal', async () => {
    const args = ['mq', 'watch', ...FLAGS, '--interval', '200ms', '--timeout', '2s'];
    const piped = await railyard(args, env);
    expect(piped.code, piped.stderr).toBe(0);
    expect(piped.stdout).toMatch(
      /^\d\d:\d\d:\d\d #1 not_ready: conflicts with main in app\.txt .*: rebase on main +One edits app\.txt$/m,
    );
    // On a terminal (a pseudo-terminal from util-linux `script`): the board redrawn in place.
    const tty = await new Promise<{ code: number; out: string }>((done, reject) => {
      const command = [process.execPath, BIN, ...args].map((a) => `'${a}'`).join(' ');
      const child = spawn('script', ['-qfec', command, '/dev/null'], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      child.on('error', reject);
      child.on('close', (code) => done({ code: code ?? -1, out }));
    });
    expect(tty.code, tty.out).toBe(0);
    expect(tty.out).toContain('github.com/acme/app main: running');
    expect(tty.out).toMatch(
      /^ {5}#1 not_ready: conflicts with main in app\.txt .*: rebase on main +One edits app\.txt\r?$/m,
    );
    expect(tty.out).not.toContain('(the queue is empty)');
  });

  it("the Action's wait fails the step at once, naming the conflict", async () => {
    const run = await runAction({
      token: server.token,
      'api-url': server.url,
      operation: 'wait',
      repo: 'github.com/acme/app',
      'target-branch': 'main',
      'pr-number': '1',
      'timeout-minutes': '5',
      'poll-interval-seconds': '0.2',
    });
    expect(run.code, run.stdout).toBe(1);
    expect(run.stdout).toMatch(
      /::error::#1 is blocked until its author pushes: conflicts with main in app\.txt/,
    );
    expect(run.ms).toBeLessThan(60_000);
  });

  it.skipIf(missingBrowser !== null && !process.env.CI)(
    'the dashboard queue page lists it with the reason, not "The queue is empty"',
    async () => {
      const browser: Browser = await launchChromium();
      try {
        const page = await browser.newPage();
        page.setDefaultTimeout(15_000);
        const origin = server.url.replace(/v1$/, '');
        await page.goto(origin);
        await page.getByLabel('API token').fill(server.token);
        await page.getByRole('button', { name: 'Open the dashboard' }).click();
        await page.getByRole('navigation', { name: 'Pages' }).waitFor();
        await page.goto(`${origin}#/queue/github.com/acme/app/main`);
        const outside = page.getByTestId('not-ready');
        await outside.waitFor();
        expect(await outside.textContent()).toMatch(
          /#1 One edits app\.txt.*: conflicts with main in app\.txt/,
        );
        expect(await page.getByText('The queue is empty.').count()).toBe(0);
      } finally {
        await browser.close();
      }
    },
  );
});

describe('flaky list-unhealthy', () => {
  const HOUR = 3_600_000;
  const T0 = Date.now() - 20 * HOUR;
  const ORG = 'acme';
  const key = { repo: { host: 'github.com', owner: 'acme', name: 'web' }, org_url_slug: ORG };
  let server: TestServer;

  /** One run: `broken` always fails; `wobbly` fails and then passes on retry (the same commit) in the first run only. */
  const junit = (first: boolean) => `<?xml version="1.0" encoding="UTF-8"?>
<testsuites><testsuite name="suite">
<testcase name="broken" classname="suite" time="0.01"><failure message="boom">boom</failure></testcase>
${first ? '<testcase name="wobbly" classname="suite" time="0.01"><failure message="flake">flake</failure></testcase>' : ''}
<testcase name="wobbly" classname="suite" time="0.01"/>
<testcase name="fine" classname="suite" time="0.01"/>
</testsuite></testsuites>
`;

  beforeAll(async () => {
    server = await startTestServer({ tokens: { 'tok-f': ORG } });
    for (let i = 1; i <= 10; i++) {
      await ok(server, 'uploadTestResults', {
        ...key,
        branch: 'main',
        sha: `${i.toString(16).padStart(2, '0')}${'c'.repeat(38)}`,
        started_at: new Date(T0 + i * HOUR).toISOString(),
        reports: [{ name: 'junit.xml', content: junit(i === 1) }],
      });
    }
  }, 60_000);
  afterAll(async () => {
    await server?.close();
  });

  it('with no --status lists the flaky and the broken tests; --status picks one', async () => {
    const env = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: 'tok-f', RAILYARD_ORG: ORG });
    const both = await railyard(['flaky', 'list-unhealthy', '--repo', 'acme/web', '--format', 'csv'], env);
    expect(both.code, both.stderr).toBe(0);
    const names = both.stdout
      .trim()
      .split('\n')
      .slice(1)
      .map((line) => line.split(',')[0]);
    const listed = async (status: 'FLAKY' | 'BROKEN') =>
      (
        (
          await ok(server, 'listUnhealthyTests', {
            ...key,
            status,
            page_query: { page_size: 100, page_token: '' },
          })
        ).tests as { name: string }[]
      ).map((t) => t.name);
    const [flaky, brokenNames] = [await listed('FLAKY'), await listed('BROKEN')];
    expect([flaky, brokenNames]).toEqual([['wobbly'], ['broken']]);
    // Flaky first, then broken: every unhealthy test, not `(none)` while tests are broken.
    expect(names).toEqual([...flaky, ...brokenNames]);
    expect(names.sort()).toEqual(['broken', 'wobbly']);
    const broken = await railyard(
      ['flaky', 'list-unhealthy', '--repo', 'acme/web', '--status', 'broken', '--format', 'csv'],
      env,
    );
    expect(
      broken.stdout
        .trim()
        .split('\n')
        .slice(1)
        .map((l) => l.split(',')[0]),
    ).toEqual(brokenNames);
  });

  it.skipIf(missingBrowser !== null && !process.env.CI)(
    'the Flaky page opens on the flaky and broken tests together',
    async () => {
      const browser: Browser = await launchChromium();
      try {
        const page = await browser.newPage();
        page.setDefaultTimeout(15_000);
        const origin = server.url.replace(/v1$/, '');
        await page.goto(origin);
        await page.getByLabel('API token').fill('tok-f');
        await page.getByRole('button', { name: 'Open the dashboard' }).click();
        await page.getByRole('navigation', { name: 'Pages' }).waitFor();
        await page.goto(`${origin}#/flaky/github.com/acme/web`);
        await page.locator('tr[data-test="broken"]').waitFor();
        await page.locator('tr[data-test="wobbly"]').waitFor();
        expect(await page.getByRole('tab', { selected: true }).textContent()).toBe('Flaky and broken');
      } finally {
        await browser.close();
      }
    },
  );
});

describe('a Railyard token and the API URL', () => {
  it('serve prints how to point the CLI at it; those lines work; without an API URL a ry_ token is refused, never sent to Trunk', async () => {
    const dataDir = await tempDir('railyard-serve-');
    const serve = await spawnServe(['--sandbox', '--data-dir', dataDir, '--log-level', 'warn']);
    try {
      await expect
        .poll(() => serve.output().stdout, { timeout: 10_000 })
        .toMatch(/railyard config set token ry_\S+\n/);
      const out = serve.output().stdout;
      const apiLine = /^ {2}(railyard config set api-url (\S+))$/m.exec(out);
      const tokenLine = /^ {2}(railyard config set token (ry_\S+))$/m.exec(out);
      expect(apiLine?.[2]).toBe(serve.url);
      expect(out.indexOf('Point the CLI at it:')).toBeGreaterThan(out.indexOf('Railyard API listening on'));

      // A fresh HOME with only the token: refused, exit 2, saying how to point the CLI at the server.
      const home = isolatedEnv();
      expect((await railyard(['config', 'set', 'token', tokenLine![2]], home)).code).toBe(0);
      const refused = await railyard(['mq', 'queue', 'list', ...FLAGS], home);
      expect(refused.code, refused.stderr).toBe(2);
      expect(refused.stderr).toMatch(
        /^Error: no API URL for this Railyard token \(ry_…\): point the CLI at your server with `railyard config set api-url http:\/\/HOST:PORT\/v1`/,
      );
      expect(refused.stderr).not.toMatch(/retrying|ENOTFOUND|api\.trunk\.io\/v1\b.*failed/);
      // The lines serve printed, run as printed: the CLI reaches the server.
      expect((await railyard(apiLine![1].split(' ').slice(1), home)).code).toBe(0);
      const created = await railyard(['mq', 'queue', 'create', ...FLAGS], home);
      expect(created.code, created.stderr).toBe(0);
    } finally {
      await serve.stop();
    }
  });

  it('the Action refuses a ry_ token without api-url before any request', () => {
    const inputs: Record<string, string> = {
      token: 'ry_secret',
      operation: 'status',
      repo: 'acme/web',
      'pr-number': '1',
      'target-branch': 'main',
    };
    const env: RunEnvironment = {
      input: (name) => inputs[name] ?? '',
      eventName: 'workflow_dispatch',
      payload: {},
    };
    expect(() => readSettings(env)).toThrow(/^api-url: required with a Railyard token \(ry_…\)/);
    inputs['api-url'] = 'http://127.0.0.1:9/v1';
    expect(() => readSettings(env)).not.toThrow();
  });
});
