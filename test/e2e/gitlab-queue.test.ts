/**
 * `railyard serve --gitlab` end to end: the real built server against the GitLab emulator (REST,
 * smart HTTP git with GitLab's push rules, CI pipelines, token-carrying hooks).
 * The tests run side by side (`it.concurrent`, each `scoped`: its own emulator, server and
 * cleanups), since they mostly wait on pipelines and on the queue.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ACCESS } from '../support/gitlab/index.js';
import { call } from '../server/helpers.js';
import {
  ciOnTestBranches,
  cleanup,
  createQueue,
  emulator,
  GL_TOKEN,
  HOOK_SECRET,
  PROJECT,
  repoOf,
  scoped,
  settled,
  startRailyard,
  submit,
  tempDir,
  until,
  waitFor,
} from './gitlab-harness.js';

afterEach(cleanup);

async function world(webhooks = true) {
  const gl = await emulator();
  gl.createProject(PROJECT, { files: { 'README.md': 'app\n', 'a.txt': 'a\n' } });
  ciOnTestBranches(gl);
  const server = await startRailyard(gl, { webhooks, dataDir: tempDir('railyard-gl-') });
  return { gl, server };
}

const ours = (gl: Awaited<ReturnType<typeof emulator>>, iid: number) =>
  gl.notes(PROJECT, iid).filter((n) => n.body.includes('railyard:merge-queue'));
const queueStatus = (gl: Awaited<ReturnType<typeof emulator>>, sha: string) =>
  gl.statuses(PROJECT, sha).find((s) => s.name === 'railyard/merge-queue')?.status;

describe('serve --gitlab', () => {
  it.concurrent(
    'lands a passing MR of a subgroup project: status, ONE note, MR closed, test branch gone, no secret kept',
    scoped(async () => {
      const { gl, server } = await world();
      await createQueue(server, gl);
      const mr = await gl.createMergeRequest(PROJECT, {
        sourceBranch: 'feature',
        title: 'Add b',
        author: 'alice',
        files: { 'b.txt': 'b\n' },
      });
      await submit(server, gl, mr.iid);
      const done = await waitFor(server, gl, mr.iid, settled);
      expect(done, `${done.state} (${done.stateReason ?? ''})`).toMatchObject({
        state: 'merged',
        prTitle: 'Add b',
      });
      const main = await gl.log(PROJECT, 'main');
      expect(main[0]!.message).toContain('Add b');
      await until('MR closed (squash landing)', () => gl.getMergeRequest(PROJECT, mr.iid).state === 'closed');
      await until('success status on the MR head', () => queueStatus(gl, mr.sha) === 'success');
      await until(
        'one note naming the landed commit',
        () => ours(gl, mr.iid).length === 1 && ours(gl, mr.iid)[0]!.body.includes(main[0]!.sha),
      );
      await until('test branches deleted', async () =>
        (await gl.branches(PROJECT)).every((b) => !b.startsWith('railyard-merge/')),
      );
      expect(gl.deliveries.filter((d) => d.status === 401)).toEqual([]);
      expect(server.output()).not.toContain(GL_TOKEN);
      for (const f of readdirSync(server.dataDir, { recursive: true, encoding: 'utf8' }).map((x) =>
        join(server.dataDir, x),
      )) {
        if (!statSync(f).isFile()) continue;
        const text = readFileSync(f, 'latin1');
        expect(text.includes(GL_TOKEN) || text.includes(HOOK_SECRET), f).toBe(false);
      }
    }),
  );

  it.concurrent(
    'lands with merge commits so GitLab marks the MR merged by itself',
    scoped(async () => {
      const { gl, server } = await world();
      await createQueue(server, gl, { mergeMethod: 'merge_commit' });
      const mr = await gl.createMergeRequest(PROJECT, {
        sourceBranch: 'm',
        title: 'Merge me',
        files: { 'm.txt': 'm\n' },
      });
      await submit(server, gl, mr.iid);
      expect((await waitFor(server, gl, mr.iid, settled)).state).toBe('merged');
      expect((await gl.log(PROJECT, 'main'))[0]!.message).toMatch(/^Merge pull request #1: Merge me/);
      await until('GitLab marks it merged', () => gl.getMergeRequest(PROJECT, mr.iid).state === 'merged');
    }),
  );

  it.concurrent(
    'fails an MR whose pipeline fails, and says which job',
    scoped(async () => {
      const { gl, server } = await world();
      ciOnTestBranches(gl, () => 'failed');
      await createQueue(server, gl);
      const mr = await gl.createMergeRequest(PROJECT, { sourceBranch: 'bad', files: { 'c.txt': 'c\n' } });
      await submit(server, gl, mr.iid);
      const done = await waitFor(server, gl, mr.iid, settled);
      expect(done.state).toBe('failed');
      await until(
        'failed status and note',
        () => queueStatus(gl, mr.sha) === 'failed' && /`test`/.test(ours(gl, mr.iid)[0]?.body ?? ''),
      );
      expect((await gl.log(PROJECT, 'main')).length).toBe(1);
    }),
  );

  it.concurrent(
    'refuses a protected target once, failing the run with GitLab’s message, never looping',
    scoped(async () => {
      const { gl, server } = await world();
      gl.protectBranch(PROJECT, 'main', { pushAccessLevel: ACCESS.maintainer });
      gl.setMember(PROJECT, 'railyard-bot', ACCESS.developer);
      await createQueue(server, gl);
      const mr = await gl.createMergeRequest(PROJECT, { sourceBranch: 'p', files: { 'p.txt': 'p\n' } });
      await submit(server, gl, mr.iid);
      const done = await waitFor(server, gl, mr.iid, settled);
      expect(done.state).toBe('failed');
      expect(server.output()).toContain(
        'You are not allowed to push code to protected branches on this project.',
      );
      await new Promise((r) => setTimeout(r, 1000));
      // One test pipeline, not a loop of rebuilds.
      expect(gl.pipelines(PROJECT).filter((p) => p.ref.startsWith('railyard-merge/')).length).toBe(1);
    }),
  );

  it.concurrent(
    'cancels an MR pushed to or closed while queued, and restarts on an outside push to the target',
    scoped(async () => {
      const { gl, server } = await world();
      ciOnTestBranches(gl, () => 'success', 1500);
      await createQueue(server, gl);
      const a = await gl.createMergeRequest(PROJECT, { sourceBranch: 'a', files: { 'x.txt': 'x\n' } });
      await submit(server, gl, a.iid);
      await waitFor(server, gl, a.iid, (pr) => pr.state === 'testing');
      await gl.pushToMergeRequest(PROJECT, a.iid, { 'x.txt': 'x2\n' });
      const pushed = await waitFor(server, gl, a.iid, settled);
      expect([pushed.state, pushed.stateReason]).toEqual(['cancelled', 'PR_PUSHED_TO']);

      const b = await gl.createMergeRequest(PROJECT, { sourceBranch: 'b', files: { 'y.txt': 'y\n' } });
      await submit(server, gl, b.iid);
      await waitFor(server, gl, b.iid, (pr) => pr.state === 'testing');
      gl.closeMergeRequest(PROJECT, b.iid);
      expect((await waitFor(server, gl, b.iid, settled)).state).toBe('cancelled');

      const c = await gl.createMergeRequest(PROJECT, { sourceBranch: 'c', files: { 'z.txt': 'z\n' } });
      await submit(server, gl, c.iid);
      await waitFor(server, gl, c.iid, (pr) => pr.state === 'testing');
      await gl.pushCommit(PROJECT, 'main', { 'outside.txt': 'o\n' }, { author: 'admin' });
      const done = await waitFor(server, gl, c.iid, settled);
      expect(done.state).toBe('merged');
      const log = await gl.log(PROJECT, 'main');
      expect(log.some((x) => x.message.includes('outside.txt'))).toBe(true);
    }),
  );

  it.concurrent(
    'takes /railyard merge from a Developer and ignores it from a Reporter',
    scoped(async () => {
      const { gl, server } = await world();
      await createQueue(server, gl);
      gl.setMember(PROJECT, 'dev', ACCESS.developer);
      gl.setMember(PROJECT, 'rep', ACCESS.reporter);
      const mr = await gl.createMergeRequest(PROJECT, { sourceBranch: 'cmd', files: { 'k.txt': 'k\n' } });
      gl.note(PROJECT, mr.iid, 'rep', '/railyard merge');
      await until('the Reporter’s command is refused', () =>
        /ignored: not a Developer/.test(server.output()),
      );
      gl.note(PROJECT, mr.iid, 'dev', '/railyard merge --priority high');
      await until(
        'the Developer’s command submitted it',
        async () =>
          (
            await call(server, 'getSubmittedPullRequest', {
              repo: repoOf(gl),
              targetBranch: 'main',
              pr: { number: mr.iid },
            })
          ).status === 200,
      );
      expect((await waitFor(server, gl, mr.iid, settled)).state).toBe('merged');
    }),
  );

  it.concurrent(
    'works without hooks by polling',
    scoped(async () => {
      const { gl, server } = await world(false);
      await createQueue(server, gl);
      const mr = await gl.createMergeRequest(PROJECT, { sourceBranch: 'poll', files: { 'q.txt': 'q\n' } });
      await submit(server, gl, mr.iid);
      expect((await waitFor(server, gl, mr.iid, settled)).state).toBe('merged');
      expect(gl.deliveries).toEqual([]);
    }),
  );
});
