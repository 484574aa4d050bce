// How a GitLab project maps onto the v1 repo (owner = full namespace path), and the CLI's --repo and
// origin parsing agreeing with it.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseRepo, repoFromRemoteUrl } from '../../src/cli/config.js';
import {
  cacheDirFor,
  cloneUrlOf,
  invalidGitLabRepo,
  projectPath,
  repoOfProject,
} from '../../src/forge/gitlab/index.js';

describe('GitLab repositories', () => {
  it('host/group/subgroup/project: owner is the namespace path, name the project', () => {
    const repo = repoOfProject('gitlab.com', 'acme/platform/web');
    expect(repo).toEqual({ host: 'gitlab.com', owner: 'acme/platform', name: 'web' });
    expect(projectPath(repo!)).toBe('acme/platform/web');
    expect(repoOfProject('gitlab.com', 'web')).toBeNull();
    expect(cloneUrlOf('https://git.example.com/gitlab/', repo!)).toBe(
      'https://git.example.com/gitlab/acme/platform/web.git',
    );
  });

  it('the CLI reads --repo and origin remotes of GitLab projects the same way', () => {
    const want = { host: 'gitlab.com', owner: 'acme/platform', name: 'web' };
    expect(parseRepo('gitlab.com/acme/platform/web')).toEqual(want);
    expect(repoFromRemoteUrl('git@gitlab.com:acme/platform/web.git')).toEqual(want);
    expect(repoFromRemoteUrl('https://gitlab.com/acme/platform/web.git')).toEqual(want);
    // GitLab CI's CI_REPOSITORY_URL carries the job token: it is not part of the repo.
    expect(repoFromRemoteUrl('https://gitlab-ci-token:xyz@gitlab.com/acme/platform/web.git')).toEqual(want);
    expect(repoFromRemoteUrl('ssh://git@gitlab.example.com:2222/a/b/c/d.git')).toEqual({
      host: 'gitlab.example.com',
      owner: 'a/b/c',
      name: 'd',
    });
  });

  it('refuses names GitLab would not have, and keeps caches inside the data dir', () => {
    expect(invalidGitLabRepo({ owner: 'acme/platform', name: 'web' })).toBeNull();
    expect(invalidGitLabRepo({ owner: 'acme/../etc', name: 'web' })).toMatch(
      /^repo\.owner: "\.\." is not a GitLab group path/,
    );
    expect(invalidGitLabRepo({ owner: 'acme', name: 'web.git' })).toMatch(/^repo\.name:/);
    expect(invalidGitLabRepo({ owner: 'a'.repeat(256), name: 'web' })).toBe(
      'repo.owner: a GitLab namespace path is at most 255 characters',
    );
    expect(
      cacheDirFor('/data', { host: 'gitlab.example.com:8443', owner: 'acme/platform', name: 'web' }),
    ).toBe(join('/data', 'gitlab', 'gitlab.example.com_8443', 'acme', 'platform', 'web.git'));
    expect(() => cacheDirFor('/data', { host: '../x', owner: 'acme', name: 'web' })).toThrow(/repo\.host/);
  });
});

describe('owner/name in GET operations', () => {
  it('takes a GitLab namespace owner: the name is the last segment', async () => {
    const { OwnerSlashName, splitOwnerName } = await import('../../src/contract/index.js');
    expect(OwnerSlashName.safeParse('acme/platform/web').success).toBe(true);
    expect(OwnerSlashName.safeParse('acme/web').success).toBe(true);
    for (const bad of ['web', 'acme/', '/web', 'acme//web', 'acme /web'])
      expect(OwnerSlashName.safeParse(bad).success, bad).toBe(false);
    expect(splitOwnerName('acme/platform/web')).toEqual({ owner: 'acme/platform', name: 'web' });
    expect(splitOwnerName('acme/web')).toEqual({ owner: 'acme', name: 'web' });
  });
});
