import fc from 'fast-check';
import { v5 as uuidv5 } from 'uuid';
import { describe, expect, it } from 'vitest';
import { TEST_ID_NAMESPACE, testId, testIds } from '../../src/flaky/identity.js';

const REPO = { host: 'GitHub.com', owner: 'Acme', name: 'Widgets' };

describe('test ids', () => {
  it('are UUID v5 of the JSON (org, repo, file, classname, parent, name, variant) in the Railyard namespace', () => {
    const text = fc.string({ unit: 'grapheme', maxLength: 40 });
    fc.assert(
      fc.property(text, fc.option(text), fc.option(text), fc.option(text), text, text, (org, file, classname, parent, name, variant) => {
        const id = testId(org, REPO, { file, classname, parent, name, variant });
        const expected = uuidv5(
          JSON.stringify([org, 'github.com/acme/widgets', file ?? '', classname ?? '', parent ?? '', name, variant]),
          TEST_ID_NAMESPACE,
        );
        expect(id).toBe(expected);
      }),
      { numRuns: 2000 },
    );
  });

  it('are the same UUID v5 for names longer than any before them, and for short ones after those', () => {
    const expected = (name: string) =>
      uuidv5(JSON.stringify(['org', 'github.com/acme/widgets', '', '', '', name, '']), TEST_ID_NAMESPACE);
    for (const name of ['short', 'é'.repeat(3000), 'ü'.repeat(9000), 'after the long ones', '']) {
      expect(testId('org', REPO, { file: null, classname: null, parent: null, name, variant: '' })).toBe(expected(name));
    }
  });

  it('differ when any part differs, and the repository is case-insensitive', () => {
    const t = { file: 'src/a.test.ts', classname: 'A', parent: 'suite', name: 'works', variant: '' };
    const base = testIds('org', REPO)(t);
    expect(testIds('org', { host: 'github.com', owner: 'acme', name: 'widgets' })(t)).toBe(base);
    expect(new Set([base, ...(['file', 'classname', 'parent', 'name', 'variant'] as const).map((k) => testIds('org', REPO)({ ...t, [k]: `${t[k]}x` }))]).size).toBe(6);
    expect(testIds('other', REPO)(t)).not.toBe(base);
    expect(base).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
