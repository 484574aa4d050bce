/**
 * Which uploads count as a failed check's results (src/server/flaky/run-reports.ts): an upload
 * named after the check, or with a single failed check, one named after no check; a failed
 * check without results is "missing" (the run waits), one whose results name no failing test is
 * an ordinary failure.
 */
import { describe, expect, it } from 'vitest';
import { judgeReports, type CommitResults } from '../../src/server/flaky/run-reports.js';

const test = (id: string, job: string | null) => ({ id, name: id, file: `tests/${id}.ts`, classname: null, quarantined: true, flaky: true, job });
const results = (jobs: (string | null)[], failing: ReturnType<typeof test>[]): CommitResults => ({ jobs, failing });

describe('judgeReports', () => {
  it('waits while nothing was uploaded, then names the failing tests of an upload without a job when one check failed', () => {
    const checks = { build: 'success', test: 'failure' } as const;
    expect(judgeReports(checks, null)).toEqual({ state: 'missing' });
    const judged = judgeReports(checks, results([null], [test('a', null)]));
    expect(judged).toMatchObject({ state: 'done', failing: [{ id: 'a' }] });
  });

  it("never takes a passing check's upload for a failed check's results (a build failure is not ignored)", () => {
    const checks = { build: 'failure', test: 'success' } as const;
    expect(judgeReports(checks, results(['test'], [test('a', 'test')]))).toEqual({ state: 'missing' });
  });

  it('with several failed checks, each needs an upload named after it; one without failing tests is an ordinary failure', () => {
    const checks = { unit: 'failure', e2e: 'failure' } as const;
    expect(judgeReports(checks, results([null], [test('a', null)]))).toEqual({ state: 'missing' });
    expect(judgeReports(checks, results(['unit'], [test('a', 'unit')]))).toEqual({ state: 'missing' });
    expect(judgeReports(checks, results(['unit', 'e2e'], [test('a', 'unit'), test('b', 'e2e')]))).toMatchObject({
      state: 'done',
      failing: [{ id: 'a' }, { id: 'b' }],
    });
    expect(judgeReports(checks, results(['unit', 'e2e'], [test('a', 'unit')]))).toEqual({ state: 'done' });
  });
});
