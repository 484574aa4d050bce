import { describe, expect, it } from 'vitest';
import { parseRepoRef, repoKey } from '../../src/contract/index.js';

describe('repositories, written once', () => {
  it('parseRepoRef reads owner/name, host/owner/name, GitLab subgroups and a trailing .git', () => {
    expect(parseRepoRef('acme/app')).toEqual({ host: 'github.com', owner: 'acme', name: 'app' });
    expect(parseRepoRef(' ghe.example/acme/app.git ')).toEqual({ host: 'ghe.example', owner: 'acme', name: 'app' });
    expect(parseRepoRef('gitlab.com/group/sub/app')).toEqual({ host: 'gitlab.com', owner: 'group/sub', name: 'app' });
    expect(parseRepoRef('app')).toBeNull();
    expect(parseRepoRef('')).toBeNull();
  });

  it('repoKey is host/owner/name in lower case, whatever the case it was given in', () => {
    expect(repoKey({ host: 'GitHub.com', owner: 'Acme', name: 'App' })).toBe('github.com/acme/app');
  });
});
