// The GitLab emulator's own test: its REST answers read through the real @gitbeaker/rest client
// (and raw fetch where status codes and error bodies matter), git over smart HTTP with GitLab's
// auth and push rules, lazy detailed_merge_status, forks, CI pipelines and statuses, notes,
// members, token-carrying hook deliveries and rate-limit answers.
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  closeEmulator,
  git,
  gitFails,
  openEmulator,
  PROJECT,
  rawRequest,
  TOKEN,
  type GitLabApi,
} from './gitlab-emulator-fixture.js';
import { ACCESS, type GitLabEmulator } from './gitlab/index.js';
import { checkOpenApi } from './gitlab/openapi.js';

interface Received {
  event: string;
  uuid: string;
  token: string | undefined;
  idempotency: string | undefined;
  payload: Record<string, unknown> & { object_kind?: string; object_attributes?: Record<string, unknown> };
}

async function startReceiver(): Promise<{ url: string; got: Received[]; server: Server }> {
  const got: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const h = (n: string) => (typeof req.headers[n] === 'string' ? (req.headers[n] as string) : undefined);
      got.push({
        event: String(req.headers['x-gitlab-event']),
        uuid: String(req.headers['x-gitlab-event-uuid']),
        token: h('x-gitlab-token'),
        idempotency: h('idempotency-key'),
        payload: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Received['payload'],
      });
      res.statusCode = 200;
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`, got, server };
}

describe('GitLab emulator', () => {
  let gl: GitLabEmulator;
  let api: GitLabApi;
  let work: string;

  beforeEach(async () => {
    ({ gl, api, work } = await openEmulator({ 'README.md': '# app\n', 'a.txt': 'a\n' }));
  });

  afterEach(() => closeEmulator(gl, work));

  const raw = (path: string, init: RequestInit & { token?: string | null } = {}) =>
    rawRequest(gl, path, init);

  it('addresses projects by id and URL-encoded path; errors are GitLab’s', async () => {
    const byPath = await api.Projects.show(PROJECT);
    expect(byPath.path_with_namespace).toBe(PROJECT);
    expect((await api.Projects.show(byPath.id)).namespace.full_path).toBe('acme/platform');
    expect(checkOpenApi('GET', '/projects/:id', 200, byPath)).toBeNull();
    const unencoded = await raw(`/projects/${PROJECT}`);
    expect(unencoded.status).toBe(404);
    expect(await unencoded.json()).toEqual({ error: '404 Not Found' });
    const anon = await raw(`/projects/${encodeURIComponent(PROJECT)}`, { token: null });
    expect(anon.status).toBe(401);
    expect(await anon.json()).toEqual({ message: '401 Unauthorized' });
    gl.addToken('glpat-outsider', { username: 'outsider', defaultAccess: ACCESS.none });
    const hidden = await raw(`/projects/${encodeURIComponent(PROJECT)}`, { token: 'glpat-outsider' });
    expect(hidden.status).toBe(404);
    expect(await hidden.json()).toEqual({ message: '404 Project Not Found' });
  });

  it('serves git over smart HTTP with token auth; MR heads under refs/merge-requests', async () => {
    const url = `${gl.url}/${PROJECT}.git`;
    expect(await gitFails(work, ['ls-remote', url])).toMatch(
      /Authentication failed|401|could not read Username/,
    );
    const denied = await fetch(`${url}/info/refs?service=git-upload-pack`, {
      headers: { authorization: `Basic ${Buffer.from('oauth2:wrong-token').toString('base64')}` },
    });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('www-authenticate')).toBe('Basic realm="GitLab"');
    expect(await denied.text()).toMatch(/^HTTP Basic: Access denied/);
    const mr = await gl.createMergeRequest(PROJECT, { sourceBranch: 'feature', files: { 'b.txt': 'b\n' } });
    const refs = await git(work, ['ls-remote', url], TOKEN);
    expect(refs).toContain(`${mr.sha}\trefs/merge-requests/1/head`);
    const clone = join(work, 'c');
    await git(work, ['clone', '-q', url, clone], TOKEN);
    await git(clone, ['fetch', '-q', 'origin', 'refs/merge-requests/1/head'], TOKEN);
    expect(await git(clone, ['rev-parse', 'FETCH_HEAD'])).toBe(mr.sha);
    expect(await gitFails(clone, ['push', 'origin', 'HEAD:refs/merge-requests/1/head'], TOKEN)).toMatch(
      /deny|hidden|rejected/,
    );
  });

  it('computes detailed_merge_status lazily: unchecked, checking, then the answer', async () => {
    const mr = await gl.createMergeRequest(PROJECT, { sourceBranch: 'f1', files: { 'a.txt': 'mine\n' } });
    const first = await api.MergeRequests.show(PROJECT, mr.iid);
    expect(first.detailed_merge_status).toBe('checking');
    expect(checkOpenApi('GET', '/projects/:id/merge_requests/:iid', 200, first)).toBeNull();
    await gl.idle();
    const second = await api.MergeRequests.show(PROJECT, mr.iid);
    expect(second).toMatchObject({
      detailed_merge_status: 'mergeable',
      merge_status: 'can_be_merged',
      sha: mr.sha,
      state: 'opened',
    });
    // The target moves with a conflicting change: unchecked again, then conflict.
    await gl.pushCommit(PROJECT, 'main', { 'a.txt': 'theirs\n' });
    expect((await api.MergeRequests.show(PROJECT, mr.iid)).detailed_merge_status).toBe('checking');
    await gl.idle();
    const third = await api.MergeRequests.show(PROJECT, mr.iid);
    expect(third).toMatchObject({ detailed_merge_status: 'conflict', has_conflicts: true });
    gl.setDraft(PROJECT, mr.iid, true);
    expect((await api.MergeRequests.show(PROJECT, mr.iid)).detailed_merge_status).toBe('draft_status');
  });

  it('says why a mergeable MR waits: approvals, discussions, pipeline', async () => {
    const mr = await gl.createMergeRequest(PROJECT, { sourceBranch: 'f2', files: { 'c.txt': 'c\n' } });
    await api.MergeRequests.show(PROJECT, mr.iid);
    await gl.idle();
    gl.setMergeBlocker(PROJECT, mr.iid, 'not_approved');
    expect((await api.MergeRequests.show(PROJECT, mr.iid)).detailed_merge_status).toBe('not_approved');
    gl.setMergeBlocker(PROJECT, mr.iid, null);
    gl.setOnlyAllowMergeIfPipelineSucceeds(PROJECT, true);
    gl.setCi(PROJECT, () => [{ name: 'test', status: 'failed', delayMs: 1 }]);
    await gl.pushToMergeRequest(PROJECT, mr.iid, { 'c.txt': 'c2\n' });
    await api.MergeRequests.show(PROJECT, mr.iid);
    await gl.idle();
    expect((await api.MergeRequests.show(PROJECT, mr.iid)).detailed_merge_status).toBe('ci_must_pass');
  });

  it('marks an MR merged when its head reaches the target by a push, and tells the hook', async () => {
    const hook = await startReceiver();
    try {
      gl.setWebhook(hook.url, 'hook-secret');
      const mr = await gl.createMergeRequest(PROJECT, { sourceBranch: 'f3', files: { 'd.txt': 'd\n' } });
      const clone = join(work, 'c');
      await git(work, ['clone', '-q', `${gl.url}/${PROJECT}.git`, clone], TOKEN);
      await git(clone, ['fetch', '-q', 'origin', 'refs/merge-requests/1/head'], TOKEN);
      const main = await git(clone, ['rev-parse', 'HEAD']);
      await git(
        clone,
        ['push', '-q', `--force-with-lease=refs/heads/main:${main}`, 'origin', `${mr.sha}:refs/heads/main`],
        TOKEN,
      );
      expect(gl.getMergeRequest(PROJECT, mr.iid).state).toBe('merged');
      await gl.idle();
      const events = hook.got.map(
        (d) => `${d.event}:${String(d.payload.object_attributes?.action ?? d.payload.object_kind)}`,
      );
      expect(events).toContain('Merge Request Hook:open');
      expect(events).toContain('Merge Request Hook:merge');
      expect(events).toContain('Push Hook:push');
      expect(
        hook.got.every(
          (d) => d.token === 'hook-secret' && d.idempotency === d.uuid && /^[0-9a-f-]{36}$/.test(d.uuid),
        ),
      ).toBe(true);
      // A redelivery carries the same UUID (the receiver de-duplicates on it).
      const first = gl.deliveries[0];
      await gl.redeliver(first.uuid);
      expect(hook.got.at(-1)!.uuid).toBe(first.uuid);
    } finally {
      hook.server.close();
    }
  });

  it('refuses pushes the way protected branches do', async () => {
    gl.protectBranch(PROJECT, 'main', { pushAccessLevel: ACCESS.maintainer });
    gl.addToken('glpat-dev', { username: 'dev', defaultAccess: ACCESS.developer });
    const clone = join(work, 'c');
    await git(work, ['clone', '-q', `${gl.url}/${PROJECT}.git`, clone], TOKEN);
    await git(clone, ['commit', '-q', '--allow-empty', '-m', 'x']);
    const refused = await gitFails(clone, ['push', 'origin', 'HEAD:main'], 'glpat-dev');
    expect(refused).toContain(
      'GitLab: You are not allowed to push code to protected branches on this project.',
    );
    await git(clone, ['push', '-q', 'origin', 'HEAD:main'], TOKEN); // a Maintainer's fast-forward
    await git(clone, ['reset', '-q', '--hard', 'HEAD~1']);
    await git(clone, ['commit', '-q', '--allow-empty', '-m', 'y']);
    const forced = await gitFails(clone, ['push', '--force', 'origin', 'HEAD:main'], TOKEN);
    expect(forced).toContain(
      'GitLab: You are not allowed to force push code to a protected branch on this project.',
    );
    // A stale lease is refused by git itself: the compare-and-swap Railyard's landing relies on.
    const stale = await gitFails(
      clone,
      ['push', '--force-with-lease=refs/heads/main:' + '1'.repeat(40), 'origin', 'HEAD:main'],
      TOKEN,
    );
    expect(stale).toMatch(/stale info|rejected/);
  });

  it('runs CI on pushed branches: pipelines, jobs, statuses and their hooks', async () => {
    const hook = await startReceiver();
    try {
      gl.setWebhook(hook.url, 's');
      gl.setCi(PROJECT, (push) =>
        push.branch.startsWith('railyard-merge/')
          ? [
              { name: 'unit', status: 'success', delayMs: 5 },
              { name: 'lint', status: 'failed', delayMs: 10 },
            ]
          : [],
      );
      const sha = await gl.pushCommit(PROJECT, 'railyard-merge/pr-1/x', { 'e.txt': 'e\n' });
      await gl.idle();
      const pipelines = await api.Pipelines.all(PROJECT, { sha });
      expect(pipelines).toHaveLength(1);
      expect(pipelines[0]).toMatchObject({ status: 'failed', ref: 'railyard-merge/pr-1/x', sha });
      const jobs = await api.Jobs.all(PROJECT, { pipelineId: pipelines[0].id });
      expect(jobs.map((j) => `${j.name}:${j.status}`).sort()).toEqual(['lint:failed', 'unit:success']);
      const statuses = await api.Commits.allStatuses(PROJECT, sha);
      expect(statuses.map((s) => `${s.name}:${s.status}`).sort()).toEqual(['lint:failed', 'unit:success']);
      expect(checkOpenApi('GET', '/projects/:id/repository/commits/:sha/statuses', 200, statuses)).toBeNull();
      gl.retryJob(PROJECT, sha, 'lint', 'success');
      await gl.idle();
      expect((await api.Pipelines.show(PROJECT, pipelines[0].id)).status).toBe('success');
      expect((await api.Commits.allStatuses(PROJECT, sha, { all: true })).length).toBe(3);
      const kinds = new Set(hook.got.map((d) => d.event));
      expect(kinds).toEqual(new Set(['Push Hook', 'Pipeline Hook', 'Job Hook']));
    } finally {
      hook.server.close();
    }
  });

  it('follows GitLab’s commit status state machine', async () => {
    const mr = await gl.createMergeRequest(PROJECT, { sourceBranch: 'f4', files: { 'f.txt': 'f\n' } });
    const post = (state: string) =>
      raw(`/projects/${encodeURIComponent(PROJECT)}/statuses/${mr.sha}`, {
        method: 'POST',
        body: JSON.stringify({ state, name: 'railyard/merge-queue', description: 'queued' }),
      });
    const created = await post('pending');
    expect(created.status).toBe(201);
    expect(checkOpenApi('POST', '/projects/:id/statuses/:sha', 201, await created.json())).toBeNull();
    const again = await post('pending');
    expect(again.status).toBe(400);
    expect(((await again.json()) as { message: string }).message).toMatch(
      /^Cannot transition status via :enqueue from :pending/,
    );
    expect((await post('success')).status).toBe(201);
    expect((await post('failed')).status).toBe(201); // a finished status is replaced by a new one
    expect(
      gl
        .statuses(PROJECT, mr.sha)
        .filter((s) => s.name === 'railyard/merge-queue')
        .map((s) => s.status),
    ).toEqual(['failed']);
    expect((await post('bogus')).status).toBe(400);
    const noSha = await raw(`/projects/${encodeURIComponent(PROJECT)}/statuses/${'0'.repeat(40)}`, {
      method: 'POST',
      body: '{"state":"running"}',
    });
    expect(noSha.status).toBe(404);
  });

  it('notes: create and edit one note, Note Hooks, and member access levels', async () => {
    const hook = await startReceiver();
    try {
      gl.setWebhook(hook.url, null);
      const mr = await gl.createMergeRequest(PROJECT, { sourceBranch: 'f5', files: { 'g.txt': 'g\n' } });
      const note = await api.MergeRequestNotes.create(PROJECT, mr.iid, 'Queued');
      expect(checkOpenApi('POST', '/projects/:id/merge_requests/:iid/notes', 201, note)).toBeNull();
      await api.MergeRequestNotes.edit(PROJECT, mr.iid, note.id, { body: 'Testing' });
      expect(gl.notes(PROJECT, mr.iid).map((n) => n.body)).toEqual(['Testing']);
      gl.note(PROJECT, mr.iid, 'alice', '/railyard merge');
      const other = gl.notes(PROJECT, mr.iid).find((n) => n.author === 'alice')!;
      const edit = await raw(
        `/projects/${encodeURIComponent(PROJECT)}/merge_requests/${mr.iid}/notes/${other.id}`,
        {
          method: 'PUT',
          body: '{"body":"x"}',
        },
      );
      expect(edit.status).toBe(403);
      const missing = await raw(
        `/projects/${encodeURIComponent(PROJECT)}/merge_requests/${mr.iid}/notes/999999`,
        { method: 'PUT', body: '{"body":"x"}' },
      );
      expect(await missing.json()).toEqual({ message: '404 Note Not Found' });
      gl.setMember(PROJECT, 'alice', ACCESS.developer);
      const member = await api.ProjectMembers.show(PROJECT, gl.userId('alice'), { includeInherited: true });
      expect(member.access_level).toBe(ACCESS.developer);
      const nobody = await raw(
        `/projects/${encodeURIComponent(PROJECT)}/members/all/${gl.userId('mallory')}`,
      );
      expect(nobody.status).toBe(404);
      await gl.idle();
      const notes = hook.got.filter((d) => d.event === 'Note Hook');
      expect(
        notes.map(
          (d) =>
            `${String(d.payload.object_attributes?.action)}:${String(d.payload.object_attributes?.note)}`,
        ),
      ).toEqual(['create:Queued', 'update:Testing', 'create:/railyard merge']);
      expect(hook.got.every((d) => d.token === undefined)).toBe(true);
    } finally {
      hook.server.close();
    }
  });

  it('follows fork MRs into the target project', async () => {
    const fork = gl.forkProject(PROJECT, 'alice');
    const mr = await gl.createMergeRequest(PROJECT, {
      sourceProject: fork.path,
      sourceBranch: 'fix',
      author: 'alice',
      files: { 'h.txt': 'h\n' },
    });
    const show = await api.MergeRequests.show(PROJECT, mr.iid);
    expect(show).toMatchObject({ source_project_id: fork.id, sha: mr.sha });
    const next = await gl.pushToMergeRequest(PROJECT, mr.iid, { 'h.txt': 'h2\n' });
    expect((await api.MergeRequests.show(PROJECT, mr.iid)).sha).toBe(next);
    expect(
      await git(work, ['ls-remote', `${gl.url}/${PROJECT}.git`, 'refs/merge-requests/1/head'], TOKEN),
    ).toContain(next);
  });

  it('skipped and manual jobs: a pipeline of skipped jobs is skipped, a required manual job holds it as manual', async () => {
    const project = await api.Projects.show(PROJECT);
    expect(project.allow_merge_on_skipped_pipeline).toBe(false);
    gl.setAllowMergeOnSkippedPipeline(PROJECT, true);
    expect((await api.Projects.show(PROJECT)).allow_merge_on_skipped_pipeline).toBe(true);
    gl.setCi(PROJECT, (push) =>
      push.branch === 'skip'
        ? [{ name: 'test', status: 'skipped' }]
        : [
            { name: 'test', status: 'success', delayMs: 10 },
            { name: 'deploy', status: 'manual', stage: 'deploy' },
            { name: 'optional', status: 'manual', stage: 'deploy', allowFailure: true },
          ],
    );
    const skipped = await gl.pushCommit(PROJECT, 'skip', { 's.txt': 's\n' });
    const held = await gl.pushCommit(PROJECT, 'held', { 'h.txt': 'h\n' });
    await gl.idle();
    const pl = (ref: string) => gl.pipelines(PROJECT).find((p) => p.ref === ref)!.status;
    expect(pl('skip')).toBe('skipped');
    expect(pl('held')).toBe('manual');
    const statuses = await api.Commits.allStatuses(PROJECT, held);
    expect(statuses.map((x) => [x.name, x.status, x.allow_failure]).sort()).toEqual([
      ['deploy', 'manual', false],
      ['optional', 'manual', true],
      ['test', 'success', false],
    ]);
    expect((await api.Commits.allStatuses(PROJECT, skipped)).map((x) => x.status)).toEqual(['skipped']);
  });

  it("refuses a commit status on a fork's commit in the target project (no branch there holds it)", async () => {
    const fork = gl.forkProject(PROJECT, 'alice');
    const mr = await gl.createMergeRequest(PROJECT, {
      sourceProject: fork.path,
      sourceBranch: 'fix',
      author: 'alice',
      files: { 'f.txt': 'f\n' },
    });
    const answer = await raw(`/projects/${encodeURIComponent(PROJECT)}/statuses/${mr.sha}`, {
      method: 'POST',
      body: JSON.stringify({ state: 'pending', name: 'railyard/merge-queue' }),
    });
    expect(answer.status).toBe(404);
    expect(await answer.json()).toEqual({ message: '404 References for commit Not Found' });
    // In the fork, where a branch holds it, the status is taken.
    const ok = await raw(`/projects/${encodeURIComponent(fork.path)}/statuses/${mr.sha}`, {
      method: 'POST',
      body: JSON.stringify({ state: 'pending', name: 'railyard/merge-queue' }),
    });
    expect(ok.status).toBe(201);
  });

  it('a moved project keeps its id and answers under its old path too (REST and git); hooks name the new path', async () => {
    const { url, got, server } = await startReceiver();
    try {
      gl.setWebhook(url, 'secret');
      const before = await api.Projects.show(PROJECT);
      gl.moveProject(PROJECT, 'acme/platform/app2');
      const after = await api.Projects.show('acme/platform/app2');
      expect(after.id).toBe(before.id);
      expect((await api.Projects.show(PROJECT)).path_with_namespace).toBe('acme/platform/app2');
      expect(await git(work, ['ls-remote', `${gl.url}/${PROJECT}.git`, 'refs/heads/main'], TOKEN)).toMatch(
        /main/,
      );
      await gl.pushCommit('acme/platform/app2', 'moved', { 'm.txt': 'm\n' });
      await gl.idle();
      const push = got.find((d) => d.event === 'Push Hook')!;
      expect(push.payload.project).toMatchObject({
        id: before.id,
        path_with_namespace: 'acme/platform/app2',
      });
    } finally {
      server.close();
    }
  });

  it('pages lists and answers 429 with Retry-After and RateLimit headers', async () => {
    for (let i = 0; i < 3; i++)
      await gl.createMergeRequest(PROJECT, { sourceBranch: `p${i}`, files: { [`p${i}.txt`]: 'x\n' } });
    const page = await raw(`/projects/${encodeURIComponent(PROJECT)}/merge_requests?state=opened&per_page=2`);
    expect(page.headers.get('x-total')).toBe('3');
    expect(page.headers.get('x-next-page')).toBe('2');
    expect(page.headers.get('link')).toContain('rel="next"');
    expect(Number(page.headers.get('ratelimit-remaining'))).toBeGreaterThan(0);
    expect((await api.MergeRequests.all({ projectId: PROJECT, state: 'opened', perPage: 2 })).length).toBe(3);
    gl.rateLimitNext(1, 7);
    const limited = await raw(`/projects/${encodeURIComponent(PROJECT)}`);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('7');
    expect(limited.headers.get('ratelimit-limit')).toBeTruthy();
  });
});
