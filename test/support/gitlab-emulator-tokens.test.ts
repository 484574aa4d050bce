// The GitLab emulator's tokens and permissions (what `railyard mq doctor` reads on GitLab): the
// token's role on a project, its scopes and expiry, and a protected branch's access levels, as
// GitLab answers them, checked against GitLab's published schemas.
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  closeEmulator,
  git,
  gitFails,
  openEmulator,
  PROJECT,
  rawRequest,
  type GitLabApi,
} from './gitlab-emulator-fixture.js';
import { ACCESS, type GitLabEmulator } from './gitlab/index.js';
import { checkOpenApi } from './gitlab/openapi.js';

describe('GitLab emulator: tokens and permissions', () => {
  let gl: GitLabEmulator;
  let api: GitLabApi;
  let work: string;

  beforeEach(async () => {
    ({ gl, api, work } = await openEmulator({ 'README.md': '# app\n' }));
  });

  afterEach(() => closeEmulator(gl, work));

  const raw = (path: string, init: RequestInit & { token?: string | null } = {}) =>
    rawRequest(gl, path, init);

  it("answers the token's role, scopes, expiry and the branch's protection as GitLab does", async () => {
    // The role: a membership is project_access, a token's level where it is no member group_access.
    expect((await api.Projects.show(PROJECT)).permissions).toEqual({
      project_access: null,
      group_access: { access_level: ACCESS.maintainer, notification_level: 3 },
    });
    gl.setMember(PROJECT, 'railyard-bot', ACCESS.reporter);
    expect((await api.Projects.show(PROJECT)).permissions).toEqual({
      project_access: { access_level: ACCESS.reporter, notification_level: 3 },
      group_access: null,
    });
    gl.setMember(PROJECT, 'railyard-bot', ACCESS.maintainer);
    // The token itself, whatever its scope.
    gl.addToken('glpat-reader', { username: 'reader', scopes: ['read_api'], expiresAt: '2099-01-31' });
    const self = (await (await raw('/personal_access_tokens/self', { token: 'glpat-reader' })).json()) as {
      user_id: number;
    };
    expect(self).toMatchObject({
      scopes: ['read_api'],
      expires_at: '2099-01-31',
      active: true,
      revoked: false,
    });
    expect(self.user_id).toBe(gl.userId('reader'));
    expect(checkOpenApi('GET', '/personal_access_tokens/self', 200, self)).toBeNull();
    // read_api reads but cannot write (REST nor git).
    expect((await raw(`/projects/${encodeURIComponent(PROJECT)}`, { token: 'glpat-reader' })).status).toBe(
      200,
    );
    const write = await raw(`/projects/${encodeURIComponent(PROJECT)}/statuses/${'a'.repeat(40)}`, {
      method: 'POST',
      body: JSON.stringify({ state: 'running' }),
      token: 'glpat-reader',
    });
    expect(write.status).toBe(403);
    expect(await write.json()).toMatchObject({ error: 'insufficient_scope', scope: 'api' });
    expect(await gitFails(work, ['ls-remote', `${gl.url}/${PROJECT}.git`], 'glpat-reader')).toMatch(
      /Authentication failed|401|could not read Username/,
    );
    gl.addToken('glpat-git', { username: 'reader', scopes: ['read_api', 'read_repository'] });
    const clone = join(work, 'c');
    await git(work, ['clone', '-q', `${gl.url}/${PROJECT}.git`, clone], 'glpat-git');
    await git(clone, ['commit', '-q', '--allow-empty', '-m', 'x']);
    expect(await gitFails(clone, ['push', 'origin', 'HEAD:side'], 'glpat-git')).toMatch(/403/);
    // An expired token is refused everywhere.
    gl.addToken('glpat-old', { username: 'reader', expiresAt: '2020-01-01' });
    const expired = await raw('/user', { token: 'glpat-old' });
    expect(expired.status).toBe(401);
    expect(await expired.json()).toEqual({ error: 'invalid_token', error_description: 'Token has expired.' });
    // The branch API says who may push; the protection itself is for Maintainers to read.
    gl.protectBranch(PROJECT, 'main', {
      pushAccessLevel: ACCESS.maintainer,
      mergeAccessLevel: ACCESS.developer,
    });
    gl.addToken('glpat-dev', { username: 'dev', defaultAccess: ACCESS.developer });
    const branch = await (
      await raw(`/projects/${encodeURIComponent(PROJECT)}/repository/branches/main`, { token: 'glpat-dev' })
    ).json();
    expect(branch).toMatchObject({
      protected: true,
      can_push: false,
      developers_can_push: false,
      developers_can_merge: true,
    });
    expect(checkOpenApi('GET', '/projects/:id/repository/branches/:branch', 200, branch)).toBeNull();
    const rule = await raw(`/projects/${encodeURIComponent(PROJECT)}/protected_branches/main`, {
      token: 'glpat-dev',
    });
    expect(rule.status).toBe(403);
    const shown = await api.ProtectedBranches.show(PROJECT, 'main');
    const described = (levels: unknown) =>
      (levels as Array<{ access_level_description: string }>).map((l) => l.access_level_description);
    expect(described(shown.push_access_levels)).toEqual(['Maintainers']);
    expect(described(shown.merge_access_levels)).toEqual(['Developers + Maintainers']);
    expect(checkOpenApi('GET', '/projects/:id/protected_branches/:name', 200, shown)).toBeNull();
    // The list names wildcard rules as they were set, not the branches they match; Maintainers only.
    gl.protectBranch(PROJECT, 'railyard-merge/*', { pushAccessLevel: ACCESS.developer });
    const listed = await api.ProtectedBranches.all(PROJECT);
    expect(listed.map((b) => b.name)).toEqual(['main', 'railyard-merge/*']);
    expect(checkOpenApi('GET', '/projects/:id/protected_branches', 200, listed)).toBeNull();
    expect(
      (await raw(`/projects/${encodeURIComponent(PROJECT)}/protected_branches`, { token: 'glpat-dev' }))
        .status,
    ).toBe(403);
  });
});
