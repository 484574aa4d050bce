// The GitHub emulator's own test: every endpoint driven with the real Octokit client, every REST
// answer checked against GitHub's OpenAPI description and every webhook payload against
// @octokit/openapi-webhooks, plus git over smart HTTP, auth, the fast-forward rule, lazy
// mergeability, signatures, ETags, rate limits and App token expiry.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createAppAuth } from '@octokit/auth-app';
import { Octokit } from '@octokit/core';
import { verify } from '@octokit/webhooks-methods';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGitHubEmulator, type GitHubEmulator } from './github/index.js';
import { loadValidator, type SchemaValidator } from './github/validate.js';

const run = promisify(execFile);
const GIT_ENV = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_TERMINAL_PROMPT: '0',
  GIT_AUTHOR_NAME: 'Dev',
  GIT_AUTHOR_EMAIL: 'dev@example.com',
  GIT_COMMITTER_NAME: 'Dev',
  GIT_COMMITTER_EMAIL: 'dev@example.com',
};

/** Runs git without blocking the event loop (the emulator answers in this process). */
async function git(cwd: string, args: string[], token?: string): Promise<string> {
  const auth = token
    ? [
        '-c',
        `http.extraHeader=Authorization: Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`,
      ]
    : [];
  const { stdout } = await run('git', [...auth, ...args], { cwd, env: GIT_ENV });
  return stdout.trim();
}

async function gitFails(cwd: string, args: string[], token?: string): Promise<string> {
  try {
    await git(cwd, args, token);
  } catch (e) {
    return String((e as { stderr?: string }).stderr ?? e);
  }
  throw new Error(`git ${args.join(' ')} succeeded`);
}

interface Received {
  event: string;
  id: string;
  body: string;
  signature: string;
  payload: { action?: string } & Record<string, unknown>;
}

/** A webhook receiver on 127.0.0.1 that records what the emulator delivers. */
async function startReceiver(): Promise<{ url: string; got: Received[]; server: Server }> {
  const got: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      got.push({
        event: String(req.headers['x-github-event']),
        id: String(req.headers['x-github-delivery']),
        signature: String(req.headers['x-hub-signature-256']),
        body,
        payload: JSON.parse(body) as Received['payload'],
      });
      res.statusCode = 202;
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`, got, server };
}

const TOKEN = 'ghp_emulatortesttoken';

describe('GitHub emulator', () => {
  let gh: GitHubEmulator;
  let ok: Octokit;
  let work: string;
  let validator: SchemaValidator;

  beforeAll(async () => {
    validator = await loadValidator('ghes');
  });

  beforeEach(async () => {
    gh = await startGitHubEmulator({ validate: true });
    gh.addToken(TOKEN, { login: 'railyard-bot' });
    gh.createRepo('acme', 'app', { files: { 'README.md': '# app\n', 'src/a.txt': 'one\n' } });
    ok = new Octokit({ auth: TOKEN, baseUrl: gh.apiUrl });
    work = await mkdtemp(join(tmpdir(), 'gh-emu-test-'));
  });

  afterEach(async () => {
    try {
      await gh.idle();
      // Every REST answer and webhook payload of the test was valid against GitHub's descriptions.
      expect(gh.schemaViolations).toEqual([]);
    } finally {
      await gh.close();
      await rm(work, { recursive: true, force: true });
    }
  });

  it('close() stops the emulator and removes its repositories', async () => {
    const other = await startGitHubEmulator();
    other.addToken('t');
    const { dir } = other.createRepo('o', 'r');
    expect(existsSync(dir)).toBe(true);
    await other.close();
    expect(existsSync(dir)).toBe(false);
    await expect(fetch(`${other.apiUrl}/rate_limit`)).rejects.toThrow();
  });

  it('the validator rejects answers that do not match GitHub (so a passing check means something)', () => {
    expect(validator.response('GET', '/repos/{owner}/{repo}', 200, { id: 'x' })).toMatch(/required|must be/);
    expect(
      validator.response('GET', '/repos/{owner}/{repo}/pulls/{pull_number}', 404, { message: 404 }),
    ).toMatch(/must be string/);
    expect(
      validator.response('PUT', '/repos/{owner}/{repo}/pulls/{pull_number}/merge', 200, {
        merged: true,
        message: 'ok',
        sha: 'abc',
      }),
    ).toBeNull();
    expect(validator.webhook('pull_request', { action: 'opened', number: 1 })).toMatch(/required/);
  });

  it('GET /repos answers the repository with a clone_url served over smart HTTP; errors are GitHub-shaped', async () => {
    const r = await ok.request('GET /repos/{owner}/{repo}', { owner: 'acme', repo: 'app' });
    expect(r.status).toBe(200);
    expect(r.data.full_name).toBe('acme/app');
    expect(r.data.default_branch).toBe('main');
    expect(r.data.clone_url).toBe(`http://${gh.host}/acme/app.git`);
    expect(r.headers['x-ratelimit-limit']).toBe('5000');

    const missing = await ok
      .request('GET /repos/{owner}/{repo}', { owner: 'acme', repo: 'nope' })
      .catch((e: { status: number; response: { data: unknown } }) => e);
    expect(missing.status).toBe(404);
    expect((missing as { response: { data: unknown } }).response.data).toMatchObject({
      message: 'Not Found',
      documentation_url: expect.stringContaining('docs.github.com'),
    });

    const anon = new Octokit({ baseUrl: gh.apiUrl });
    await expect(
      anon.request('GET /repos/{owner}/{repo}', { owner: 'acme', repo: 'app' }),
    ).rejects.toMatchObject({
      status: 401,
      response: { data: { message: 'Requires authentication' } },
    });
    const bad = new Octokit({ auth: 'ghp_wrong', baseUrl: gh.apiUrl });
    await expect(
      bad.request('GET /repos/{owner}/{repo}', { owner: 'acme', repo: 'app' }),
    ).rejects.toMatchObject({
      status: 401,
      response: { data: { message: 'Bad credentials' } },
    });
    expect(gh.requests.map((q) => `${q.method} ${q.path} ${q.status}`)).toEqual([
      'GET /repos/acme/app 200',
      'GET /repos/acme/nope 404',
      'GET /repos/acme/app 401',
      'GET /repos/acme/app 401',
    ]);
    expect(gh.requests[0].token).toBe(TOKEN);
    gh.resetRequestCount();
    expect(gh.requests).toEqual([]);
  });

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

  it('mergeable is computed lazily: null/unknown on the first GET after a change, then the real value (dirty on conflict)', async () => {
    const pr = await gh.createPullRequest('acme', 'app', { head: 'change', files: { 'src/a.txt': 'two\n' } });
    const get = () =>
      ok.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', {
        owner: 'acme',
        repo: 'app',
        pull_number: pr.number,
      });
    let p = await get();
    expect([p.data.mergeable, p.data.mergeable_state]).toEqual([null, 'unknown']);
    p = await get();
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

  it('GETs carry an ETag; If-None-Match answers 304 without spending the rate limit', async () => {
    const sha = (await gh.branchSha('acme', 'app', 'main'))!;
    const get = (etag?: string) =>
      ok.request('GET /repos/{owner}/{repo}/commits/{ref}/status', {
        owner: 'acme',
        repo: 'app',
        ref: 'main',
        headers: etag ? { 'if-none-match': etag } : {},
      });
    const a = await get();
    const etag = a.headers.etag!;
    expect(etag).toMatch(/^W\/"/);
    const used = Number(a.headers['x-ratelimit-used']);
    const b = await get(etag).catch(
      (e: { status: number; response: { headers: Record<string, string> } }) => e,
    );
    expect(b.status).toBe(304);
    expect(
      Number((b as { response: { headers: Record<string, string> } }).response.headers['x-ratelimit-used']),
    ).toBe(used);
    await ok.request('POST /repos/{owner}/{repo}/statuses/{sha}', {
      owner: 'acme',
      repo: 'app',
      sha,
      state: 'success',
      context: 'x',
    });
    const c = await get(etag);
    expect(c.status).toBe(200);
    expect(c.headers.etag).not.toBe(etag);
    const rl = await ok.request('GET /rate_limit');
    expect(rl.data.resources.core).toMatchObject({ limit: 5000, used: used + 2, remaining: 5000 - used - 2 });
  });

  it('answers primary and secondary rate limits the way GitHub does', async () => {
    gh.rateLimitNext(1, 'primary');
    gh.rateLimitNext(1, 'secondary', 7);
    const p = await ok
      .request('GET /repos/{owner}/{repo}', { owner: 'acme', repo: 'app' })
      .catch((e: unknown) => e);
    expect(p).toMatchObject({
      status: 403,
      response: {
        headers: { 'x-ratelimit-remaining': '0' },
        data: { message: expect.stringMatching(/^API rate limit exceeded for user ID \d+\./) },
      },
    });
    const reset = Number(
      (p as { response: { headers: Record<string, string> } }).response.headers['x-ratelimit-reset'],
    );
    expect(reset).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000));
    const s = await ok
      .request('GET /repos/{owner}/{repo}', { owner: 'acme', repo: 'app' })
      .catch((e: unknown) => e);
    expect(s).toMatchObject({
      status: 403,
      response: {
        headers: { 'retry-after': '7' },
        data: { message: expect.stringMatching(/^You have exceeded a secondary rate limit/) },
      },
    });
    gh.rateLimitNext(1, 'secondary', 3, 429);
    await expect(
      ok.request('GET /repos/{owner}/{repo}', { owner: 'acme', repo: 'app' }),
    ).rejects.toMatchObject({
      status: 429,
      response: { headers: { 'retry-after': '3' } },
    });
    expect((await ok.request('GET /repos/{owner}/{repo}', { owner: 'acme', repo: 'app' })).status).toBe(200);
  });

  it('GitHub App: the JWT finds the installation and mints tokens that work for REST and git until they expire', async () => {
    const { appId, privateKeyPem } = gh.createApp({ installationTokenTtlMs: 1500 });
    const installationId = gh.installApp(appId, 'acme', 'app');
    const app = new Octokit({
      authStrategy: createAppAuth,
      auth: { appId, privateKey: privateKeyPem },
      baseUrl: gh.apiUrl,
    });
    const inst = await app.request('GET /repos/{owner}/{repo}/installation', { owner: 'acme', repo: 'app' });
    expect(inst.data).toMatchObject({ id: installationId, app_id: appId });

    const auth = createAppAuth({ appId, privateKey: privateKeyPem, request: app.request });
    const { token, expiresAt } = await auth({ type: 'installation', installationId });
    expect(token).toMatch(/^ghs_/);
    expect(Date.parse(expiresAt) - Date.now()).toBeLessThanOrEqual(1500);
    const withToken = new Octokit({ auth: token, baseUrl: gh.apiUrl });
    expect(
      (await withToken.request('GET /repos/{owner}/{repo}', { owner: 'acme', repo: 'app' })).status,
    ).toBe(200);
    await git(work, ['clone', '-q', `http://${gh.host}/acme/app.git`, 'c'], token);

    // Another repository is not part of the installation.
    gh.createRepo('acme', 'other');
    await expect(
      withToken.request('GET /repos/{owner}/{repo}', { owner: 'acme', repo: 'other' }),
    ).rejects.toMatchObject({ status: 404 });

    // A JWT signed with another key, or a token used on an App endpoint, is refused.
    const stranger = gh.createApp();
    const forged = new Octokit({
      authStrategy: createAppAuth,
      auth: { appId, privateKey: stranger.privateKeyPem },
      baseUrl: gh.apiUrl,
    });
    await expect(
      forged.request('GET /repos/{owner}/{repo}/installation', { owner: 'acme', repo: 'app' }),
    ).rejects.toMatchObject({ status: 401 });
    await expect(
      withToken.request('POST /app/installations/{installation_id}/access_tokens', {
        installation_id: installationId,
      }),
    ).rejects.toMatchObject({
      status: 401,
    });

    await new Promise((r) => setTimeout(r, 1600));
    await expect(
      withToken.request('GET /repos/{owner}/{repo}', { owner: 'acme', repo: 'app' }),
    ).rejects.toMatchObject({
      status: 401,
      response: { data: { message: 'Bad credentials' } },
    });
    expect(await gitFails(work, ['ls-remote', `http://${gh.host}/acme/app.git`], token)).toMatch(
      /Authentication failed|could not read Username|401/,
    );
  });
});

describe('GitHub emulator, github.com style', () => {
  it('serves the REST API at the root and its answers match the api.github.com description', async () => {
    const gh = await startGitHubEmulator({ style: 'dotcom', validate: true });
    try {
      gh.addToken(TOKEN);
      gh.createRepo('acme', 'app');
      expect(gh.apiUrl).toBe(`http://${gh.host}`);
      const ok = new Octokit({ auth: TOKEN, baseUrl: gh.apiUrl });
      const repo = await ok.request('GET /repos/{owner}/{repo}', { owner: 'acme', repo: 'app' });
      expect(repo.headers['x-github-enterprise-version']).toBeUndefined();
      expect(repo.data.clone_url).toBe(`http://${gh.host}/acme/app.git`);
      const pr = await gh.createPullRequest('acme', 'app', { head: 'x', files: { 'x.txt': 'x\n' } });
      await ok.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', {
        owner: 'acme',
        repo: 'app',
        pull_number: pr.number,
      });
      await ok.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', {
        owner: 'acme',
        repo: 'app',
        pull_number: pr.number,
      });
      await gh.idle();
      await ok.request('GET /repos/{owner}/{repo}/commits/{ref}/check-runs', {
        owner: 'acme',
        repo: 'app',
        ref: pr.headSha,
      });
      await expect(
        ok.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', {
          owner: 'acme',
          repo: 'app',
          pull_number: 99,
        }),
      ).rejects.toMatchObject({
        status: 404,
      });
      expect(gh.schemaViolations).toEqual([]);
    } finally {
      await gh.close();
    }
  });
});
