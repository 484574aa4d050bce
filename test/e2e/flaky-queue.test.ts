/**
 * The flake-aware merge queue end to end on the git forge: real bare repositories, the real server
 * running the checks of railyard.json, whose object form declares the JUnit reports a check
 * writes. The runner stores them as an upload for the test commit; a failure only of a quarantined
 * test is ignored (the PR lands and its history says why), the same failure of a test that is not
 * quarantined fails the PR, and a failure of a test the PR changes is never ignored.
 */
import { describe, expect, it } from 'vitest';
import { readReports } from '../../src/flaky/ingest.js';
import { createRepo } from '../forge/fixture.js';
import { isolatedEnv, railyard } from '../support/cli.js';
import { cleanupsAfterEach } from '../support/hooks.js';
import { startTestServer } from '../support/server.js';
import { call, ok } from '../server/helpers.js';

const LOCATION = { host: 'github.com', owner: 'acme', name: 'app' };
const Q = { repo: LOCATION, targetBranch: 'main' };
const KEY = { repo: LOCATION, org_url_slug: 'acme' };

const cleanup = cleanupsAfterEach();

/** Writes junit.xml with the tests `net` and `db`; those named in fail.txt fail (and so does the check). */
const RUN_TESTS = `fails=$(cat fail.txt 2>/dev/null)
{
  echo '<?xml version="1.0"?><testsuite name="suite">'
  for t in net db; do
    if printf '%s\\n' "$fails" | grep -qx "$t"; then
      echo "<testcase classname=\\"tests/$t.test.ts\\" file=\\"tests/$t.test.ts\\" name=\\"$t works\\"><failure message=\\"boom\\"/></testcase>"
    else
      echo "<testcase classname=\\"tests/$t.test.ts\\" file=\\"tests/$t.test.ts\\" name=\\"$t works\\"/>"
    fi
  done
  echo '</testsuite>'
} > junit.xml
[ -z "$fails" ]
`;

const report = (failing: string[] = []) =>
  `<testsuite name="suite">${['net', 'db']
    .map((t) => `<testcase classname="tests/${t}.test.ts" file="tests/${t}.test.ts" name="${t} works">${failing.includes(t) ? '<failure/>' : ''}</testcase>`)
    .join('')}</testsuite>`;

describe('flake-aware verdicts on the git forge', () => {
  it('ignores a failure only of a quarantined test, fails the same failure of a test that is not, never ignores a test the PR changes', async () => {
    const repo = await createRepo({
      location: LOCATION,
      checks: null,
      files: {
        'railyard.json': JSON.stringify({ checks: { test: { run: 'sh run-tests.sh', reports: ['junit.xml'] } } }),
        'run-tests.sh': RUN_TESTS,
        'tests/net.test.ts': 'net\n',
        'tests/db.test.ts': 'db\n',
      },
    });
    cleanup(() => repo.cleanup());
    const server = await startTestServer({ gitRoot: repo.root, tokens: { 'tok-a': 'acme' } });
    cleanup(() => server.close());

    // The flaky-test data knows both tests from CI on main; `net works` is quarantined.
    await ok(server, 'uploadTestResults', { ...KEY, branch: 'main', sha: repo.headOf('main'), reports: [{ name: 'junit.xml', content: report() }] });
    await ok(server, 'updateRepositorySettings', { ...KEY, settings: { quarantining_enabled: true } });
    const read = readReports({ org: 'acme', repo: LOCATION, variant: '', reports: [{ name: 'junit.xml', content: report() }] });
    if (!read.ok) throw new Error(read.error);
    const id = (name: string) => read.results.find((r) => r.name === name)!.id;
    await ok(server, 'setTestQuarantine', { ...KEY, test_id: id('net works'), setting: 'ALWAYS_QUARANTINE' });

    await ok(server, 'createQueue', Q);
    await ok(server, 'updateQueue', { ...Q, flakyPolicy: 'ignore_quarantined' });
    const settle = async (n: number) => {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const pr = await ok(server, 'getSubmittedPullRequest', { ...Q, pr: { number: n } });
        if (['merged', 'failed', 'cancelled'].includes(pr.state)) return pr;
        if (Date.now() > deadline) throw new Error(`#${n} is still ${pr.state}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };

    // #1 makes the quarantined test fail (it does not touch its file): the failure is ignored.
    repo.openPr(1, { 'fail.txt': 'net\n', 'feature.txt': 'one\n' }, { title: 'Breaks only net' });
    await ok(server, 'submitPullRequest', { ...Q, pr: { number: 1 } });
    const one = await settle(1);
    expect(one.state).toBe('merged');
    const history = await ok(server, 'getPullRequestHistory', { ...Q, pr: { number: 1 } });
    expect(history.transitions.find((t: { state: string }) => t.state === 'tests_passed')).toMatchObject({
      reason: 'FLAKY_FAILURES_IGNORED',
      detail: 'failed only on ignored tests (flakyPolicy ignore_quarantined): suite › net works',
    });
    const details = await ok(server, 'getMergeQueueTestingDetails', { ...Q, testRunId: one.testRunId });
    expect(details).toMatchObject({
      status: 'succeeded',
      failingTests: [{ name: 'suite › net works', quarantined: true, flaky: true, changedByPr: false, ignored: true }],
    });
    // The run's reports were stored as an upload for the test commit: the test's history has the failure.
    const failing = await ok(server, 'listFailingTests', {
      ...KEY,
      start_time: new Date(Date.now() - 3_600_000).toISOString(),
      end_time: new Date(Date.now() + 60_000).toISOString(),
      page_query: { page_size: 10 },
    });
    expect(JSON.stringify(failing)).toContain('net works');

    // #2 makes `db works` fail, a test that is not quarantined: the PR fails.
    repo.openPr(2, { 'fail.txt': 'db\n' }, { title: 'Breaks db' });
    await ok(server, 'submitPullRequest', { ...Q, pr: { number: 2 } });
    expect(await settle(2)).toMatchObject({ state: 'failed', stateReason: 'TEST_RUN_REQUIRED_STATUS_FAILED' });

    // #3 changes the quarantined test's own file and it fails: never ignored.
    repo.openPr(3, { 'fail.txt': 'net\n', 'tests/net.test.ts': 'net, rewritten\n' }, { title: 'Rewrites net' });
    await ok(server, 'submitPullRequest', { ...Q, pr: { number: 3 } });
    const three = await settle(3);
    expect(three).toMatchObject({ state: 'failed', stateReason: 'TEST_RUN_REQUIRED_STATUS_FAILED' });
    const threeDetails = await ok(server, 'getMergeQueueTestingDetails', { ...Q, testRunId: three.testRunId });
    expect(threeDetails.failingTests).toEqual([{ name: 'suite › net works', quarantined: true, flaky: true, changedByPr: true, ignored: false }]);
  }, 90_000);

  it('shows the failing tests of a run in mq status, mq logs, the history and the metrics; a flaky failure is retried once', async () => {
    const repo = await createRepo({
      location: LOCATION,
      checks: null,
      files: {
        'railyard.json': JSON.stringify({ checks: { test: { run: 'sh run-tests.sh', reports: ['junit.xml'] } } }),
        'run-tests.sh': RUN_TESTS,
        'tests/net.test.ts': 'net\n',
        'tests/db.test.ts': 'db\n',
      },
    });
    cleanup(() => repo.cleanup());
    const server = await startTestServer({ gitRoot: repo.root, tokens: { 'tok-a': 'acme' } });
    cleanup(() => server.close());
    await ok(server, 'uploadTestResults', { ...KEY, branch: 'main', sha: repo.headOf('main'), reports: [{ name: 'junit.xml', content: report() }] });
    await ok(server, 'updateRepositorySettings', { ...KEY, settings: { quarantining_enabled: true } });
    const read = readReports({ org: 'acme', repo: LOCATION, variant: '', reports: [{ name: 'junit.xml', content: report() }] });
    if (!read.ok) throw new Error(read.error);
    await ok(server, 'setTestQuarantine', { ...KEY, test_id: read.results.find((r) => r.name === 'net works')!.id, setting: 'ALWAYS_QUARANTINE' });
    // Policy off, one retry: a failure only of `net works` (flake history: quarantined) is tested again, then fails.
    await ok(server, 'createQueue', { ...Q, flakyRetries: 1 });

    repo.openPr(1, { 'fail.txt': 'net\ndb\n' }, { title: 'Breaks net and db' });
    repo.openPr(2, { 'fail.txt': 'net\n' }, { title: 'Breaks net only' });
    const settle = async (n: number) => {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const pr = await ok(server, 'getSubmittedPullRequest', { ...Q, pr: { number: n } });
        if (['merged', 'failed', 'cancelled'].includes(pr.state)) return pr;
        if (Date.now() > deadline) throw new Error(`#${n} is still ${pr.state}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    await ok(server, 'submitPullRequest', { ...Q, pr: { number: 1 } });
    expect((await settle(1)).state).toBe('failed');
    await ok(server, 'submitPullRequest', { ...Q, pr: { number: 2 } });
    const two = await settle(2);
    expect(two.state).toBe('failed');

    // The history: #1 failed at once (db never flaked), naming both tests; #2 was retried once, then failed.
    const h1 = await ok(server, 'getPullRequestHistory', { ...Q, pr: { number: 1 } });
    expect(h1.transitions.map((t: { reason: string }) => t.reason)).not.toContain('FLAKY_FAILURE_RETRIED');
    expect(h1.transitions.at(-1).detail).toContain('failing tests: suite › net works (quarantined), suite › db works');
    const h2 = await ok(server, 'getPullRequestHistory', { ...Q, pr: { number: 2 } });
    const retried = h2.transitions.find((t: { reason: string }) => t.reason === 'FLAKY_FAILURE_RETRIED');
    expect(retried.detail).toMatch(/failed only on tests with flake history, retried \(attempt 2 of 2\): suite › net works/);
    expect(h2.transitions.at(-1)).toMatchObject({ state: 'failed', detail: expect.stringContaining('failing tests: suite › net works (quarantined)') });

    // The CLI over HTTP, as a person reads it.
    const env = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: server.token });
    const status = await railyard(['mq', 'status', '2', '--repo', 'github.com/acme/app'], env);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/failingTests\s+suite › net works \(quarantined\)/);
    const status1 = await railyard(['mq', 'status', '1', '--repo', 'github.com/acme/app'], env);
    expect(status1.stdout).toMatch(/failingTests\s+suite › net works \(quarantined\)\n\s+suite › db works/);
    const logs = await railyard(['mq', 'logs', '2', '--repo', 'github.com/acme/app'], env);
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toContain(`a retry of run ${(await ok(server, 'getMergeQueueTestingDetails', { ...Q, testRunId: two.testRunId })).retryOf}`);
    expect(logs.stdout).toContain('  failing tests (1):\n    suite › net works (quarantined)\n');
    const json = JSON.parse((await railyard(['mq', 'logs', '1', '--repo', 'github.com/acme/app', '--json'], env)).stdout);
    expect(json.failingTests.map((t: { name: string }) => t.name)).toEqual(['suite › net works', 'suite › db works']);

    // The metrics count the retry (one PR tested again in the last hour), and nothing ignored.
    const metrics = (await call(server, 'getMergeQueueMetrics')).text;
    expect(metrics).toMatch(/^mq_pr_flaky_retries_1h_total\{repo="acme\/app",branch="main",queue_type="main"\} 1$/m);
    expect(metrics).toMatch(/^mq_pr_flaky_ignored_1h_total\{repo="acme\/app",branch="main",queue_type="main"\} 0$/m);
  }, 90_000);
});
