/**
 * `railyard serve --gitlab` end to end, what GitLab holds and what the queue must not do twice
 * (issue 24 items 2 and 6, decisions "Round 3"): an MR GitLab holds (approvals, threads, another
 * MR) waits with `readiness.waitingFor: branch_protection` and says why on the note and in `mq
 * status`, then goes ahead by itself; the queue's own status never holds it; a replayed delivery
 * after a restart is not acted on twice; parallel lanes land independently.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { isolatedEnv, railyard } from '../support/cli.js';
import { ACCESS } from '../support/gitlab/index.js';
import { call, ok } from '../server/helpers.js';
import {
  API_TOKEN,
  cleanup,
  createQueue,
  emulator,
  gitlabWorld,
  ourNote,
  PROJECT,
  repoOf,
  settled,
  startRailyard,
  submit,
  tempDir,
  until,
  waitFor,
} from './gitlab-harness.js';

afterEach(cleanup);

type Gl = Awaited<ReturnType<typeof emulator>>;

const world = (opts: { dataDir?: string; ciMs?: number } = {}) => gitlabWorld(opts);
const testPipelines = (gl: Gl) =>
  gl.pipelines(PROJECT).filter((p) => p.ref.startsWith('railyard-merge/')).length;

describe('serve --gitlab: what GitLab holds, and acting once', () => {
  it.each([
    ['not_approved', /approvals/],
    ['discussions_not_resolved', /threads/],
    ['blocked_status', /blocked by another merge request/],
  ] as const)(
    'an MR GitLab holds (%s) waits as branch_protection, says why on the note and in mq status, and goes ahead once lifted',
    async (blocker, why) => {
      const { gl, server } = await world();
      await createQueue(server, gl);
      const mr = await gl.createMergeRequest(PROJECT, {
        sourceBranch: 'held',
        author: 'alice',
        files: { 'h.txt': 'h\n' },
      });
      gl.setMergeBlocker(PROJECT, mr.iid, blocker);
      await submit(server, gl, mr.iid);
      const waiting = await waitFor(server, gl, mr.iid, (p) =>
        (p.readiness?.waitingFor ?? []).includes('branch_protection'),
      );
      expect(waiting.state).toBe('not_ready');
      expect(waiting.readiness.blockedBy).toMatch(why);
      await until('the note says what GitLab waits for', () => why.test(ourNote(gl, mr.iid)));
      const env = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: API_TOKEN });
      const status = await railyard(['mq', 'status', String(mr.iid), '--repo', `${gl.host}/${PROJECT}`], env);
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toMatch(why);
      expect(testPipelines(gl)).toBe(0);
      gl.setMergeBlocker(PROJECT, mr.iid, null);
      expect((await waitFor(server, gl, mr.iid, settled)).state).toBe('merged');
    },
  );

  it("with 'Pipelines must succeed', the queue's own pending status on the MR never holds it", async () => {
    const { gl, server } = await world();
    gl.setOnlyAllowMergeIfPipelineSucceeds(PROJECT, true);
    // The MR's own pipeline passed; only the queue's status is pending on its head.
    gl.setCi(PROJECT, () => [{ name: 'test', status: 'success', delayMs: 50 }]);
    await createQueue(server, gl);
    const mr = await gl.createMergeRequest(PROJECT, { sourceBranch: 'own', files: { 'o.txt': 'o\n' } });
    await until('the MR pipeline passed', () =>
      gl.pipelines(PROJECT).some((p) => p.ref === 'own' && p.status === 'success'),
    );
    await submit(server, gl, mr.iid);
    expect((await waitFor(server, gl, mr.iid, settled)).state).toBe('merged');
  });

  it('a /railyard merge note replayed after a restart (same delivery) is not acted on twice', async () => {
    const dataDir = tempDir('railyard-gl-');
    const { gl, server } = await world({ dataDir });
    await createQueue(server, gl);
    gl.setMember(PROJECT, 'dev', ACCESS.developer);
    const mr = await gl.createMergeRequest(PROJECT, { sourceBranch: 'cmd', files: { 'c.txt': 'c\n' } });
    gl.note(PROJECT, mr.iid, 'dev', '/railyard merge');
    const q = { repo: repoOf(gl), targetBranch: 'main', pr: { number: mr.iid } };
    await until(
      'the command submitted the MR',
      async () => (await call(server, 'getSubmittedPullRequest', q)).status === 200,
    );
    await ok(server, 'cancelPullRequest', q);
    await waitFor(server, gl, mr.iid, (p) => p.state === 'cancelled');
    const delivery = gl.deliveries.find(
      (d) =>
        d.event === 'Note Hook' &&
        String((d.payload.object_attributes as { note?: string }).note).startsWith('/railyard merge'),
    )!;
    expect(delivery.status).toBe(202);
    await server.stop();
    const again = await startRailyard(gl, { webhooks: true, dataDir });
    // GitLab redelivers with the same UUID: handled already (in the database), nothing queued again.
    expect(await gl.redeliver(delivery.uuid)).toBe(200);
    // Time for a wrongly accepted command to act (nothing can be waited for when nothing happens).
    await new Promise((r) => setTimeout(r, 1500));
    expect((await waitFor(again, gl, mr.iid, () => true)).state).toBe('cancelled');
    // One submission in the PR's history, ended by the cancel: the replayed note queued nothing.
    // (Not a search of the log for "submitted": the access log names getSubmittedPullRequest, the
    // test's own reads, and whether that line was flushed yet decided the result.)
    const { transitions } = (await ok(again, 'getPullRequestHistory', q)) as {
      transitions: { queueEntryId: string; state: string }[];
    };
    expect(new Set(transitions.map((t) => t.queueEntryId)).size).toBe(1);
    expect(transitions.at(-1)!.state).toBe('cancelled');
  });

  it('parallel lanes: MRs with disjoint impacted targets test and land independently', async () => {
    const { gl, server } = await world({ ciMs: 1500 });
    await createQueue(server, gl, { mode: 'parallel', concurrency: 2 });
    const a = await gl.createMergeRequest(PROJECT, {
      sourceBranch: 'lane-a',
      title: 'Lane A',
      files: { 'a/x.txt': 'a\n' },
    });
    const b = await gl.createMergeRequest(PROJECT, {
      sourceBranch: 'lane-b',
      title: 'Lane B',
      files: { 'b/y.txt': 'b\n' },
    });
    for (const [mr, target] of [
      [a, 'a'],
      [b, 'b'],
    ] as const) {
      await ok(server, 'setImpactedTargets', {
        repo: repoOf(gl),
        targetBranch: 'main',
        pr: { number: mr.iid, sha: mr.sha },
        impactedTargets: [target],
      });
      await submit(server, gl, mr.iid);
    }
    // Both test at once, each on its own lane (neither on top of the other).
    const [ta, tb] = await Promise.all([
      waitFor(server, gl, a.iid, (p) => p.state === 'testing'),
      waitFor(server, gl, b.iid, (p) => p.state === 'testing'),
    ]);
    expect(ta.testRunId).not.toBe(tb.testRunId);
    for (const mr of [a, b]) expect((await waitFor(server, gl, mr.iid, settled)).state).toBe('merged');
    const files = (await gl.log(PROJECT, 'main')).map((c) => c.message).join('\n');
    expect(files).toContain('Lane A');
    expect(files).toContain('Lane B');
  });
});
