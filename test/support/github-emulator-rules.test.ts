// The GitHub emulator's round-3 parts, driven with the real Octokit client and validated against
// GitHub's OpenAPI descriptions: branch rules (blocked PRs, 422 refusals with GitHub's messages,
// the rules / branch / reviews endpoints), delivery faults (lost, held, duplicated, replayed with
// another id or none), form-encoded deliveries, request timing, and when a PR showed its final state.
import type { Server } from 'node:http';
import { Octokit } from '@octokit/core';
import { verify } from '@octokit/webhooks-methods';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startReceiver } from './github-emulator-fixture.js';
import { startGitHubEmulator, type GitHubEmulator } from './github/index.js';

const TOKEN = 'ghp_emulatorrulestoken';

const message = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (e) {
    const err = e as { status: number; response?: { data?: { message?: string } } };
    return { status: err.status, message: err.response?.data?.message ?? '' };
  }
  throw new Error('the request succeeded');
};

describe('GitHub emulator: branch rules, reviews, delivery faults', () => {
  let gh: GitHubEmulator;
  let ok: Octokit;
  const servers: Server[] = [];

  beforeEach(async () => {
    gh = await startGitHubEmulator({ validate: true });
    gh.addToken(TOKEN, { login: 'railyard-bot' });
    gh.createRepo('acme', 'app', { files: { 'README.md': '# app\n' } });
    ok = new Octokit({ auth: TOKEN, baseUrl: gh.apiUrl });
  });

  afterEach(async () => {
    try {
      await gh.idle();
      expect(gh.schemaViolations).toEqual([]);
    } finally {
      await gh.close();
      for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
    }
  });

  const mergeableState = async (n: number) => {
    for (let i = 0; i < 50; i++) {
      const { data } = await ok.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', {
        owner: 'acme',
        repo: 'app',
        pull_number: n,
      });
      if (data.mergeable_state !== 'unknown') return data.mergeable_state;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error('mergeability never computed');
  };

  it('a ruleset blocks a PR until approved, lists its rules, and refuses direct ref updates with 422 unless bypassed', async () => {
    const pr = await gh.createPullRequest('acme', 'app', {
      head: 'f',
      user: 'alice',
      files: { 'f.txt': 'f\n' },
    });
    expect(await mergeableState(pr.number)).toBe('clean');
    gh.protectBranch('acme', 'app', 'main', {
      requiredApprovals: 1,
      requiredChecks: ['ci'],
      requirePullRequest: true,
    });
    const rules = await ok.request('GET /repos/{owner}/{repo}/rules/branches/{branch}', {
      owner: 'acme',
      repo: 'app',
      branch: 'main',
    });
    expect(rules.data.map((r) => r.type).sort()).toEqual(['pull_request', 'required_status_checks']);
    await gh.idle(); // the PR's CI (ci succeeds) has reported
    expect(await mergeableState(pr.number)).toBe('blocked');

    // Merging a blocked PR: 405 with what is missing.
    expect(
      await message(
        ok.request('PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge', {
          owner: 'acme',
          repo: 'app',
          pull_number: pr.number,
          sha: pr.headSha,
        }),
      ),
    ).toEqual({
      status: 405,
      message: 'At least 1 approving review is required by reviewers with write access.',
    });

    await gh.review('acme', 'app', pr.number, 'bob', 'CHANGES_REQUESTED');
    expect(await mergeableState(pr.number)).toBe('blocked');
    await gh.review('acme', 'app', pr.number, 'bob', 'APPROVED');
    expect(await mergeableState(pr.number)).toBe('clean');
    const reviews = await ok.request('GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews', {
      owner: 'acme',
      repo: 'app',
      pull_number: pr.number,
    });
    expect(reviews.data.map((r) => r.state)).toEqual(['CHANGES_REQUESTED', 'APPROVED']);

    // A ref update: refused with GitHub's message while the target is where it was.
    const before = await gh.branchSha('acme', 'app', 'main');
    const refused = await message(
      ok.request('PATCH /repos/{owner}/{repo}/git/refs/{ref}', {
        owner: 'acme',
        repo: 'app',
        ref: 'heads/main',
        sha: pr.headSha,
        force: false,
      }),
    );
    expect(refused.status).toBe(422);
    expect(refused.message).toContain('Changes must be made through a pull request.');
    expect(await gh.branchSha('acme', 'app', 'main')).toBe(before);

    gh.protectBranch('acme', 'app', 'main', { requirePullRequest: true, bypass: ['railyard-bot'] });
    await ok.request('PATCH /repos/{owner}/{repo}/git/refs/{ref}', {
      owner: 'acme',
      repo: 'app',
      ref: 'heads/main',
      sha: pr.headSha,
      force: false,
    });
    expect(gh.getPullRequest('acme', 'app', pr.number)).toMatchObject({ state: 'closed', merged: true });
  });

  it('classic protection shows on GET branches/{branch}; required checks gate pushes and conversations block', async () => {
    gh.protectBranch('acme', 'app', 'main', {
      kind: 'classic',
      requiredChecks: ['ci'],
      requireConversationResolution: true,
    });
    const branch = await ok.request('GET /repos/{owner}/{repo}/branches/{branch}', {
      owner: 'acme',
      repo: 'app',
      branch: 'main',
    });
    expect(branch.data.protected).toBe(true);
    expect(branch.data.protection.required_status_checks?.contexts).toEqual(['ci']);
    const rules = await ok.request('GET /repos/{owner}/{repo}/rules/branches/{branch}', {
      owner: 'acme',
      repo: 'app',
      branch: 'main',
    });
    expect(rules.data).toEqual([]);

    gh.setCi('acme', 'app', (push) =>
      push.branch === 'slow' ? [] : [{ name: 'ci', conclusion: 'success', delayMs: 10 }],
    );
    const unchecked = await gh.pushCommit('acme', 'app', 'slow', { 's.txt': 's\n' });
    expect(
      await message(
        ok.request('PATCH /repos/{owner}/{repo}/git/refs/{ref}', {
          owner: 'acme',
          repo: 'app',
          ref: 'heads/main',
          sha: unchecked,
          force: false,
        }),
      ),
    ).toEqual({ status: 422, message: 'Required status check "ci" is expected.' });

    const pr = await gh.createPullRequest('acme', 'app', { head: 'g', files: { 'g.txt': 'g\n' } });
    await gh.idle();
    gh.setUnresolvedConversations('acme', 'app', pr.number, 1);
    expect(await mergeableState(pr.number)).toBe('blocked');
    gh.setUnresolvedConversations('acme', 'app', pr.number, 0);
    expect(await mergeableState(pr.number)).toBe('clean');
    // A checked commit may go in.
    await ok.request('PATCH /repos/{owner}/{repo}/git/refs/{ref}', {
      owner: 'acme',
      repo: 'app',
      ref: 'heads/main',
      sha: pr.headSha,
      force: false,
    });
  });

  it('deliveries can be lost, held and released out of order, duplicated, replayed with another id or none, and sent form-encoded', async () => {
    const rx = await startReceiver();
    servers.push(rx.server);
    gh.setWebhook(rx.url, 's3cret', { contentType: 'form' });
    gh.setDeliveryFilter((d) =>
      d.event === 'push' ? 'drop' : d.event === 'pull_request' && d.action === 'opened' ? 'hold' : 'send',
    );
    const pr = await gh.createPullRequest('acme', 'app', { head: 'h', files: { 'h.txt': 'h\n' } });
    await gh.setBase('acme', 'app', pr.number, 'main'); // same base: no event
    await gh.pushToPullRequest('acme', 'app', pr.number, { 'h.txt': 'h2\n' });
    await gh.idle();
    expect(gh.heldDeliveries).toBe(1);
    expect(gh.deliveries.filter((d) => d.event === 'push').every((d) => d.lost)).toBe(true);
    expect(rx.got.some((g) => g.event === 'push')).toBe(false);
    const sync = rx.got.find((g) => g.payload.action === 'synchronize')!;
    expect(sync.contentType).toBe('application/x-www-form-urlencoded');
    expect(await verify('s3cret', sync.body, sync.signature)).toBe(true);
    // The held `opened` arrives after `synchronize`: out of order, with older facts.
    expect(await gh.releaseDeliveries()).toEqual([202]);
    const order = rx.got.filter((g) => g.event === 'pull_request').map((g) => g.payload.action);
    expect(order).toEqual(['synchronize', 'opened']);

    gh.setDeliveryFilter(() => 'duplicate');
    await gh.comment('acme', 'app', pr.number, 'alice', '/railyard cancel');
    await gh.idle();
    const comments = rx.got.filter((g) => g.event === 'issue_comment');
    expect(comments).toHaveLength(2);
    expect(comments[0].id).toBe(comments[1].id);

    const id = comments[0].id!;
    expect(await gh.replay(id, { deliveryId: 'another-id' })).toBe(202);
    expect(await gh.replay(id, { deliveryId: null })).toBe(202);
    const replays = rx.got.slice(-2);
    expect(replays.map((g) => g.id)).toEqual(['another-id', undefined]);
    for (const g of replays) expect(await verify('s3cret', g.body, g.signature)).toBe(true);
  });

  it('a base edit sends pull_request edited; requests carry timing; the PR records when it showed its final state', async () => {
    const rx = await startReceiver();
    servers.push(rx.server);
    gh.setWebhook(rx.url, 's3cret');
    await gh.pushCommit('acme', 'app', 'develop', { 'd.txt': 'd\n' });
    const pr = await gh.createPullRequest('acme', 'app', { head: 'k', files: { 'k.txt': 'k\n' } });
    await gh.setBase('acme', 'app', pr.number, 'develop');
    await gh.idle();
    const edited = rx.got.find((g) => g.payload.action === 'edited')!;
    expect(edited.payload.changes).toEqual({
      base: { ref: { from: 'main' }, sha: { from: expect.any(String) } },
    });
    expect(gh.getPullRequest('acme', 'app', pr.number).base).toBe('develop');

    const t0 = Date.now();
    const status = (state: 'pending' | 'success') =>
      ok.request('POST /repos/{owner}/{repo}/statuses/{sha}', {
        owner: 'acme',
        repo: 'app',
        sha: pr.headSha,
        state,
        context: 'railyard/merge-queue',
      });
    await status('pending');
    const { data: c } = await ok.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
      owner: 'acme',
      repo: 'app',
      issue_number: pr.number,
      body: 'queued',
    });
    expect(gh.finalShownAt('acme', 'app', pr.number).all).toBeNull();
    await status('success');
    await ok.request('PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}', {
      owner: 'acme',
      repo: 'app',
      comment_id: c.id,
      body: 'merged',
    });
    await ok.request('PATCH /repos/{owner}/{repo}/pulls/{pull_number}', {
      owner: 'acme',
      repo: 'app',
      pull_number: pr.number,
      state: 'closed',
    });
    const shown = gh.finalShownAt('acme', 'app', pr.number);
    expect(shown.status).toBeGreaterThanOrEqual(t0);
    expect(shown.all).toBe(Math.max(shown.status!, shown.comment!, shown.closed!));
    expect(gh.shown('acme', 'app', pr.number).map((s) => s.kind)).toEqual([
      'status',
      'comment',
      'status',
      'comment',
      'closed',
    ]);
    const writes = gh.requests.filter((r) => r.method !== 'GET');
    expect(writes.length).toBe(5);
    for (const w of writes) {
      expect(w.at).toBeGreaterThanOrEqual(t0);
      expect(w.ms).toBeGreaterThanOrEqual(0);
    }
  });
});
