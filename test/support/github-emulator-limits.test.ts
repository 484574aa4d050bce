// The GitHub emulator's limits and auth: ETags and 304s, primary and secondary rate limits, and a
// GitHub App's JWT, installation tokens and their expiry.
import { createAppAuth } from '@octokit/auth-app';
import { Octokit } from '@octokit/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { GitHubEmulator } from './github/index.js';
import { closeEmulator, git, gitFails, openEmulator } from './github-emulator-fixture.js';

describe('GitHub emulator', () => {
  let gh: GitHubEmulator;
  let ok: Octokit;
  let work: string;

  beforeEach(async () => ({ gh, ok, work } = await openEmulator()));
  afterEach(() => closeEmulator(gh, work));

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
    // Long enough for the checks below on a loaded machine (a clone alone took over 1.5 s at load 15,
    // and the token expired before the 404 of another repository could be read); the end waits for it.
    const { appId, privateKeyPem } = gh.createApp({ installationTokenTtlMs: 6000 });
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
    expect(Date.parse(expiresAt) - Date.now()).toBeLessThanOrEqual(6000);
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

    // Until just past the token's expiry (expires_at has whole seconds, as GitHub's: the token lasts
    // up to 1 s past it).
    await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(expiresAt) - Date.now()) + 1100));
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

  it("permissions: a read-only PAT's account and an App installed without Commit statuses are refused the writes they may not make", async () => {
    gh.addToken('ghp_reader', { login: 'reader', permission: 'read' });
    const reader = new Octokit({ auth: 'ghp_reader', baseUrl: gh.apiUrl });
    const repo = await reader.request('GET /repos/{owner}/{repo}', { owner: 'acme', repo: 'app' });
    expect(repo.data.permissions).toEqual({
      admin: false,
      maintain: false,
      push: false,
      triage: true,
      pull: true,
    });
    expect(
      (await ok.request('GET /repos/{owner}/{repo}', { owner: 'acme', repo: 'app' })).data.permissions?.push,
    ).toBe(true);
    const sha = (await gh.branchSha('acme', 'app', 'main'))!;
    const status = { owner: 'acme', repo: 'app', sha, state: 'success' as const, context: 'ci' };
    await expect(reader.request('POST /repos/{owner}/{repo}/statuses/{sha}', status)).rejects.toMatchObject({
      status: 403,
      response: { data: { message: 'Resource not accessible by personal access token' } },
    });
    await expect(
      reader.request('PATCH /repos/{owner}/{repo}/git/refs/{ref}', {
        owner: 'acme',
        repo: 'app',
        ref: 'heads/main',
        sha,
      }),
    ).rejects.toMatchObject({ status: 403 });
    // Reading still works; pushing does not.
    await git(work, ['clone', '-q', `http://${gh.host}/acme/app.git`, 'r'], 'ghp_reader');
    await git(`${work}/r`, ['checkout', '-q', '-b', 'feature']);
    expect(await gitFails(`${work}/r`, ['push', '-q', 'origin', 'feature'], 'ghp_reader')).toMatch(/403/);

    const { appId, privateKeyPem } = gh.createApp();
    const installationId = gh.installApp(appId, 'acme', 'app', { contents: 'write', metadata: 'read' });
    const app = new Octokit({
      authStrategy: createAppAuth,
      auth: { appId, privateKey: privateKeyPem },
      baseUrl: gh.apiUrl,
    });
    const inst = await app.request('GET /repos/{owner}/{repo}/installation', { owner: 'acme', repo: 'app' });
    expect(inst.data.permissions).toEqual({ contents: 'write', metadata: 'read' });
    const { token } = await createAppAuth({ appId, privateKey: privateKeyPem, request: app.request })({
      type: 'installation',
      installationId,
    });
    const bot = new Octokit({ auth: token, baseUrl: gh.apiUrl });
    await expect(bot.request('POST /repos/{owner}/{repo}/statuses/{sha}', status)).rejects.toMatchObject({
      status: 403,
      response: { data: { message: 'Resource not accessible by integration' } },
    });
    // Contents: write lets it update a ref.
    expect(
      (
        await bot.request('PATCH /repos/{owner}/{repo}/git/refs/{ref}', {
          owner: 'acme',
          repo: 'app',
          ref: 'heads/main',
          sha,
        })
      ).status,
    ).toBe(200);
  });
});
