/**
 * `railyard serve --gitlab` end to end, continued: a conflicting MR, batching with bisection
 * (one bad MR in a batch of four is found and the rest land), and a restart of the server in the
 * middle of a run (the run is picked up again and lands once).
 * The tests run side by side (`it.concurrent`, each `scoped`: its own emulator, server and
 * cleanups), since they mostly wait on pipelines and on the queue.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  ciOnTestBranches,
  cleanup,
  createQueue,
  emulator,
  PROJECT,
  scoped,
  settled,
  startRailyard,
  submit,
  tempDir,
  waitFor,
} from './gitlab-harness.js';
import { until } from '../support/forge-e2e.js';

afterEach(cleanup);

describe('serve --gitlab: conflicts, batches, restarts', () => {
  it.concurrent(
    'fails a conflicting MR and lands the other',
    scoped(async () => {
      const gl = await emulator();
      gl.createProject(PROJECT, { files: { 'README.md': 'app\n', 'a.txt': 'a\n' } });
      ciOnTestBranches(gl);
      const server = await startRailyard(gl, { webhooks: true, dataDir: tempDir('railyard-gl-') });
      await createQueue(server, gl);
      const one = await gl.createMergeRequest(PROJECT, { sourceBranch: 'one', files: { 'a.txt': 'one\n' } });
      const two = await gl.createMergeRequest(PROJECT, { sourceBranch: 'two', files: { 'a.txt': 'two\n' } });
      await submit(server, gl, one.iid);
      await submit(server, gl, two.iid);
      expect((await waitFor(server, gl, one.iid, settled)).state).toBe('merged');
      const second = await waitFor(
        server,
        gl,
        two.iid,
        (pr) => pr.state === 'failed' || pr.state === 'not_ready' || settled(pr),
      );
      expect(['failed', 'not_ready']).toContain(second.state);
    }),
  );

  it.concurrent(
    'names the files of an MR waiting on a conflict with its target (GitLab says only that it conflicts)',
    scoped(async () => {
      const gl = await emulator();
      gl.createProject(PROJECT, { files: { 'README.md': 'app\n', 'a.txt': 'a\n' } });
      ciOnTestBranches(gl);
      const server = await startRailyard(gl, { webhooks: true, dataDir: tempDir('railyard-gl-') });
      await createQueue(server, gl);
      const one = await gl.createMergeRequest(PROJECT, {
        sourceBranch: 'one',
        title: 'One',
        files: { 'a.txt': 'one\n' },
      });
      const two = await gl.createMergeRequest(PROJECT, {
        sourceBranch: 'two',
        title: 'Two',
        files: { 'a.txt': 'two\n' },
      });
      await submit(server, gl, one.iid);
      expect((await waitFor(server, gl, one.iid, settled)).state).toBe('merged');
      await submit(server, gl, two.iid);
      await waitFor(server, gl, two.iid, (pr) => pr.state === 'not_ready');
      const named =
        /conflicts with main in a\.txt \(changed by [0-9a-f]{7} '[^']*'(?: \/ #\d+)?\): rebase on main/;
      await until('the note names the conflicting file', () =>
        gl.notes(PROJECT, two.iid).some((n) => named.test(n.body)),
      );
    }),
  );

  it.concurrent(
    'batches four MRs, bisects the one that breaks CI, and lands the other three',
    scoped(async () => {
      const gl = await emulator();
      gl.createProject(PROJECT, { files: { 'README.md': 'app\n' } });
      // CI fails every test commit that holds MR !2 (the test branch names the MRs it holds).
      const prsIn = (branch: string) =>
        (/^railyard-merge\/pr-([\d-]+)\//.exec(branch)?.[1] ?? '').split('-').map(Number);
      gl.setCi(PROJECT, (push) =>
        push.branch.startsWith('railyard-merge/')
          ? [{ name: 'test', status: prsIn(push.branch).includes(2) ? 'failed' : 'success', delayMs: 150 }]
          : [],
      );
      const server = await startRailyard(gl, { webhooks: true, dataDir: tempDir('railyard-gl-') });
      await createQueue(server, gl, { batch: true, batchingMinSize: 4, batchingMaxWaitTimeMinutes: 1 });
      const mrs = [];
      for (const [i, file] of ['a.txt', 'bad.txt', 'c.txt', 'd.txt'].entries())
        mrs.push(
          await gl.createMergeRequest(PROJECT, {
            sourceBranch: `b${i}`,
            title: `MR ${i}`,
            files: { [file]: `${i}\n` },
          }),
        );
      for (const mr of mrs) await submit(server, gl, mr.iid);
      const states = [];
      for (const mr of mrs) states.push((await waitFor(server, gl, mr.iid, settled, 60_000)).state);
      expect(states).toEqual(['merged', 'failed', 'merged', 'merged']);
      const log = (await gl.log(PROJECT, 'main')).map((c) => c.message);
      expect(log.some((m) => m.includes('MR 1'))).toBe(false);
    }),
  );

  it.concurrent(
    'picks up a run after a restart in the middle of it and lands it once',
    scoped(async () => {
      const gl = await emulator();
      gl.createProject(PROJECT, { files: { 'README.md': 'app\n' } });
      ciOnTestBranches(gl, () => 'success', 3000);
      const dataDir = tempDir('railyard-gl-');
      const first = await startRailyard(gl, { webhooks: true, dataDir });
      await createQueue(first, gl);
      const mr = await gl.createMergeRequest(PROJECT, {
        sourceBranch: 'r',
        title: 'Restart me',
        files: { 'r.txt': 'r\n' },
      });
      await submit(first, gl, mr.iid);
      await waitFor(first, gl, mr.iid, (pr) => pr.state === 'testing');
      await first.kill();
      const second = await startRailyard(gl, { webhooks: true, dataDir });
      expect((await waitFor(second, gl, mr.iid, settled, 60_000)).state).toBe('merged');
      const landed = (await gl.log(PROJECT, 'main')).filter((c) => c.message.includes('Restart me'));
      expect(landed).toHaveLength(1);
    }),
  );
});
