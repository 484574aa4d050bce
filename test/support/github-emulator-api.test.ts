// The GitHub emulator's pull requests, statuses, comments, permissions, CI (check runs, reruns),
// signed webhooks checked against @octokit/openapi-webhooks, and GitHub's edge rules.
import { Octokit } from '@octokit/core';
import { verify } from '@octokit/webhooks-methods';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GitHubEmulator } from './github/index.js';
import { loadValidator, type SchemaValidator } from './github/openapi.js';
import { closeEmulator, openEmulator, startReceiver } from './github-emulator-fixture.js';

describe('GitHub emulator', () => {
  let gh: GitHubEmulator;
  let ok: Octokit;
  let work: string;
  let validator: SchemaValidator;

  beforeAll(async () => {
    validator = await loadValidator('ghes');
  });

  beforeEach(async () => ({ gh, ok, work } = await openEmulator()));
  afterEach(() => closeEmulator(gh, work));

  it('pulls create/patch, statuses, comments and collaborator permissions', async () => {
    await gh.pushCommit('acme', 'app', 'railyard-merge/t1', { 't.txt': 't\n' });
    const created = await ok.request('POST /repos/{owner}/{repo}/pulls', {
      owner: 'acme',
      repo: 'app',
      head: 'railyard-merge/t1',
      base: 'main',
      title: 'Test',
      draft: true,
    });
    expect(created.status).toBe(201);
    expect(created.data).toMatchObject({ draft: true, state: 'open', user: { login: 'railyard-bot' } });
    await expect(
      ok.request('POST /repos/{owner}/{repo}/pulls', {
        owner: 'acme',
        repo: 'app',
        head: 'railyard-merge/t1',
        base: 'main',
        title: 'Again',
      }),
    ).rejects.toMatchObject({
      status: 422,
      response: { data: { message: 'Validation Failed', errors: [{ code: 'custom' }] } },
    });
    const closed = await ok.request('PATCH /repos/{owner}/{repo}/pulls/{pull_number}', {
      owner: 'acme',
      repo: 'app',
      pull_number: created.data.number,
      state: 'closed',
    });
    expect(closed.data.state).toBe('closed');
    expect(gh.pullRequests('acme', 'app')).toEqual([
      { number: 1, head: 'railyard-merge/t1', base: 'main', state: 'closed', draft: true, title: 'Test' },
    ]);

    const sha = (await gh.branchSha('acme', 'app', 'main'))!;
    const st = await ok.request('POST /repos/{owner}/{repo}/statuses/{sha}', {
      owner: 'acme',
      repo: 'app',
      sha,
      state: 'pending',
      context: 'railyard/merge-queue',
      description: 'Queued',
      target_url: 'http://localhost/pr/1',
    });
    expect(st.status).toBe(201);
    await ok.request('POST /repos/{owner}/{repo}/statuses/{sha}', {
      owner: 'acme',
      repo: 'app',
      sha,
      state: 'success',
      context: 'railyard/merge-queue',
    });
    const combined = await ok.request('GET /repos/{owner}/{repo}/commits/{ref}/status', {
      owner: 'acme',
      repo: 'app',
      ref: 'main',
    });
    expect(combined.data).toMatchObject({
      state: 'success',
      sha,
      total_count: 1,
      statuses: [{ context: 'railyard/merge-queue', state: 'success' }],
    });
    expect(gh.statuses('acme', 'app', sha).map((s) => s.state)).toEqual(['pending', 'success']);
    await expect(
      ok.request('POST /repos/{owner}/{repo}/statuses/{sha}', {
        owner: 'acme',
        repo: 'app',
        sha,
        state: 'bogus' as 'success',
      }),
    ).rejects.toMatchObject({
      status: 422,
    });

    const pr = await gh.createPullRequest('acme', 'app', { head: 'x', files: { 'x.txt': 'x\n' } });
    const cm = await ok.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
      owner: 'acme',
      repo: 'app',
      issue_number: pr.number,
      body: 'Queued at 1',
    });
    expect(cm.status).toBe(201);
    const ed = await ok.request('PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}', {
      owner: 'acme',
      repo: 'app',
      comment_id: cm.data.id,
      body: 'Merged',
    });
    expect(ed.data.body).toBe('Merged');
    expect(gh.comments('acme', 'app', pr.number)).toEqual([
      { id: cm.data.id, body: 'Merged', user: 'railyard-bot' },
    ]);
    await expect(
      ok.request('PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}', {
        owner: 'acme',
        repo: 'app',
        comment_id: 999,
        body: 'x',
      }),
    ).rejects.toMatchObject({
      status: 404,
    });

    gh.setPermission('acme', 'app', 'bob', 'write');
    const perm = (u: string) =>
      ok.request('GET /repos/{owner}/{repo}/collaborators/{username}/permission', {
        owner: 'acme',
        repo: 'app',
        username: u,
      });
    expect((await perm('bob')).data.permission).toBe('write');
    expect((await perm('acme')).data.permission).toBe('admin');
    expect((await perm('stranger')).data.permission).toBe('read');
  });

  it('CI reports check runs and statuses as setCi decides, and rerunCheck turns a check green', async () => {
    gh.setCi('acme', 'app', (push) =>
      push.branch.startsWith('railyard-merge/')
        ? [
            { name: 'unit', conclusion: 'failure', delayMs: 10 },
            { name: 'lint', conclusion: 'success', delayMs: 10, kind: 'status' },
          ]
        : [],
    );
    const quiet = await gh.pushCommit('acme', 'app', 'feature', { 'q.txt': 'q\n' });
    const sha = await gh.pushCommit('acme', 'app', 'railyard-merge/1', { 'r.txt': 'r\n' });
    await gh.idle();
    expect(gh.checkRuns('acme', 'app', quiet)).toEqual([]);
    const runs = await ok.request('GET /repos/{owner}/{repo}/commits/{ref}/check-runs', {
      owner: 'acme',
      repo: 'app',
      ref: sha,
    });
    expect(runs.data.check_runs.map((c) => [c.name, c.conclusion])).toEqual([['unit', 'failure']]);
    const status = await ok.request('GET /repos/{owner}/{repo}/commits/{ref}/status', {
      owner: 'acme',
      repo: 'app',
      ref: sha,
    });
    expect(status.data.statuses.map((s) => [s.context, s.state])).toEqual([['lint', 'success']]);

    await gh.rerunCheck('acme', 'app', sha, 'unit', 'success');
    const latest = await ok.request('GET /repos/{owner}/{repo}/commits/{ref}/check-runs', {
      owner: 'acme',
      repo: 'app',
      ref: sha,
    });
    expect(latest.data.check_runs.map((c) => [c.name, c.conclusion])).toEqual([['unit', 'success']]);
    const page1 = await ok.request('GET /repos/{owner}/{repo}/commits/{ref}/check-runs', {
      owner: 'acme',
      repo: 'app',
      ref: sha,
      filter: 'all',
      per_page: 1,
    });
    expect(page1.data).toMatchObject({
      total_count: 2,
      check_runs: [{ name: 'unit', conclusion: 'success' }],
    });
    expect(page1.headers.link).toMatch(/page=2>; rel="next"/);
    const all = await ok.request('GET /repos/{owner}/{repo}/commits/{ref}/check-runs', {
      owner: 'acme',
      repo: 'app',
      ref: sha,
      filter: 'all',
    });
    expect(all.data.total_count).toBe(2);
  });

  it('delivers signed webhooks that verify with @octokit/webhooks-methods and match @octokit/openapi-webhooks; redeliver repeats the id', async () => {
    const rx = await startReceiver();
    try {
      gh.setWebhook(rx.url, 'hook-secret');
      const pr = await gh.createPullRequest('acme', 'app', {
        head: 'w',
        user: 'alice',
        title: 'W',
        files: { 'w.txt': 'w\n' },
      });
      await gh.pushToPullRequest('acme', 'app', pr.number, { 'w.txt': 'w2\n' });
      await gh.setDraft('acme', 'app', pr.number, true);
      await gh.setDraft('acme', 'app', pr.number, false);
      await ok.request('PATCH /repos/{owner}/{repo}/pulls/{pull_number}', {
        owner: 'acme',
        repo: 'app',
        pull_number: pr.number,
        title: 'W2',
      });
      await gh.comment('acme', 'app', pr.number, 'bob', '/railyard merge');
      await ok.request('POST /repos/{owner}/{repo}/statuses/{sha}', {
        owner: 'acme',
        repo: 'app',
        sha: gh.getPullRequest('acme', 'app', pr.number).headSha,
        state: 'pending',
        context: 'railyard/merge-queue',
      });
      await gh.closePullRequest('acme', 'app', pr.number);
      await gh.idle();

      const kinds = rx.got.map((g) => (g.payload.action ? `${g.event}.${g.payload.action}` : g.event));
      for (const k of [
        'push',
        'pull_request.opened',
        'pull_request.synchronize',
        'pull_request.converted_to_draft',
        'pull_request.ready_for_review',
        'pull_request.edited',
        'issue_comment.created',
        'status',
        'check_run.completed',
        'check_suite.completed',
        'pull_request.closed',
      ])
        expect(kinds).toContain(k);
      // Deliveries go out in the order things happened.
      const order = [
        'pull_request.opened',
        'pull_request.synchronize',
        'pull_request.converted_to_draft',
        'pull_request.ready_for_review',
        'pull_request.edited',
        'issue_comment.created',
        'status',
        'pull_request.closed',
      ];
      expect(kinds.filter((k) => order.includes(k))).toEqual(order);
      for (const g of rx.got) {
        expect(await verify('hook-secret', g.body, g.signature)).toBe(true);
        expect(await verify('other-secret', g.body, g.signature)).toBe(false);
        expect(validator.webhook(g.event, g.payload), `${g.event}.${g.payload.action ?? ''}`).toBeNull();
      }
      const comment = rx.got.find((g) => g.event === 'issue_comment')!.payload as {
        comment: { body: string; user: { login: string } };
        issue: { number: number; pull_request?: unknown };
      };
      expect(comment.comment).toMatchObject({ body: '/railyard merge', user: { login: 'bob' } });
      expect(comment.issue.number).toBe(pr.number);
      expect(comment.issue.pull_request).toBeDefined();
      expect(gh.deliveries.map((d) => d.id)).toEqual(rx.got.map((g) => g.id));
      expect(gh.deliveries.every((d) => d.status === 202)).toBe(true);

      const first = gh.deliveries[0];
      expect(await gh.redeliver(first.id)).toBe(202);
      const again = rx.got[rx.got.length - 1];
      expect(again.id).toBe(first.id);
      expect(again.body).toBe(rx.got[0].body);
    } finally {
      await new Promise((r) => rx.server.close(r));
    }
  });

  it('GitHub edge rules: draft merges, empty PRs, unknown objects, base changes, reopening, deleted head branches', async () => {
    const rx = await startReceiver();
    try {
      gh.setWebhook(rx.url, 's');
      const pr = await gh.createPullRequest('acme', 'app', {
        head: 'e',
        draft: true,
        files: { 'e.txt': 'e\n' },
      });
      const req = { owner: 'acme', repo: 'app', pull_number: pr.number };
      await expect(
        ok.request('PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge', { ...req, sha: pr.headSha }),
      ).rejects.toMatchObject({
        status: 405,
        response: { data: { message: 'Pull Request is still a draft' } },
      });
      // A branch whose commits are all on the base already has nothing to propose.
      const same = await gh.pushCommit('acme', 'app', 'same', {}, { message: 'empty commit' });
      await ok.request('PATCH /repos/{owner}/{repo}/git/refs/{ref}', {
        owner: 'acme',
        repo: 'app',
        ref: 'heads/main',
        sha: same,
        force: false,
      });
      await expect(
        ok.request('POST /repos/{owner}/{repo}/pulls', {
          owner: 'acme',
          repo: 'app',
          head: 'same',
          base: 'main',
          title: 'Nothing',
        }),
      ).rejects.toMatchObject({
        status: 422,
        response: { data: { errors: [{ message: 'No commits between main and same' }] } },
      });
      await expect(
        ok.request('PATCH /repos/{owner}/{repo}/git/refs/{ref}', {
          owner: 'acme',
          repo: 'app',
          ref: 'heads/main',
          sha: 'f'.repeat(40),
          force: true,
        }),
      ).rejects.toMatchObject({ status: 422, response: { data: { message: 'Object does not exist' } } });

      await gh.pushCommit('acme', 'app', 'release', { 'r.txt': 'r\n' });
      const edited = await ok.request('PATCH /repos/{owner}/{repo}/pulls/{pull_number}', {
        ...req,
        base: 'release',
      });
      expect(edited.data.base.ref).toBe('release');
      await ok.request('PATCH /repos/{owner}/{repo}/pulls/{pull_number}', { ...req, state: 'closed' });
      const reopened = await ok.request('PATCH /repos/{owner}/{repo}/pulls/{pull_number}', {
        ...req,
        state: 'open',
      });
      expect(reopened.data.state).toBe('open');

      await ok.request('DELETE /repos/{owner}/{repo}/git/refs/{ref}', {
        owner: 'acme',
        repo: 'app',
        ref: 'heads/e',
      });
      expect(gh.getPullRequest('acme', 'app', pr.number)).toMatchObject({ state: 'closed', merged: false });
      await gh.idle();
      const kinds = rx.got.map((g) => (g.payload.action ? `${g.event}.${g.payload.action}` : g.event));
      expect(kinds).toEqual(
        expect.arrayContaining(['pull_request.edited', 'pull_request.reopened', 'pull_request.closed']),
      );
      const edit = rx.got.find((g) => g.payload.action === 'edited')!.payload as {
        changes: { base: { ref: { from: string } } };
      };
      expect(edit.changes.base.ref.from).toBe('main');
      const deletion = rx.got.filter((g) => g.event === 'push').pop()!.payload;
      expect(deletion).toMatchObject({ ref: 'refs/heads/e', deleted: true, after: '0'.repeat(40) });
    } finally {
      await new Promise((r) => rx.server.close(r));
    }
  });

  it('failLanding: a landing call answered 502 without effect, or carried out and then answered 502 or dropped', async () => {
    const main = (await gh.branchSha('acme', 'app', 'main'))!;
    const next = await gh.pushCommit('acme', 'app', 'feature', { 'f.txt': 'f\n' });
    const patch = () =>
      ok.request('PATCH /repos/{owner}/{repo}/git/refs/{ref}', {
        owner: 'acme',
        repo: 'app',
        ref: 'heads/main',
        sha: next,
        force: false,
        request: { retries: 0 },
      });
    gh.failLanding('acme', 'app', { answer: 502 });
    await expect(patch()).rejects.toMatchObject({ status: 502 });
    expect(await gh.branchSha('acme', 'app', 'main')).toBe(main);
    gh.failLanding('acme', 'app', { answer: 'drop', after: true });
    await expect(patch()).rejects.toMatchObject({ status: 500, response: undefined }); // Octokit's word for a failed fetch
    expect(await gh.branchSha('acme', 'app', 'main')).toBe(next);
    expect(gh.requests.filter((r) => r.method === 'PATCH').map((r) => r.status)).toEqual([502, 0]);
    // Other calls are not landing calls; times: 0 clears what is armed.
    gh.failLanding('acme', 'app', { times: 3 });
    expect((await ok.request('GET /repos/{owner}/{repo}', { owner: 'acme', repo: 'app' })).status).toBe(200);
    gh.failLanding('acme', 'app', { times: 0 });
    expect((await patch()).status).toBe(200);
  });
});
