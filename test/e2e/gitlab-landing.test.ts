/**
 * A blip of GitLab while landing (the push answered 502, the connection dropped) does not fail an
 * MR whose tests passed: the push is tried again, and a push that reached GitLab before its answer
 * was lost counts as landed — never pushed a second time. A push GitLab refuses (a protected branch
 * the token may not push to) still fails at once. Real `railyard serve --gitlab` against the
 * emulator's landing faults (failLanding).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ACCESS } from '../support/gitlab/index.js';
import { ciOnTestBranches, cleanup, createQueue, emulator, PROJECT, settled, startRailyard, submit, tempDir, waitFor } from './gitlab-harness.js';

afterEach(cleanup);

async function world() {
  const gl = await emulator();
  gl.createProject(PROJECT, { files: { 'README.md': 'app\n' } });
  ciOnTestBranches(gl);
  const server = await startRailyard(gl, { webhooks: true, dataDir: tempDir('railyard-gl-land-') });
  await createQueue(server, gl);
  const before = (await gl.branchSha(PROJECT, 'main'))!;
  const mr = await gl.createMergeRequest(PROJECT, { sourceBranch: 'feature', title: 'Add b', author: 'alice', files: { 'b.txt': 'b\n' } });
  return { gl, server, before, mr };
}

describe('serve --gitlab: a blip while landing', () => {
  it('GitLab answers 502 to the landing push twice: pushed again, the MR merges once', async () => {
    const { gl, server, before, mr } = await world();
    gl.failLanding(PROJECT, { times: 2, answer: 502 });
    await submit(server, gl, mr.iid);
    expect((await waitFor(server, gl, mr.iid, settled, 60_000)).state).toBe('merged');
    expect(gl.landingFaults.met.map((f) => f.answer)).toEqual([502, 502]);
    const main = await gl.log(PROJECT, 'main');
    expect(main).toHaveLength(2);
    expect(main[0]!.message).toContain('Add b');
    expect(main[1]!.sha).toBe(before);
    await server.stop(); // the log is written out
    expect(server.output()).toMatch(/git could not reach GitLab \([^)]*502[^)]*\) \(attempt 2\), retrying in \d+ s/);
  });

  it('the push reaches GitLab but the connection drops before the answer: landed, not pushed again', async () => {
    const { gl, server, before, mr } = await world();
    gl.failLanding(PROJECT, { answer: 'drop', after: true });
    await submit(server, gl, mr.iid);
    expect((await waitFor(server, gl, mr.iid, settled, 60_000)).state).toBe('merged');
    expect(gl.landingFaults.met).toHaveLength(1);
    const main = await gl.log(PROJECT, 'main');
    expect(main).toHaveLength(2);
    expect(main[1]!.sha).toBe(before);
    await server.stop();
    expect(server.output()).toMatch(/the push failed \(.*\) but main is at the tested commit: landed/);
    expect(server.output()).not.toMatch(/retrying in/);
  });

  it('a push GitLab refuses (protected branch) fails at once, never tried again', async () => {
    const { gl, server, before, mr } = await world();
    gl.protectBranch(PROJECT, 'main', { pushAccessLevel: ACCESS.maintainer });
    gl.setMember(PROJECT, 'railyard-bot', ACCESS.developer);
    await submit(server, gl, mr.iid);
    expect((await waitFor(server, gl, mr.iid, settled, 60_000)).state).toBe('failed');
    expect(await gl.branchSha(PROJECT, 'main')).toBe(before);
    await server.stop();
    expect(server.output()).toContain('You are not allowed to push code to protected branches on this project.');
    expect(server.output()).not.toMatch(/retrying in/);
  });
});
