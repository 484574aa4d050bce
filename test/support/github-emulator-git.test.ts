// The GitHub emulator over git and its merges: clone, fetch and push over smart HTTP with tokens,
// the fast-forward rule of git/refs, lazy mergeability, PUT pulls/merge and a fast-forwarded base.
import { join } from 'node:path';
import { Octokit } from '@octokit/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { GitHubEmulator } from './github/index.js';
import { closeEmulator, git, gitFails, openEmulator, TOKEN } from './github-emulator-fixture.js';

describe('GitHub emulator', () => {
  let gh: GitHubEmulator;
  let ok: Octokit;
  let work: string;

  beforeEach(async () => ({ gh, ok, work } = await openEmulator()));
  afterEach(() => closeEmulator(gh, work));

  it('git clones, fetches refs/pull/N/head and pushes over smart HTTP with x-access-token; refuses without a token', async () => {
    const { cloneUrl } = { cloneUrl: `http://${gh.host}/acme/app.git` };
    const noAuth = await gitFails(work, ['clone', '-q', cloneUrl, 'anon']);
    expect(noAuth).toMatch(/Authentication failed|could not read Username|401/);
    const wrong = await gitFails(work, ['clone', '-q', cloneUrl, 'wrong'], 'ghp_wrong');
    // git retries a refused token by asking for a username, which tests cannot type.
    expect(wrong).toMatch(/Authentication failed|could not read Username|401/);

    const pr = await gh.createPullRequest('acme', 'app', {
      head: 'feature',
      title: 'Feature',
      user: 'alice',
      files: { 'f.txt': 'f\n' },
    });
    const dir = join(work, 'clone');
    await git(work, ['clone', '-q', cloneUrl, dir], TOKEN);
    expect(await git(dir, ['rev-parse', 'HEAD'])).toBe(await gh.branchSha('acme', 'app', 'main'));
    await git(dir, ['fetch', '-q', 'origin', `refs/pull/${pr.number}/head:pr`], TOKEN);
    expect(await git(dir, ['rev-parse', 'pr'])).toBe(pr.headSha);

    // A test branch pushed by git runs the CI and shows up in branches().
    await git(dir, ['checkout', '-q', '-b', 'railyard-merge/test', 'pr']);
    await git(dir, ['commit', '-q', '--allow-empty', '-m', 'test commit']);
    const sha = await git(dir, ['rev-parse', 'HEAD']);
    await git(dir, ['push', '-q', 'origin', 'railyard-merge/test'], TOKEN);
    expect(await gh.branches('acme', 'app')).toEqual(['feature', 'main', 'railyard-merge/test']);
    await gh.idle();
    const runs = await ok.request('GET /repos/{owner}/{repo}/commits/{ref}/check-runs', {
      owner: 'acme',
      repo: 'app',
      ref: sha,
    });
    expect(runs.data.total_count).toBe(1);
    expect(runs.data.check_runs[0]).toMatchObject({
      name: 'ci',
      status: 'completed',
      conclusion: 'success',
      head_sha: sha,
    });

    // GitHub owns refs/pull/*: pushes there are refused.
    const hidden = await gitFails(dir, ['push', '-q', 'origin', `HEAD:refs/pull/${pr.number}/head`], TOKEN);
    expect(hidden).toMatch(/hidden ref|rejected/);

    // A push to the PR's head branch updates the PR and refs/pull/N/head.
    await git(dir, ['checkout', '-q', '-b', 'feature', 'pr']);
    await git(dir, ['commit', '-q', '--allow-empty', '-m', 'more']);
    const newHead = await git(dir, ['rev-parse', 'HEAD']);
    await git(dir, ['push', '-q', 'origin', 'feature'], TOKEN);
    expect(gh.getPullRequest('acme', 'app', pr.number).headSha).toBe(newHead);
    await git(dir, ['fetch', '-q', 'origin', `+refs/pull/${pr.number}/head:pr`], TOKEN);
    expect(await git(dir, ['rev-parse', 'pr'])).toBe(newHead);
  });

  it('PATCH git/refs fast-forwards with force false and answers 422 "Update is not a fast forward" otherwise; DELETE removes', async () => {
    const base = (await gh.branchSha('acme', 'app', 'main'))!;
    const ahead = await gh.pushCommit('acme', 'app', 'staging', { 'x.txt': 'x\n' });
    const r = await ok.request('PATCH /repos/{owner}/{repo}/git/refs/{ref}', {
      owner: 'acme',
      repo: 'app',
      ref: 'heads/main',
      sha: ahead,
      force: false,
    });
    expect(r.status).toBe(200);
    expect(r.data).toMatchObject({ ref: 'refs/heads/main', object: { sha: ahead, type: 'commit' } });
    expect(await gh.branchSha('acme', 'app', 'main')).toBe(ahead);

    const err = await ok
      .request('PATCH /repos/{owner}/{repo}/git/refs/{ref}', {
        owner: 'acme',
        repo: 'app',
        ref: 'heads/main',
        sha: base,
        force: false,
      })
      .catch((e: { status: number; response: { data: { message: string } } }) => e);
    expect(err).toMatchObject({
      status: 422,
      response: { data: { message: 'Update is not a fast forward' } },
    });
    expect(await gh.branchSha('acme', 'app', 'main')).toBe(ahead);
    await ok.request('PATCH /repos/{owner}/{repo}/git/refs/{ref}', {
      owner: 'acme',
      repo: 'app',
      ref: 'heads/main',
      sha: base,
      force: true,
    });
    expect(await gh.branchSha('acme', 'app', 'main')).toBe(base);

    await expect(
      ok.request('PATCH /repos/{owner}/{repo}/git/refs/{ref}', {
        owner: 'acme',
        repo: 'app',
        ref: 'heads/nope',
        sha: base,
        force: false,
      }),
    ).rejects.toMatchObject({ status: 422, response: { data: { message: 'Reference does not exist' } } });

    const del = await ok.request('DELETE /repos/{owner}/{repo}/git/refs/{ref}', {
      owner: 'acme',
      repo: 'app',
      ref: 'heads/staging',
    });
    expect(del.status).toBe(204);
    expect(await gh.branches('acme', 'app')).toEqual(['main']);
    await expect(
      ok.request('DELETE /repos/{owner}/{repo}/git/refs/{ref}', {
        owner: 'acme',
        repo: 'app',
        ref: 'heads/staging',
      }),
    ).rejects.toMatchObject({
      status: 422,
    });
  });

  it('mergeable is computed in the background: from the creation of the PR, and after the target moved from the first GET (null/unknown until then), dirty on conflict', async () => {
    gh.setMergeabilityDelay('acme', 'app', 300);
    const pr = await gh.createPullRequest('acme', 'app', { head: 'change', files: { 'src/a.txt': 'two\n' } });
    const get = () =>
      ok.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', {
        owner: 'acme',
        repo: 'app',
        pull_number: pr.number,
      });
    // The job started when the PR was opened: its answer comes without a read having asked.
    await gh.idle();
    gh.setMergeabilityDelay('acme', 'app', 0);
    let p = await get();
    expect([p.data.mergeable, p.data.mergeable_state]).toEqual([true, 'clean']);
    expect(p.data).toMatchObject({
      number: pr.number,
      state: 'open',
      merged: false,
      draft: false,
      head: { ref: 'change', sha: pr.headSha },
      base: { ref: 'main' },
    });

    // The target moves in a conflicting way: ask again, then dirty.
    await gh.pushCommit('acme', 'app', 'main', { 'src/a.txt': 'three\n' });
    p = await get();
    expect(p.data.mergeable).toBeNull();
    p = await get();
    expect([p.data.mergeable, p.data.mergeable_state]).toEqual([false, 'dirty']);

    await gh.setDraft('acme', 'app', pr.number, true);
    expect((await get()).data.draft).toBe(true);
  });

  it('PUT pulls/merge merges only the pinned head (409 otherwise), with merge, squash and rebase', async () => {
    const a = await gh.createPullRequest('acme', 'app', { head: 'a', title: 'A', files: { 'a.txt': 'a\n' } });
    const b = await gh.createPullRequest('acme', 'app', { head: 'b', title: 'B', files: { 'b.txt': 'b\n' } });
    const c = await gh.createPullRequest('acme', 'app', { head: 'c', title: 'C', files: { 'c.txt': 'c\n' } });
    const merge = (n: number, sha: string, method: 'merge' | 'squash' | 'rebase') =>
      ok.request('PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge', {
        owner: 'acme',
        repo: 'app',
        pull_number: n,
        sha,
        merge_method: method,
      });

    await expect(merge(a.number, b.headSha, 'merge')).rejects.toMatchObject({
      status: 409,
      response: { data: { message: 'Head branch was modified. Review and try the merge again.' } },
    });
    const before = await gh.branchSha('acme', 'app', 'main');
    const m = await merge(a.number, a.headSha, 'merge');
    expect(m.data).toMatchObject({ merged: true, message: 'Pull Request successfully merged' });
    let log = await gh.log('acme', 'app', 'main');
    expect(log[0]).toMatchObject({ sha: m.data.sha, parents: [before, a.headSha] });
    expect(gh.getPullRequest('acme', 'app', a.number)).toMatchObject({ state: 'closed', merged: true });

    const s = await merge(b.number, b.headSha, 'squash');
    log = await gh.log('acme', 'app', 'main');
    expect(log[0]).toMatchObject({
      sha: s.data.sha,
      parents: [m.data.sha],
      message: expect.stringMatching(/^B \(#2\)/),
    });

    const rb = await merge(c.number, c.headSha, 'rebase');
    log = await gh.log('acme', 'app', 'main');
    expect(log[0].sha).toBe(rb.data.sha);
    expect(log[0].parents).toEqual([s.data.sha]);
    await expect(merge(c.number, c.headSha, 'merge')).rejects.toMatchObject({ status: 405 });
  });

  it('a fast-forward of the base to a PR head marks the PR merged (as GitHub does)', async () => {
    const pr = await gh.createPullRequest('acme', 'app', { head: 'ff', files: { 'ff.txt': 'ff\n' } });
    await ok.request('PATCH /repos/{owner}/{repo}/git/refs/{ref}', {
      owner: 'acme',
      repo: 'app',
      ref: 'heads/main',
      sha: pr.headSha,
      force: false,
    });
    expect(gh.getPullRequest('acme', 'app', pr.number)).toMatchObject({ state: 'closed', merged: true });
  });
});
