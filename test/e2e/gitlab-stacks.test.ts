/**
 * Stacked MRs on GitLab, end to end: the real built server (`serve --gitlab`, hooks on) against
 * the GitLab emulator. An MR whose target branch is another open MR's source branch is stacked on
 * it; the stack is submitted from its top, tested and landed as one unit, bottom first.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  cleanup,
  ciOnTestBranches,
  createQueue,
  emulator,
  PROJECT,
  settled,
  startRailyard,
  submit,
  tempDir,
  until,
  waitFor,
} from './gitlab-harness.js';

afterEach(cleanup);

async function world(delayMs: number) {
  const gl = await emulator();
  gl.createProject(PROJECT, { files: { 'README.md': 'app\n' } });
  ciOnTestBranches(gl, () => 'success', delayMs);
  const server = await startRailyard(gl, { webhooks: true, dataDir: tempDir('railyard-gl-stacks-') });
  // !1 on main, !2 on !1's branch, !3 on !2's branch.
  const one = await gl.createMergeRequest(PROJECT, {
    sourceBranch: 'one',
    title: 'Add a',
    files: { 'a.txt': 'a\n' },
  });
  const two = await gl.createMergeRequest(PROJECT, {
    sourceBranch: 'two',
    targetBranch: 'one',
    title: 'Polish a, add b',
    files: { 'a.txt': 'a, polished\n', 'b.txt': 'b\n' },
  });
  const three = await gl.createMergeRequest(PROJECT, {
    sourceBranch: 'three',
    targetBranch: 'two',
    title: 'Add c',
    files: { 'c.txt': 'c\n' },
  });
  await createQueue(server, gl);
  return { gl, server, mrs: [one.iid, two.iid, three.iid] };
}

describe('serve --gitlab: stacked MRs', () => {
  it('submitting the top of a stack of 3 lands it bottom first in one run', async () => {
    const { gl, server, mrs } = await world(100);
    await submit(server, gl, mrs[2]!);
    const done = [];
    for (const n of mrs) done.push(await waitFor(server, gl, n, settled, 60_000));
    expect(done.map((p) => p.state)).toEqual(['merged', 'merged', 'merged']);
    expect(new Set(done.map((p) => p.testRunId)).size).toBe(1);
    const log = (await gl.log(PROJECT, 'main')).map((c) => c.message.trim().split('\n')[0]);
    expect(log.slice(0, 3)).toEqual(['Add c (#3)', 'Polish a, add b (#2)', 'Add a (#1)']);
  });

  it('closing the middle MR while the stack is tested removes the MR above it; the bottom lands alone', async () => {
    const { gl, server, mrs } = await world(3000);
    await submit(server, gl, mrs[2]!);
    await waitFor(server, gl, mrs[2]!, (p) => p.state === 'testing');
    gl.closeMergeRequest(PROJECT, mrs[1]!);
    expect(await waitFor(server, gl, mrs[1]!, settled)).toMatchObject({
      state: 'cancelled',
      stateReason: 'PR_CLOSED',
    });
    expect(await waitFor(server, gl, mrs[2]!, settled)).toMatchObject({
      state: 'cancelled',
      stateReason: 'STACKED_PR_MEMBER_CLOSED',
    });
    expect((await waitFor(server, gl, mrs[0]!, settled, 60_000)).state).toBe('merged');
    await until(
      'main holds !1',
      async () => (await gl.log(PROJECT, 'main'))[0]?.message.startsWith('Add a') ?? false,
    );
  });
});
