/**
 * `railyard serve --gitlab` end to end, what GitLab's pipelines, forks, moves and refusals really
 * say (decisions "Round 4", "GitLab pipelines", "One queue per PR"): a skipped pipeline is no pass
 * unless the project allows it; a required manual job fails the run at once, named; a fork's MR
 * (no commit status possible on its head) gets its feedback as the note and is closed after a
 * squash landing; a project moved while testing is followed by its id (hooks under the new path
 * act at once) and a second queue under the new path is refused; GitLab's refusal of the landing
 * push is quoted on the note and in the history.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { call, ok } from '../server/helpers.js';
import { ACCESS, type CiJob } from '../support/gitlab/index.js';
import {
  cleanup,
  emulator,
  gitlabWorld,
  ourNote,
  PROJECT,
  repoOf,
  settled,
  submit,
  until,
  waitFor,
} from './gitlab-harness.js';

afterEach(cleanup);

type Gl = Awaited<ReturnType<typeof emulator>>;

const world = (jobs: CiJob[] | null, opts: { pollSeconds?: number } = {}) =>
  gitlabWorld({ ...(jobs ? { jobs } : {}), ...opts, queue: true });

async function failedDetail(
  server: Awaited<ReturnType<typeof world>>['server'],
  gl: Gl,
  iid: number,
): Promise<string> {
  const { transitions } = (await ok(server, 'getPullRequestHistory', {
    repo: repoOf(gl),
    targetBranch: 'main',
    pr: { number: iid },
  })) as { transitions: { state: string; reason?: string; detail?: string }[] };
  const failed = transitions.filter((t) => t.state === 'failed').at(-1);
  return `${failed?.reason ?? ''}: ${failed?.detail ?? ''}`;
}

describe('serve --gitlab: pipelines as GitLab reports them', () => {
  it('a skipped pipeline is not a pass: the MR fails saying so, main untouched', async () => {
    const { gl, server } = await world([{ name: 'test', status: 'skipped' }]);
    const before = await gl.branchSha(PROJECT, 'main');
    const mr = await gl.createMergeRequest(PROJECT, { sourceBranch: 'skip', files: { 's.txt': 's\n' } });
    await submit(server, gl, mr.iid);
    const done = await waitFor(server, gl, mr.iid, settled);
    expect(done.state).toBe('failed');
    expect(await failedDetail(server, gl, mr.iid)).toMatch(/skipped.*allow_merge_on_skipped_pipeline/);
    await until('the note says the pipeline was skipped', () => /skipped/.test(ourNote(gl, mr.iid)));
    expect(await gl.branchSha(PROJECT, 'main')).toBe(before);
  });

  it('a skipped pipeline passes where the project allows merging on one', async () => {
    const { gl, server } = await world([{ name: 'test', status: 'skipped' }]);
    gl.setAllowMergeOnSkippedPipeline(PROJECT, true);
    const mr = await gl.createMergeRequest(PROJECT, { sourceBranch: 'skip-ok', files: { 's.txt': 's\n' } });
    await submit(server, gl, mr.iid);
    expect((await waitFor(server, gl, mr.iid, settled)).state).toBe('merged');
  });

  it('a required manual job fails the run at once, naming the job (the queue cannot press play)', async () => {
    const { gl, server } = await world([
      { name: 'test', status: 'success', delayMs: 100 },
      { name: 'deploy-review', status: 'manual', stage: 'deploy' },
    ]);
    const mr = await gl.createMergeRequest(PROJECT, { sourceBranch: 'man', files: { 'm.txt': 'm\n' } });
    await submit(server, gl, mr.iid);
    // At once: well before any timeout (the testing timeout is hours by default).
    const done = await waitFor(server, gl, mr.iid, settled, 20_000);
    expect(done.state).toBe('failed');
    expect(await failedDetail(server, gl, mr.iid)).toMatch(/manual job deploy-review/);
    await until('the note names the manual job', () => /deploy-review/.test(ourNote(gl, mr.iid)));
  });

  it('an optional manual job (allowed to fail) is not waited for', async () => {
    const { gl, server } = await world([
      { name: 'test', status: 'success', delayMs: 100 },
      { name: 'deploy-review', status: 'manual', stage: 'deploy', allowFailure: true },
    ]);
    const mr = await gl.createMergeRequest(PROJECT, { sourceBranch: 'opt', files: { 'o.txt': 'o\n' } });
    await submit(server, gl, mr.iid);
    expect((await waitFor(server, gl, mr.iid, settled, 20_000)).state).toBe('merged');
  });
});

describe('serve --gitlab: forks, moves and refusals', () => {
  it("a fork's MR (GitLab takes no status on its head) gets its feedback as the note and is closed after a squash landing", async () => {
    const { gl, server } = await world(null);
    const fork = gl.forkProject(PROJECT, 'contrib', 'carol');
    const mr = await gl.createMergeRequest(PROJECT, {
      sourceProject: fork.path,
      sourceBranch: 'fix',
      title: 'Fix from a fork',
      author: 'carol',
      files: { 'f.txt': 'f\n' },
    });
    await submit(server, gl, mr.iid);
    expect((await waitFor(server, gl, mr.iid, settled)).state).toBe('merged');
    const main = await gl.log(PROJECT, 'main');
    expect(main[0]!.message).toContain('Fix from a fork');
    await until(
      'the MR is closed (squash landing)',
      () => gl.getMergeRequest(PROJECT, mr.iid).state === 'closed',
    );
    await until('the note names the landed commit', () => ourNote(gl, mr.iid).includes(main[0]!.sha));
    // GitLab refused a status on the fork's commit, as it does.
    expect(
      gl.requests.some((r) => r.method === 'POST' && r.path.includes('/statuses/') && r.status === 404),
    ).toBe(true);
  });

  it('a project moved while testing: hooks under the new path act at once, a second queue under it is refused', async () => {
    // Polling slow: only the hooks (naming the new path) can bring the verdict in time.
    const { gl, server } = await world([{ name: 'test', status: 'success', delayMs: 2500 }], {
      pollSeconds: 30,
    });
    const mr = await gl.createMergeRequest(PROJECT, { sourceBranch: 'moving', files: { 'v.txt': 'v\n' } });
    await submit(server, gl, mr.iid);
    await waitFor(server, gl, mr.iid, (p) => p.state === 'testing');
    gl.moveProject(PROJECT, 'acme/platform/app-renamed');
    const moved = 'acme/platform/app-renamed';
    const started = Date.now();
    expect((await waitFor(server, gl, mr.iid, settled, 20_000)).state).toBe('merged');
    expect(Date.now() - started).toBeLessThan(20_000);
    await until(
      'the MR is closed (squash landing)',
      () => gl.getMergeRequest(moved, mr.iid).state === 'closed',
    );
    const second = await call(server, 'createQueue', {
      repo: { host: gl.host, owner: 'acme/platform', name: 'app-renamed' },
      targetBranch: 'main',
    });
    expect(second.status).toBe(400);
    expect(second.text).toContain(`${gl.host}/acme/platform/app`);
  });

  it("GitLab's refusal of the landing push is quoted on the note and in the history", async () => {
    const { gl, server } = await world(null);
    gl.protectBranch(PROJECT, 'main', { pushAccessLevel: ACCESS.maintainer });
    gl.setMember(PROJECT, 'railyard-bot', ACCESS.developer);
    const mr = await gl.createMergeRequest(PROJECT, { sourceBranch: 'prot', files: { 'p.txt': 'p\n' } });
    await submit(server, gl, mr.iid);
    expect((await waitFor(server, gl, mr.iid, settled)).state).toBe('failed');
    const words = 'You are not allowed to push code to protected branches on this project.';
    expect(await failedDetail(server, gl, mr.iid)).toContain(words);
    await until('the note quotes GitLab', () => ourNote(gl, mr.iid).includes(words));
  });
});
