/**
 * Outgoing webhooks from `railyard serve --gitlab` against a self-managed GitLab that lives under
 * a path over plain HTTP (`http://host:port/gitlab`): the queue works through that address, and
 * the merge request links in event payloads (`railyard.pr_url`) point at it, not at
 * `https://host/…` (issue 25 item 3).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ok } from '../server/helpers.js';
import { startReceiver } from '../support/webhook-receiver.js';
import { ciOnTestBranches, cleanup, createQueue, emulator, PROJECT, settled, startRailyard, submit, tempDir, until, waitFor } from './gitlab-harness.js';

afterEach(cleanup);

describe('serve --gitlab at http://host:port/gitlab', () => {
  it('links merge requests in webhook payloads to the instance URL, path included', { timeout: 120_000 }, async () => {
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
      expect(new Set(links)).toEqual(new Set([`${gl.url}/acme/platform/app/-/merge_requests/${mr.iid}`]));
    } finally {
      await receiver.close();
    }
  });
});
