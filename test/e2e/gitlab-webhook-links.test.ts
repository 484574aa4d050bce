/**
 * Links from `railyard serve --gitlab` against a self-managed GitLab that lives under a path over
 * plain HTTP (`http://host:port/gitlab`): the queue works through that address, and every link to
 * the merge request, the project or a test's file points at it, not at `https://host/…` — in event
 * payloads (`railyard.pr_url`, flaky-test events' `html_url`s), in the run details'
 * `testedPullRequests[].prUrl` and in the flaky-test answers (issue 25 item 3, issue 24).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ok } from '../server/helpers.js';
import { startReceiver } from '../support/webhook-receiver.js';
import { ciOnTestBranches, cleanup, createQueue, emulator, PROJECT, repoOf, settled, startRailyard, submit, tempDir, until, waitFor } from './gitlab-harness.js';

afterEach(cleanup);

describe('serve --gitlab at http://host:port/gitlab', () => {
  it('links merge requests, the project and test files in webhook payloads and answers to the instance URL, path included', { timeout: 120_000 }, async () => {
    const gl = await emulator({ pathPrefix: '/gitlab' });
    expect(gl.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/gitlab$/);
    gl.createProject(PROJECT, { files: { 'README.md': 'app\n' } });
    ciOnTestBranches(gl);
    const receiver = await startReceiver();
    try {
      const server = await startRailyard(gl, {
        webhooks: false,
        dataDir: tempDir('railyard-gl-'),
        extraArgs: ['--webhook-allow-private', '--webhook-allow-http'],
      });
      const created = await ok(server, 'createWebhook', { url: receiver.url });
      receiver.secrets.push(created.secret);
      await createQueue(server, gl);
      const mr = await gl.createMergeRequest(PROJECT, { sourceBranch: 'feature', title: 'Add b', author: 'alice', files: { 'b.txt': 'b\n' } });
      await submit(server, gl, mr.iid);
      const done = await waitFor(server, gl, mr.iid, settled);
      expect(done.state, done.stateReason ?? '').toBe('merged');
      await until('the merged event', () => receiver.delivered.some((d) => d.json.type === 'pull_request.merged'));
      const links = receiver.delivered.filter((d) => d.json.pr_number === mr.iid).map((d) => (d.json.railyard as { pr_url?: string } | undefined)?.pr_url);
      expect(links.length).toBeGreaterThan(1);
      const mrPage = `${gl.url}/acme/platform/app/-/merge_requests/${mr.iid}`;
      expect(new Set(links)).toEqual(new Set([mrPage]));
      const repo = repoOf(gl);
      const details = await ok(server, 'getMergeQueueTestingDetails', { repo, targetBranch: 'main', testRunId: done.testRunId });
      expect(details.testedPullRequests).toEqual([{ prNumber: mr.iid, prUrl: mrPage, title: 'Add b' }]);

      // A test turning flaky (failed, then passed on retry on one commit): its links are GitLab's pages.
      const report = `<testsuite name="auth"><testcase classname="auth" name="logs in" file="test/login.test.ts"><failure message="Timeout"/></testcase><testcase classname="auth" name="logs in" file="test/login.test.ts"/></testsuite>`;
      await ok(server, 'uploadTestResults', { repo, org_url_slug: server.org, branch: 'main', sha: 'a'.repeat(40), reports: [{ name: 'junit.xml', content: report }] });
      await until('the flaky-test events', () => ['test_case.status_changed', 'test_case.monitor_status_changed'].every((t) => receiver.delivered.some((d) => d.json.type === t)));
      const project = `${gl.url}/acme/platform/app`;
      const file = `${project}/-/blob/HEAD/test/login.test.ts`;
      const changed = receiver.delivered.find((d) => d.json.type === 'test_case.status_changed')!.json;
      expect(changed.test_case).toMatchObject({ name: 'logs in', repository: { html_url: project }, html_url: file });
      expect(changed.railyard).toEqual({ repository: repo });
      const monitor = receiver.delivered.find((d) => d.json.type === 'test_case.monitor_status_changed')!.json;
      expect(monitor.repository).toMatchObject({ html_url: project });
      const testId = (changed.test_case as { id: string }).id;
      const shown = await ok(server, 'getTestDetails', { repo, org_url_slug: server.org, test_id: testId });
      expect(shown.test).toMatchObject({ repository: { html_url: project }, html_url: file });
    } finally {
      await receiver.close();
    }
  });
});
