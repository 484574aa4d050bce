import { describe, expect, it } from 'vitest';
import { conflictingPins, parseOrgRepoPin } from '../../src/server/ownership.js';

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
      'acme=github.com/acme/*/x',
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
});
