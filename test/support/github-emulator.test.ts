// The GitHub emulator's own test, basics: close, the schema validator, repositories and GitHub-shaped
// errors, and the github.com style. Every REST answer is checked against GitHub's OpenAPI
// description. The other themes: -git (smart HTTP, refs, merges), -api (pulls, CI, webhooks, edge
// rules), -limits (ETags, rate limits, App tokens), -rules (branch rules, delivery faults).
import { existsSync } from 'node:fs';
import { Octokit } from '@octokit/core';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGitHubEmulator, type GitHubEmulator } from './github/index.js';
import { loadValidator, type SchemaValidator } from './github/openapi.js';
import { closeEmulator, openEmulator, TOKEN } from './github-emulator-fixture.js';

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
