/**
 * The flake-aware merge queue on GitLab (issue 22): the real `railyard serve --gitlab` against the
 * GitLab emulator. The project's CI fails the `test` job of the pipeline on the test branch; CI
 * then uploads the JUnit report of that job for the test commit's SHA with
 * `railyard flaky upload --sha` (as an `after_script` or `when: always` job would), and the server,
 * waiting up to the queue's `flakyReportGraceSeconds` for it, links it to the run by that SHA. A
 * failure only of a quarantined test is ignored and the MR lands; without a report in time the
 * failed pipeline fails the MR.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ok } from '../server/helpers.js';
import { quarantinedNet, TEST_FILES, uploadFromCi } from '../support/flaky-ci.js';
import { ciOnTestBranches, cleanup, createQueue, emulator, PROJECT, repoOf, settled, startRailyard, submit, tempDir, until, waitFor } from './gitlab-harness.js';

afterEach(cleanup);

async function world(queue: Record<string, unknown>) {
  const gl = await emulator();
  gl.createProject(PROJECT, { files: { 'README.md': 'app\n', ...TEST_FILES } });
  // CI: the `test` job fails on every test branch.
  ciOnTestBranches(gl, () => 'failed');
  const server = await startRailyard(gl, { webhooks: true, dataDir: tempDir('railyard-gl-flaky-') });
  const repo = repoOf(gl);
  const { env } = await quarantinedNet(server, repo);
  await createQueue(server, gl, queue);
  return { gl, server, repo, env };
}

describe('serve --gitlab: failing tests from CI uploads', () => {
  it("lands an MR whose pipeline failed only on a quarantined test, from CI's upload for the test commit (FLAKY_FAILURES_IGNORED)", async () => {
    const { gl, server, repo, env } = await world({ flakyPolicy: 'ignore_quarantined', flakyReportGraceSeconds: 60 });
    const mr = await gl.createMergeRequest(PROJECT, { sourceBranch: 'feature', title: 'Feature', author: 'alice', files: { 'feature.txt': 'f\n' } });
    await submit(server, gl, mr.iid);
    const testing = await waitFor(server, gl, mr.iid, (p) => p.state === 'testing' && Boolean(p.testRunId));
    let sha = '';
    await until('the test commit', async () => {
      sha = (await ok(server, 'getMergeQueueTestingDetails', { repo, targetBranch: 'main', testRunId: testing.testRunId })).testBranchSha ?? '';
      return sha !== '';
    });
    // The pipeline fails first; CI's upload runs after the failed job.
    await until('the failed pipeline of the test commit', () => gl.pipelines(PROJECT).some((p) => p.sha === sha && p.status === 'failed'));
    const upload = await uploadFromCi(server, env, repo, { branch: testing.testBranch ?? 'railyard-merge/test', sha, failing: ['net'] });
    expect(upload.code, upload.stderr).toBe(0);

    const done = await waitFor(server, gl, mr.iid, settled, 30_000);
    expect(done, `!${mr.iid} ${done.state} (${done.stateReason ?? ''})`).toMatchObject({ state: 'merged' });
    const history = await ok(server, 'getPullRequestHistory', { repo, targetBranch: 'main', pr: { number: mr.iid } });
    expect(history.transitions.find((t: { state: string }) => t.state === 'tests_passed')).toMatchObject({
      reason: 'FLAKY_FAILURES_IGNORED',
      detail: 'failed only on ignored tests (flakyPolicy ignore_quarantined): suite › net works',
    });
    const details = await ok(server, 'getMergeQueueTestingDetails', { repo, targetBranch: 'main', testRunId: done.testRunId });
    expect(details.failingTests).toEqual([{ name: 'suite › net works', quarantined: true, flaky: true, changedByPr: false, ignored: true }]);
    expect((await gl.log(PROJECT, 'main'))[0]!.message).toContain('Feature');
  }, 60_000);

  it('fails an MR whose failed pipeline has no report within flakyReportGraceSeconds, after waiting for it', async () => {
    const { gl, server, repo } = await world({ flakyPolicy: 'ignore_quarantined', flakyReportGraceSeconds: 2 });
    const mr = await gl.createMergeRequest(PROJECT, { sourceBranch: 'one', title: 'One', author: 'alice', files: { 'one.txt': '1\n' } });
    await submit(server, gl, mr.iid);
    const failed = await waitFor(server, gl, mr.iid, settled, 30_000);
    expect(failed).toMatchObject({ state: 'failed', stateReason: 'TEST_RUN_REQUIRED_STATUS_FAILED' });
    const history = await ok(server, 'getPullRequestHistory', { repo, targetBranch: 'main', pr: { number: mr.iid } });
    const at = (state: string) => Date.parse(history.transitions.find((t: { state: string }) => t.state === state).at);
    expect(at('failed') - at('testing')).toBeGreaterThanOrEqual(2_000);
    const details = await ok(server, 'getMergeQueueTestingDetails', { repo, targetBranch: 'main', testRunId: failed.testRunId });
    expect(details.failingTests ?? []).toEqual([]);
  }, 60_000);
});
