/**
 * Adding a forge is one folder and one line (CONTRIBUTING "Adding a forge"), walked through with a
 * throwaway forge: its description and a fake driver live in test/forge/throwaway-forge/, and
 * test/forge/throwaway-forge/railyard.ts registers it with one line before running the real
 * binary. Without touching `serve` or the server, `railyard serve` takes its flag (excluding the
 * other forges' and named in the "say where pull requests come from" guard), refuses a bad value in
 * its words, prints its start-up line, and the server links to its pages.
 */
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readReports } from '../../src/flaky/ingest.js';
import { ok } from '../server/helpers.js';
import { isolatedEnv, unwrapOclif } from '../support/cli.js';
import { settled, waitForPr } from '../support/forge-e2e.js';
import { cleanupsAfterEach } from '../support/hooks.js';
import { spawnServe } from '../support/serve.js';
import { tempDir } from '../support/tmp.js';

const TOKEN = 'ry_throwaway_forge_token_0123456789abcdefghijkl';
/** `railyard` with the throwaway forge registered, run through tsx (the forge's folder is TypeScript). */
const BIN = resolve(import.meta.dirname, 'throwaway-forge/railyard.ts');
const NODE_ARGS = ['--import', 'tsx'];
const REPO = { host: 'forge.test', owner: 'acme', name: 'web' };
const Q = { repo: REPO, targetBranch: 'main' };

const cleanup = cleanupsAfterEach();

/** The registered `railyard` with `args`, to its exit. */
function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, reject) => {
    const child = spawn(process.execPath, [...NODE_ARGS, BIN, ...args], {
      env: isolatedEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

describe('a throwaway forge: one folder and one registry line', () => {
  it(
    'serve takes its flag, prints its start-up line, and the server links to its pages',
    { timeout: 90_000 },
    async () => {
      const dataDir = await tempDir();
      const serve = await spawnServe(
        ['--data-dir', join(dataDir, 'data'), '--throwaway', 'shop', '--throwaway-run-ms', '300'],
        { ...isolatedEnv(), RAILYARD_SERVER_TOKEN: TOKEN },
        { bin: BIN, nodeArgs: NODE_ARGS },
      );
      cleanup(() => serve.kill());
      await expect
        .poll(() => serve.output().stdout)
        .toContain(`Throwaway forge "shop": pull requests by number at ${serve.url}\n`);
      const lines = serve.output().stdout.split('\n');
      // Its line comes after the server's own.
      expect(lines.findIndex((l) => l.startsWith('Throwaway forge'))).toBe(
        lines.findIndex((l) => l.startsWith('Web dashboard on')) + 1,
      );

      const server = { url: serve.url, token: TOKEN, org: 'local', dataDir, close: async () => undefined };
      await ok(server, 'createQueue', Q);
      await ok(server, 'submitPullRequest', { ...Q, pr: { number: 7 } });
      const done = await waitForPr(server, REPO, 7, '#7', settled, 60_000);
      expect(done.state, done.stateReason ?? '').toBe('merged');
      const details = await ok(server, 'getMergeQueueTestingDetails', { ...Q, testRunId: done.testRunId });
      expect(details.testedPullRequests).toEqual([
        { prNumber: 7, prUrl: 'https://shop.forge.test/r/acme/web/changes/7', title: 'Change 7 of shop' },
      ]);

      // A test's page is its file on the forge; the repository's page is the forge's.
      const report =
        '<testsuite name="s"><testcase classname="cart" name="adds" file="tests/cart.test.ts"/></testsuite>';
      await ok(server, 'uploadTestResults', {
        repo: REPO,
        org_url_slug: 'local',
        branch: 'main',
        sha: 'a'.repeat(40),
        reports: [{ name: 'junit.xml', content: report }],
      });
      const read = readReports({
        org: 'local',
        repo: REPO,
        variant: '',
        reports: [{ name: 'junit.xml', content: report }],
      });
      if (!read.ok) throw new Error(read.error);
      const shown = await ok(server, 'getTestDetails', {
        repo: REPO,
        org_url_slug: 'local',
        test_id: read.results[0]!.id,
      });
      expect(shown.test).toMatchObject({
        repository: { html_url: 'https://shop.forge.test/r/acme/web' },
        html_url: 'https://shop.forge.test/r/acme/web/tree/HEAD/tests/cart.test.ts',
      });
      await serve.stop();
      expect(await serve.exit).toBe(0);
    },
  );

  it(
    'its flag excludes the other forges, its settings refuse a bad value in one line, and the guard names it',
    { timeout: 60_000 },
    async () => {
      const [both, bad, none] = await Promise.all([
        run(['serve', '--port', '0', '--throwaway', 'shop', '--sandbox']),
        run(['serve', '--port', '0', '--throwaway', 'Shop!']),
        run(['serve', '--port', '0']),
      ]);
      expect(both.code).toBe(2);
      expect(unwrapOclif(both.stderr)).toContain(
        '--sandbox=true cannot also be provided when using --throwaway',
      );
      expect(unwrapOclif(both.stderr)).toContain(
        '--throwaway=shop cannot also be provided when using --sandbox',
      );

      expect(bad.code).toBe(2);
      expect(unwrapOclif(bad.stderr)).toBe('Error: --throwaway: "Shop!" is not a name (a-z)');

      expect(none.code).toBe(2);
      expect(unwrapOclif(none.stderr)).toBe(
        'Error: say where pull requests come from: --github (repositories on GitHub), --gitlab (projects on GitLab), --git-root DIR (bare git repositories), --sandbox (simulated) or --throwaway NAME (a forge made up by a test)',
      );
    },
  );
});
