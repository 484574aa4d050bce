/**
 * `railyard serve --gitlab` asks GitLab only what can change the answer, and users see the same:
 * a Pipeline or Job hook saying the pipeline is still created, pending or running prompts no read
 * of the test commit's statuses (nothing can be decided on it; the job's finish has its own hook);
 * a progress edit of the MR's note waits until the state has held a few seconds, so a quick run
 * goes from queued straight to merged in one edit, while a long run still shows `testing`. The
 * real built server against the GitLab emulator, with hooks.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { GitLabEmulator } from '../support/gitlab/index.js';
import { ok } from '../server/helpers.js';
import { cleanup, gitlabWorld, ourNote, repoOf, settled, submit, until, waitFor } from './gitlab-harness.js';

afterEach(cleanup);

/** Reads of the statuses of commits other than `head` (the queue's test commits) among `requests`. */
const testCommitReads = (gl: GitLabEmulator, head: string, upTo = gl.requests.length) =>
  gl.requests
    .slice(0, upTo)
    .filter(
      (r) =>
        r.method === 'GET' &&
        /\/repository\/commits\/[0-9a-f]{40}\/statuses$/.test(r.path) &&
        !r.path.includes(head),
    ).length;

/** Edits of MR `iid`'s notes (PUT …/merge_requests/:iid/notes/:id). */
const noteEdits = (gl: GitLabEmulator, iid: number) =>
  gl.requests.filter((r) => r.method === 'PUT' && r.path.includes(`/merge_requests/${iid}/notes/`)).length;

describe('serve --gitlab: requests that cannot change the answer are not made', () => {
  it('hooks saying the pipeline is still running prompt no read of the test commit; its finish does, and the MR lands', async () => {
    // Poll rounds every 30 s: within the run, only hooks prompt reads.
    const { gl, server } = await gitlabWorld({
      jobs: [{ name: 'test', status: 'success', delayMs: 4000 }],
      pollSeconds: 30,
      queue: true,
    });
    const mr = await gl.createMergeRequest('acme/platform/app', {
      sourceBranch: 'one',
      files: { 'one.txt': '1\n' },
    });
    await submit(server, gl, mr.iid);
    await waitFor(server, gl, mr.iid, (p) => p.state === 'testing');
    // The pipeline's created, pending and running hooks came at the push; its job runs 4 s.
    await new Promise((r) => setTimeout(r, 2500));
    expect(testCommitReads(gl, mr.sha)).toBe(0);
    expect((await waitFor(server, gl, mr.iid, settled, 30_000)).state).toBe('merged');
    expect(testCommitReads(gl, mr.sha)).toBeGreaterThanOrEqual(1);
  }, 60_000);

  it('a quick run goes from queued to merged in one edit of the note; a long run shows testing in it', async () => {
    const { gl, server } = await gitlabWorld({ ciMs: 300, queue: true });
    const Q = { repo: repoOf(gl), targetBranch: 'main' };
    const quick = await gl.createMergeRequest('acme/platform/app', {
      sourceBranch: 'quick',
      files: { 'quick.txt': 'q\n' },
    });
    // Queued (pending) while the queue is paused: the note says so; then a run of a second.
    await ok(server, 'updateQueue', { ...Q, state: 'paused' });
    await submit(server, gl, quick.iid);
    await until('the note says pending', () => ourNote(gl, quick.iid).includes('**pending**'));
    expect(noteEdits(gl, quick.iid)).toBe(0);
    await ok(server, 'updateQueue', { ...Q, state: 'running' });
    expect((await waitFor(server, gl, quick.iid, settled)).state).toBe('merged');
    await until('the note says merged', () => /merged/i.test(ourNote(gl, quick.iid)));
    // Testing held less than the settle time: never shown, the note went from queued to merged.
    expect(noteEdits(gl, quick.iid)).toBe(1);

    gl.setCi('acme/platform/app', (push) =>
      push.branch.startsWith('railyard-merge/') ? [{ name: 'test', status: 'success', delayMs: 6000 }] : [],
    );
    const slow = await gl.createMergeRequest('acme/platform/app', {
      sourceBranch: 'slow',
      files: { 'slow.txt': 's\n' },
    });
    await submit(server, gl, slow.iid);
    await until('the note shows testing', () => ourNote(gl, slow.iid).includes('**testing**'), 15_000);
    expect((await waitFor(server, gl, slow.iid, settled)).state).toBe('merged');
  }, 60_000);
});
