/** One upload's outcome per test: retries inside an upload folded into pass, fail or flaky. */
import type { Repo } from '../contract/index.js';
import { testIds, type TestIdentity } from './identity.js';
import type { JUnitCase } from './junit.js';

/**
 * What one upload says about one test. Retries of a test inside one upload (retry children,
 * or duplicate <testcase> entries as gotestsum and pytest rerun plugins write) are folded into
 * one result: failing and then passing is `flaky` (pass-on-retry evidence), not a failure.
 */
export type ResultOutcome = 'passed' | 'failed' | 'skipped' | 'flaky';

export interface TestResult extends TestIdentity {
  id: string;
  outcome: ResultOutcome;
  /** Executions seen (1 unless retried). */
  attempts: number;
  durationMs: number;
  /** Epoch ms of the earliest timestamp in the reports, else null. */
  timestamp: number | null;
  /** The last failure, for failed and flaky results. */
  failure: { message: string | null; text: string | null } | null;
}

/**
 * A test's variant: the upload's (`--variant`) and the report's own (Playwright's project), joined
 * with "/" when both exist (`linux/firefox`), else whichever there is.
 */
export function joinVariant(upload: string, own: string | null): string {
  if (!own) return upload;
  return upload ? `${upload}/${own}` : own;
}

/** Folds parsed report cases into one result per test id. */
export function foldResults(
  org: string,
  repo: Repo,
  uploadVariant: string,
  cases: Iterable<JUnitCase>,
): TestResult[] {
  const idOf = testIds(org, repo);
  const byId = new Map<string, { result: TestResult; passes: number; fails: number }>();
  for (const c of cases) {
    const variant = joinVariant(uploadVariant, c.variant);
    const identity: TestIdentity = {
      file: c.file,
      classname: c.classname,
      parent: c.parent,
      name: c.name,
      variant,
    };
    const id = idOf(identity);
    let acc = byId.get(id);
    if (!acc) {
      const result: TestResult = {
        file: c.file,
        classname: c.classname,
        parent: c.parent,
        name: c.name,
        variant,
        id,
        outcome: 'skipped',
        attempts: 0,
        durationMs: 0,
        timestamp: null,
        failure: null,
      };
      acc = { result, passes: 0, fails: 0 };
      byId.set(id, acc);
    }
    const r = acc.result;
    r.durationMs += c.durationMs;
    if (c.timestamp !== null && (r.timestamp === null || c.timestamp < r.timestamp))
      r.timestamp = c.timestamp;
    for (const a of c.attempts) {
      if (a.outcome === 'passed') acc.passes++;
      else if (a.outcome === 'failed') {
        acc.fails++;
        r.failure = { message: a.message, text: a.text };
      }
    }
  }
  const out: TestResult[] = [];
  for (const { result, passes, fails } of byId.values()) {
    result.attempts = passes + fails || 1;
    result.outcome = fails && passes ? 'flaky' : fails ? 'failed' : passes ? 'passed' : 'skipped';
    out.push(result);
  }
  return out;
}

export interface ResultCounts {
  tests: number;
  passed: number;
  failed: number;
  skipped: number;
  flaky: number;
}

export function countResults(results: ReadonlyArray<Pick<TestResult, 'outcome'>>): ResultCounts {
  const counts: ResultCounts = { tests: results.length, passed: 0, failed: 0, skipped: 0, flaky: 0 };
  for (const r of results) counts[r.outcome]++;
  return counts;
}
