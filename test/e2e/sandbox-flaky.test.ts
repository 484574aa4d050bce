/**
 * The flake-aware merge queue in the sandbox (issue 22): the real `railyard serve --sandbox`, whose
 * simulated CI fails the `test` check of every run containing a PR of `--sandbox-fail`. The run's
 * failing tests come, as on GitHub and GitLab, from an upload for its test commit
 * (`railyard flaky upload --sha <testBranchSha> --job test`): a failure only of a quarantined test
 * is ignored and the PR lands, with FLAKY_FAILURES_IGNORED in its history; a failure of a test that
 * is not quarantined fails the PR.
 */
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readReports } from '../../src/flaky/ingest.js';
import { ok } from '../server/helpers.js';
import { isolatedEnv, railyard } from '../support/cli.js';
import { settled, until, waitForPr } from '../support/forge-e2e.js';
import { cleanupsAfterEach } from '../support/hooks.js';
import { spawnServe } from '../support/serve.js';
import { tempDir } from '../support/tmp.js';

const TOKEN = 'ry_sandbox_flaky_token_0123456789abcdefghijklmnop';
const REPO = { host: 'github.com', owner: 'acme', name: 'web' };
const Q = { repo: REPO, targetBranch: 'main' };

const cleanup = cleanupsAfterEach();

const report = (failing: string[] = []) =>
  `<testsuite name="suite">${['net', 'db']
    .map((t) => `<testcase classname="tests/${t}.test.ts" file="tests/${t}.test.ts" name="${t} works">${failing.includes(t) ? '<failure message="boom"/>' : ''}</testcase>`)
    .join('')}</testsuite>`;

describe('serve --sandbox: a flake-aware queue', () => {
  it('lands a PR whose run failed only on a quarantined test (FLAKY_FAILURES_IGNORED) and fails one whose run failed on a test that is not', { timeout: 90_000 }, async () => {
    const dataDir = await tempDir();
    cleanup(() => rm(dataDir, { recursive: true, force: true }));
    // Every run containing #1 or #2 fails its `test` check after 1 s of simulated CI.
    const serve = await spawnServe(['--data-dir', dataDir, '--sandbox', '--sandbox-test-seconds', '1', '--sandbox-fail', '1,2'], {
      ...isolatedEnv(),
      RAILYARD_SERVER_TOKEN: TOKEN,
    });
    cleanup(() => serve.kill());
    const server = { url: serve.url, token: TOKEN, org: 'local', dataDir, close: async () => undefined };
    const env = isolatedEnv({ RAILYARD_API_URL: serve.url, RAILYARD_TOKEN: TOKEN });
    const cli = async (args: string[]) => {
      const r = await railyard(args, env);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
      return r;
    };

    // The flaky-test data knows both tests from CI on main; `net works` is quarantined.
    const key = { repo: REPO, org_url_slug: 'local' };
    await ok(server, 'uploadTestResults', { ...key, branch: 'main', sha: 'a'.repeat(40), reports: [{ name: 'junit.xml', content: report() }] });
    await ok(server, 'updateRepositorySettings', { ...key, settings: { quarantining_enabled: true } });
    const read = readReports({ org: 'local', repo: REPO, variant: '', reports: [{ name: 'junit.xml', content: report() }] });
    if (!read.ok) throw new Error(read.error);
    await ok(server, 'setTestQuarantine', { ...key, test_id: read.results.find((r) => r.name === 'net works')!.id, setting: 'ALWAYS_QUARANTINE' });
    await cli(['mq', 'queue', 'create', '--repo', 'acme/web']);
    await cli(['mq', 'queue', 'update', '--repo', 'acme/web', '--flaky-policy', 'ignore_quarantined', '--flaky-report-grace-seconds', '60']);

    /** Submits `n`, waits for its test commit, uploads CI's JUnit for it (failing `failing`), and waits until it settles. */
    const run = async (n: number, failing: string[]) => {
      await cli(['mq', 'submit', String(n), '--repo', 'acme/web']);
      const testing = await waitForPr(server, REPO, n, `#${n}`, (p) => p.state === 'testing' && Boolean(p.testRunId));
      let sha = '';
      await until(`#${n}'s test commit`, async () => {
        sha = (await ok(server, 'getMergeQueueTestingDetails', { ...Q, testRunId: testing.testRunId })).testBranchSha ?? '';
        return sha !== '';
      });
      const file = join(env.HOME, `junit-${n}.xml`);
      await writeFile(file, report(failing));
      await cli(['flaky', 'upload', '--repo', 'github.com/acme/web', '--org', 'local', '--branch', testing.testBranch ?? 'railyard-merge/test', '--sha', sha, '--job', 'test', file]);
      const done = await waitForPr(server, REPO, n, `#${n}`, settled, 60_000);
      const details = await ok(server, 'getMergeQueueTestingDetails', { ...Q, testRunId: done.testRunId });
      const history = await ok(server, 'getPullRequestHistory', { ...Q, pr: { number: n } });
      return { done, details, history };
    };

    const one = await run(1, ['net']);
    expect(one.done, `#1 ${one.done.state} (${one.done.stateReason ?? ''})`).toMatchObject({ state: 'merged' });
    expect(one.history.transitions.find((t: { state: string }) => t.state === 'tests_passed')).toMatchObject({
      reason: 'FLAKY_FAILURES_IGNORED',
      detail: 'failed only on ignored tests (flakyPolicy ignore_quarantined): suite › net works',
    });
    expect(one.details.failingTests).toEqual([{ name: 'suite › net works', quarantined: true, flaky: true, changedByPr: false, ignored: true }]);

    const two = await run(2, ['db']);
    expect(two.done).toMatchObject({ state: 'failed', stateReason: 'TEST_RUN_REQUIRED_STATUS_FAILED' });
    expect(two.details.failingTests).toEqual([{ name: 'suite › db works', quarantined: false, flaky: false, changedByPr: false, ignored: false }]);
    expect(two.history.transitions.find((t: { state: string }) => t.state === 'failed').detail).toMatch(/failing tests: suite › db works/);
  });
});
