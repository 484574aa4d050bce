import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseJUnit } from '../../src/flaky/junit.js';
import { countResults, foldResults, joinVariant } from '../../src/flaky/results.js';

const REPO = { host: 'github.com', owner: 'acme', name: 'shop' };
const fixture = (name: string) => {
  const path = fileURLToPath(new URL(`../fixtures/junit/${name}`, import.meta.url));
  return parseJUnit(readFileSync(path, 'utf8'), name).cases;
};

describe('folding a report into tests', () => {
  it('keeps a Playwright test of each project apart: 16 results are 16 tests and 3 failures stay 3', () => {
    const results = foldResults('acme', REPO, '', fixture('playwright-junit-projects.xml'));
    expect(countResults(results)).toEqual({ tests: 16, passed: 11, failed: 3, skipped: 2, flaky: 0 });
    const failed = results.filter((r) => r.outcome === 'failed').map((r) => `${r.variant}: ${r.name}`);
    expect(failed.sort()).toEqual([
      'chromium: checkout › pays with card',
      'firefox: cart › keeps items after reload',
      'firefox: checkout › pays with card',
    ]);
    expect(new Set(results.map((r) => r.id)).size).toBe(16);
  });

  it("joins the upload's --variant and the project: linux/firefox", () => {
    const results = foldResults('acme', REPO, 'linux', fixture('playwright-junit-projects.xml'));
    expect(new Set(results.map((r) => r.variant))).toEqual(new Set(['linux/chromium', 'linux/firefox']));
    // Without a project the upload's variant is the variant, as before.
    expect(
      new Set(foldResults('acme', REPO, 'linux', fixture('playwright-junit.xml')).map((r) => r.variant)),
    ).toEqual(new Set(['linux']));
    expect(joinVariant('', null)).toBe('');
    expect(joinVariant('', 'webkit')).toBe('webkit');
  });

  it('still folds the retries of one test in one project into one pass-on-retry result (gotestsum reruns)', () => {
    const results = foldResults('acme', REPO, '', fixture('gotestsum-rerun.xml'));
    const inventory = results.filter((r) => r.name === 'TestFlakyInventory');
    expect(inventory.map((r) => [r.outcome, r.attempts])).toEqual([['flaky', 2]]);
  });
});
