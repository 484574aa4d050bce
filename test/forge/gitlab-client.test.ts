// The GitLab forge's REST client (@gitbeaker/rest with Railyard's request handler) against the
// GitLab emulator: reads by full project path, GitLab's errors surfaced with status and message,
// 429s waited out for Retry-After (not @gitbeaker's default quarter-second retries), every request
// counted, and a Retry-After longer than the client accepts failing at once.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GitLabClient, messageOf, retryAfterMs, statusOf } from '../../src/forge/gitlab/index.js';
import { startGitLabEmulator, type GitLabEmulator } from '../support/gitlab/index.js';

const PROJECT = 'acme/platform/web';

describe('GitLab REST client', () => {
  let gl: GitLabEmulator;
  const logs: string[] = [];
  const client = (over: Partial<ConstructorParameters<typeof GitLabClient>[0]> = {}) =>
    new GitLabClient({ url: gl.url, token: 'glpat-x', log: (m) => logs.push(m), ...over });

  beforeEach(async () => {
    logs.length = 0;
    gl = await startGitLabEmulator();
    gl.addToken('glpat-x');
    gl.createProject(PROJECT);
  });
  afterEach(() => gl.close());

  it('reads merge requests by the full project path and counts its requests', async () => {
    const mr = await gl.createMergeRequest(PROJECT, {
      sourceBranch: 'f',
      author: 'alice',
      files: { 'a.txt': 'a\n' },
    });
    const c = client();
    const got = await c.api.MergeRequests.show(PROJECT, mr.iid);
    expect(got).toMatchObject({ iid: mr.iid, sha: mr.sha, source_branch: 'f', target_branch: 'main' });
    expect((got.author as { username: string }).username).toBe('alice');
    expect(c.requests).toBe(1);
    expect(gl.requests.map((r) => r.path)).toEqual([
      `/projects/${encodeURIComponent(PROJECT)}/merge_requests/1`,
    ]);
    expect(gl.requests[0]!.token).toBe('glpat-x');
  });

  it("surfaces GitLab's status and message", async () => {
    const err = await client()
      .api.Projects.show('acme/nope')
      .catch((e: unknown) => e);
    expect(statusOf(err)).toBe(404);
    expect(messageOf(err)).toBe('404 Project Not Found');
    const denied = await client({ token: 'bad' })
      .api.Projects.show(PROJECT)
      .catch((e: unknown) => e);
    expect([statusOf(denied), messageOf(denied)]).toEqual([401, '401 Unauthorized']);
  });

  it('waits out a 429 for its Retry-After, then pauses polling meanwhile', async () => {
    const c = client();
    gl.rateLimitNext(1, 1);
    const started = Date.now();
    const p = await c.api.Projects.show(PROJECT);
    expect(p.path_with_namespace).toBe(PROJECT);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(c.requests).toBe(2);
    expect(logs.join('\n')).toMatch(/GitLab answered 429 .* retrying in 1 s/);
    expect(c.pausedUntil).toBeGreaterThan(started);
  });

  it('fails at once when GitLab asks for a longer wait than allowed', async () => {
    const c = client({ maxRetryAfterMs: 5_000 });
    gl.rateLimitNext(1, 3600);
    const started = Date.now();
    const err = await c.api.Projects.show(PROJECT).catch((e: unknown) => e);
    expect(statusOf(err)).toBe(429);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(retryAfterMs('3')).toBe(3000);
    expect(retryAfterMs(new Date(10_000).toUTCString(), 4_000)).toBe(6000);
    expect(retryAfterMs(null)).toBeNull();
    expect(retryAfterMs('soon')).toBeNull();
  });
});
