import { describe, expect, it } from 'vitest';
import { conflictingPins, parseOrgRepoPin, pinMatches } from '../../src/server/access/ownership.js';

describe('--org-repos values', () => {
  it('reads ORG=host/owner/name with * for a whole segment, lower-casing the repository', () => {
    expect(parseOrgRepoPin('acme=GitHub.com/Acme/*')).toEqual({
      org: 'acme',
      segments: ['github.com', 'acme', '*'],
    });
    expect(parseOrgRepoPin('ops=*/*/infra')).toEqual({ org: 'ops', segments: ['*', '*', 'infra'] });
  });

  it('refuses anything else with a one-line message', () => {
    for (const bad of [
      'acme',
      '=github.com/acme/*',
      'acme=github.com/acme',
      'acme=github.com//web',
      'acme=gitlab.com/acme//x',
    ]) {
      expect(() => parseOrgRepoPin(bad), bad).toThrow(/^--org-repos: expected ORG=host\/owner\/name/);
    }
    expect(() => parseOrgRepoPin('acme=github.com/ac*/web')).toThrow(/"\*" stands for a whole segment/);
  });

  it('refuses two organisations for the same repositories; the same organisation twice is fine', () => {
    const pins = (...values: string[]) => values.map(parseOrgRepoPin);
    expect(
      conflictingPins(pins('a=github.com/acme/*', 'b=github.com/globex/*', 'a=gitlab.com/*/web')),
    ).toBeNull();
    expect(conflictingPins(pins('a=github.com/acme/*', 'b=github.com/*/web'))).toBe(
      '--org-repos: a=github.com/acme/* and b=github.com/*/web both match the same repositories; give each repository one organisation',
    );
    expect(conflictingPins(pins('a=*/*/*', 'b=gitlab.com/x/y'))).not.toBeNull();
  });

  it('GitLab namespaces: an owner of several segments, covering its subgroups', () => {
    const pin = parseOrgRepoPin('acme=GitLab.com/Acme/Platform/*');
    expect(pin.segments).toEqual(['gitlab.com', 'acme/platform', '*']);
    const repo = (owner: string, name = 'web') => ({ host: 'gitlab.com', owner, name });
    expect(pinMatches(pin, repo('acme/platform'))).toBe(true);
    expect(pinMatches(pin, repo('acme/platform/team'))).toBe(true);
    expect(pinMatches(pin, repo('acme'))).toBe(false);
    expect(pinMatches(pin, repo('acme/other'))).toBe(false);
    const group = parseOrgRepoPin('acme=gitlab.com/acme/*');
    expect(pinMatches(group, repo('acme/platform/team'))).toBe(true);
    expect(pinMatches(group, repo('evil/acme'))).toBe(false);
    expect(pinMatches(parseOrgRepoPin('x=*/*/web'), repo('a/b/c'))).toBe(true);
    expect(pinMatches(parseOrgRepoPin('x=*/*/web'), repo('a/b/c', 'api'))).toBe(false);
    // Another organisation pinned under the first one's group overlaps it.
    expect(
      conflictingPins(['a=gitlab.com/acme/*', 'b=gitlab.com/acme/platform/web'].map(parseOrgRepoPin)),
    ).not.toBeNull();
    expect(
      conflictingPins(['a=gitlab.com/acme/platform/*', 'b=gitlab.com/acme/infra/*'].map(parseOrgRepoPin)),
    ).toBeNull();
  });
});
