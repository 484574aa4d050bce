import { describe, expect, it } from 'vitest';
import { isolatedEnv, railyard } from '../support/cli.js';

describe('railyard demo (the README main job)', () => {
  it('lands the good PRs, fails the broken, conflicting and combination-broken ones, and exits 0', async () => {
    const started = Date.now();
    const run = await railyard(['demo', '--json'], isolatedEnv());
    expect(run.code, run.stderr).toBe(0);
    expect(Date.now() - started).toBeLessThan(60_000);
    const result = JSON.parse(run.stdout);
    expect(result.merged.sort()).toEqual([1, 3, 4, 7, 8]);
    expect(result.failed.sort((a: { prNumber: number }, b: { prNumber: number }) => a.prNumber - b.prNumber)).toEqual([
      { prNumber: 2, reason: 'TEST_RUN_REQUIRED_STATUS_FAILED' },
      { prNumber: 5, reason: 'TEST_RUN_REQUIRED_STATUS_FAILED' },
      { prNumber: 6, reason: 'START_TEST_RUN_MERGE_CONFLICT' },
    ]);
    // main holds exactly the merged PRs, once each, squashed, after the initial commit.
    const subjects: string[] = result.log.map((l: string) => l.replace(/^[0-9a-f]+ /, ''));
    expect(subjects.at(-1)).toBe('Initial shop (Railyard Demo)');
    expect(subjects.slice(0, -1).map((s) => Number(/\(#(\d+)\)/.exec(s)?.[1])).sort()).toEqual([1, 3, 4, 7, 8]);
    // Progress went to stderr, with the outcome explained.
    expect(run.stderr).toMatch(/Merged: #1, #3, #4, #7, #8/);
    expect(run.stderr).toMatch(/#5 Checkout uses cart.total .* passes alone/);
    expect(result.dir).toBeNull();
  });
});
