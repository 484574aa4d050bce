// The GitLab forge's verdict on a test commit from its commit statuses: skipped jobs beside others
// pass, a pipeline of skipped jobs only passes where the project allows it, a required manual job
// fails at once naming it, an optional one is not waited for.
import { describe, expect, it } from 'vitest';
import { ciVerdictOf, type GitLabStatus } from '../../src/forge/gitlab/checks.js';

let id = 0;
const job = (name: string, status: string, allow_failure = false): GitLabStatus => ({
  id: ++id,
  name,
  status,
  allow_failure,
});
const allow = (answer: boolean) => {
  const asked: boolean[] = [];
  return { asked, allowSkipped: () => (asked.push(true), Promise.resolve(answer)) };
};

describe('GitLab CI verdict', () => {
  it('a skipped job beside a passed one passes, without asking the project', async () => {
    const a = allow(false);
    expect((await ciVerdictOf([job('test', 'success'), job('docs', 'skipped')], null, a)).state).toBe(
      'passed',
    );
    expect(a.asked).toEqual([]);
  });

  it('a pipeline of skipped jobs only fails unless the project allows merging on a skipped pipeline', async () => {
    const no = await ciVerdictOf([job('test', 'skipped'), job('lint', 'skipped')], null, allow(false));
    expect(no.state).toBe('failed');
    expect(no.detail).toMatch(/skipped.*test, lint.*allow_merge_on_skipped_pipeline/);
    expect((await ciVerdictOf([job('test', 'skipped')], null, allow(true))).state).toBe('passed');
  });

  it('a required manual job fails at once, named; a manual job allowed to fail is not waited for', async () => {
    const held = await ciVerdictOf([job('test', 'running'), job('deploy', 'manual')], null);
    expect(held).toMatchObject({ state: 'failed', checks: { deploy: 'failure', test: 'pending' } });
    expect(held.detail).toMatch(/manual job deploy/);
    expect((await ciVerdictOf([job('test', 'success'), job('deploy', 'manual', true)], null)).state).toBe(
      'passed',
    );
    // Not among the required statuses: it does not count.
    expect((await ciVerdictOf([job('test', 'success'), job('deploy', 'manual')], ['test'])).state).toBe(
      'passed',
    );
  });
});
