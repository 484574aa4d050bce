/**
 * The failing tests of a test run whose checks ran in a forge's own CI (GitHub, GitLab), for the
 * flake-aware verdict (engine/rules/flaky-verdict.ts). CI uploads JUnit for the test
 * commit (`railyard flaky upload --sha`, the Action's upload-tests operation); the server links
 * the uploads to the run by that SHA. Each failed check needs results:
 * - an upload whose `job` is the check's name (the Action sends GITHUB_JOB; `--job` sets it), or,
 *   when exactly one check failed, any upload whose job names no check of the commit (a job named
 *   after a check that passed is that check's, never the failed one's);
 * - while a failed check has none, the run waits for them, up to the queue's
 *   `flakyReportGraceSeconds` from the verdict, then counts as an ordinary failure;
 * - a failed check whose uploads name no failing test is an ordinary failure too (a build error).
 * Forge-independent: the same for every driver whose CI verdict carries no failing tests itself.
 */
import type { FailedTest, QueueConfig } from '../../engine/index.js';
import { changesTest } from '../../flaky/changed.js';
import type { FlakyService, RunFailingTest } from './service.js';

/**
 * The one port for the failing tests of a run, handed to the queue workers with the service: a
 * driver that runs checks itself stores their reports through `testRunResults` (and gets the
 * failing tests back); for a driver whose CI runs on the forge, `commitResults` and `onUpload`
 * give CI's uploads for the test commit.
 */
export type RunTestResults = Pick<FlakyService, 'commitResults' | 'onUpload' | 'testRunResults'>;

export type CommitResults = { jobs: (string | null)[]; failing: (RunFailingTest & { job: string | null })[] } | null;

/** What the uploads say of a failed run's checks: results missing for some failed check, or the failing tests (none: an ordinary failure). */
export function judgeReports(
  checks: Readonly<Record<string, 'success' | 'failure' | 'pending'>>,
  results: CommitResults,
): { state: 'missing' } | { state: 'done'; failing?: RunFailingTest[] } {
  const failed = Object.keys(checks).filter((name) => checks[name] === 'failure');
  if (failed.length === 0) return { state: 'done' };
  if (!results) return { state: 'missing' };
  const named = new Set(Object.keys(checks));
  const failing = new Map<string, RunFailingTest>();
  for (const check of failed) {
    const own = results.jobs.includes(check);
    const belongs = (job: string | null) => (own ? job === check : failed.length === 1 && (job === null || !named.has(job)));
    if (!results.jobs.some(belongs)) return { state: 'missing' };
    const tests = results.failing.filter((t) => belongs(t.job));
    if (tests.length === 0) return { state: 'done' };
    for (const { job: _job, ...t } of tests) failing.set(t.id, t);
  }
  return { state: 'done', failing: [...failing.values()] };
}

/** Whether a queue's verdicts read failing tests at all (otherwise nothing waits). */
export const readsFailingTests = (config: QueueConfig): boolean => config.flakyPolicy !== 'off' || config.flakyRetries > 0;

/**
 * Waits (up to `graceMs`, woken by every upload of the commit) until the uploads for `sha` cover
 * the failed checks; the failing tests with `changedByPr` from `changed`, or undefined for an
 * ordinary failure (no results in time, or a failed check without failing tests).
 */
export async function awaitFailingTests(
  flaky: Pick<FlakyService, 'commitResults' | 'onUpload'>,
  input: {
    org: string;
    repo: Parameters<FlakyService['commitResults']>[1];
    sha: string;
    checks: Readonly<Record<string, 'success' | 'failure' | 'pending'>>;
    graceMs: number;
    signal: AbortSignal;
    changed: () => Promise<readonly string[] | null>;
  },
): Promise<FailedTest[] | undefined> {
  const sha = input.sha.toLowerCase();
  const deadline = Date.now() + input.graceMs;
  let wake: (() => void) | null = null;
  // An upload that arrives while the results are being read is not missed: the next wait returns at once.
  let uploaded = false;
  const stop = flaky.onUpload((org, commit) => {
    if (org !== input.org || commit !== sha) return;
    uploaded = true;
    wake?.();
  });
  try {
    for (;;) {
      uploaded = false;
      const judged = judgeReports(input.checks, await flaky.commitResults(input.org, input.repo, sha));
      if (judged.state === 'done') {
        if (!judged.failing?.length) return undefined;
        const changed = await input.changed().catch(() => null);
        return judged.failing.map((t) => ({ name: t.name, quarantined: t.quarantined, flaky: t.flaky, changedByPr: changesTest(changed, t) }));
      }
      const left = deadline - Date.now();
      if (left <= 0 || input.signal.aborted) return undefined;
      if (uploaded) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.min(left, 5_000));
        function done() {
          clearTimeout(timer);
          input.signal.removeEventListener('abort', done);
          wake = null;
          resolve();
        }
        wake = done;
        input.signal.addEventListener('abort', done, { once: true });
      });
    }
  } finally {
    stop();
  }
}
