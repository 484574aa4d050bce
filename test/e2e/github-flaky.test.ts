/**
 * The flake-aware merge queue on GitHub (issue 22): the real `railyard serve --github` against the
 * GitHub emulator. The repository's CI fails the `test` check on the test branch, then uploads the
 * JUnit report of that run for the test commit's SHA with `railyard flaky upload --sha` (the
 * upload code the Action shares); the server links it to the run by that SHA. A failure only of a
 * quarantined test is ignored and the PR lands; when no report arrives within the queue's
 * `flakyReportGraceSeconds`, the failed check is an ordinary failure.
 */
import { describe, expect, it } from 'vitest';
import { ok } from '../server/helpers.js';
import { quarantinedNet, TEST_FILES, uploadFromCi } from '../support/flaky-ci.js';
import { createQueue, emulator, NAME, OWNER, repoOf, scoped, settled, startRailyard, submit, tempDir, waitFor, waitForTesting, waitForTestCommit } from './github-harness.js';

async function world(queue: Record<string, unknown>) {
  const gh = await emulator();
  gh.createRepo(OWNER, NAME, { files: { 'README.md': 'app\n', ...TEST_FILES } });
  // CI: the `test` check fails on every test branch (in 50 ms); PR heads and main pass.
  gh.setCi(OWNER, NAME, ({ branch }) => [{ name: 'test', conclusion: branch.startsWith('railyard-merge/') ? 'failure' : 'success' }]);
  // Webhooks drive it; polled every second, not five times a second (each poll is a git ls-remote).
  const server = await startRailyard(gh, { webhooks: true, dataDir: tempDir('railyard-gh-flaky-'), pollSeconds: 1 });
  const repo = repoOf(gh);
  const { netId, env } = await quarantinedNet(server, repo);
  await createQueue(server, gh, { createPrsForTestingBranches: false, ...queue });
  return { gh, server, repo, env, netId };
}

describe('serve --github: failing tests from CI uploads', () => {
  // Each test has its own emulator, server and cleanups (`scoped`): the two run side by side.
  it.concurrent("ignores a failure only of a quarantined test reported by CI's upload for the test commit: the PR lands", scoped(async () => {
    const { gh, server, repo, env, netId } = await world({ flakyPolicy: 'ignore_quarantined' });
    const pr = await gh.createPullRequest(OWNER, NAME, { head: 'feat', title: 'Feature', files: { 'feature.txt': 'f\n' } });
    await submit(server, gh, pr.number);
    const testing = await waitForTesting(server, gh, pr.number);
    const sha = await waitForTestCommit(server, gh, testing.testRunId);
    // The check fails first; CI's upload step runs after it, as `if: always()` steps do.
    await expect.poll(() => gh.checkRuns(OWNER, NAME, sha).map((c) => c.conclusion), { timeout: 10_000 }).toEqual(['failure']);
    const upload = await uploadFromCi(server, env, repo, { branch: testing.testBranch ?? 'railyard-merge/test', sha, failing: ['net'] });
    expect(upload.code, upload.stderr).toBe(0);

    const done = await waitFor(server, gh, pr.number, settled, 30_000);
    expect(done, `#${pr.number} ${done.state} (${done.stateReason ?? ''})`).toMatchObject({ state: 'merged' });
    const history = await ok(server, 'getPullRequestHistory', { repo, targetBranch: 'main', pr: { number: pr.number } });
    expect(history.transitions.find((t: { state: string }) => t.state === 'tests_passed')).toMatchObject({
      reason: 'FLAKY_FAILURES_IGNORED',
      detail: 'failed only on ignored tests (flakyPolicy ignore_quarantined): suite › net works',
    });
    const details = await ok(server, 'getMergeQueueTestingDetails', { repo, targetBranch: 'main', testRunId: done.testRunId });
    expect(details.failingTests).toEqual([{ name: 'suite › net works', quarantined: true, flaky: true, changedByPr: false, ignored: true }]);
    // Links point at GitHub's pages of the repository (src/server/links.ts).
    const page = `https://${repo.host}/${OWNER}/${NAME}`;
    expect(details.testedPullRequests).toEqual([{ prNumber: pr.number, prUrl: `${page}/pull/${pr.number}`, title: 'Feature' }]);
    const net = await ok(server, 'getTestDetails', { repo, org_url_slug: server.org, test_id: netId });
    expect(net.test).toMatchObject({ repository: { html_url: page }, html_url: `${page}/blob/HEAD/tests/net.test.ts` });
  }), 60_000);

  it.concurrent('a failed check with no report within flakyReportGraceSeconds fails the PR as before; a report of a test the PR changes is never ignored', scoped(async () => {
    const { gh, server, repo, env } = await world({ flakyPolicy: 'ignore_quarantined', flakyReportGraceSeconds: 2 });
    const one = await gh.createPullRequest(OWNER, NAME, { head: 'one', title: 'One', files: { 'one.txt': '1\n' } });
    await submit(server, gh, one.number);
    const testing = await waitForTesting(server, gh, one.number);
    const sha = await waitForTestCommit(server, gh, testing.testRunId);
    await expect.poll(() => gh.checkRuns(OWNER, NAME, sha).map((c) => c.conclusion), { timeout: 10_000 }).toEqual(['failure']);
    const failed = await waitFor(server, gh, one.number, settled, 30_000);
    expect(failed).toMatchObject({ state: 'failed', stateReason: 'TEST_RUN_REQUIRED_STATUS_FAILED' });
    // It waited for the grace period (2 s, counted from the CI verdict, which comes after testing began) before failing.
    const h1 = await ok(server, 'getPullRequestHistory', { repo, targetBranch: 'main', pr: { number: one.number } });
    const at = (state: string) => Date.parse(h1.transitions.find((t: { state: string }) => t.state === state).at);
    expect(at('failed') - at('testing')).toBeGreaterThanOrEqual(2_000);

    // #2 rewrites the quarantined test's file, and it fails there: never ignored (a grace long enough for the upload below).
    await ok(server, 'updateQueue', { repo, targetBranch: 'main', flakyReportGraceSeconds: 60 });
    const two = await gh.createPullRequest(OWNER, NAME, { head: 'two', title: 'Two', files: { 'tests/net.test.ts': 'net, rewritten\n' } });
    await submit(server, gh, two.number);
    const t2 = await waitForTesting(server, gh, two.number);
    const sha2 = await waitForTestCommit(server, gh, t2.testRunId);
    const upload = await uploadFromCi(server, env, repo, { branch: 'x', sha: sha2, failing: ['net'] });
    expect(upload.code, upload.stderr).toBe(0);
    const done = await waitFor(server, gh, two.number, settled, 30_000);
    expect(done).toMatchObject({ state: 'failed', stateReason: 'TEST_RUN_REQUIRED_STATUS_FAILED' });
    const details = await ok(server, 'getMergeQueueTestingDetails', { repo, targetBranch: 'main', testRunId: done.testRunId });
    expect(details.failingTests).toEqual([{ name: 'suite › net works', quarantined: true, flaky: true, changedByPr: true, ignored: false }]);
  }), 60_000);
});
