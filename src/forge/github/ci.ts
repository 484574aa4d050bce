/**
 * The GitHub driver's CI role: a test commit's verdict is read from GitHub (check runs and commit
 * statuses of its SHA, through ETag-cached reads; checks.ts decides; a poll round's look skips the
 * statuses while a counted check run still runs). The waiting, the
 * no-checks grace period and the timeout that names missing checks are the remote forges' shared
 * CI role (../shared/ci-wait.ts).
 */
import { CiWaiter, type ChecksRead, type Waiting } from '../shared/ci-wait.js';
import { ciVerdict, type CheckRunLike, type StatusLike } from './checks.js';
import type { GitHubRuntime } from './runtime.js';

export class GitHubCi extends CiWaiter {
  /** The commit statuses last read of a waiting run (shown with its checks while a look skips them). */
  private readonly statuses = new WeakMap<Waiting, StatusLike[]>();

  constructor(private readonly gh: GitHubRuntime) {
    super(gh);
  }

  /**
   * Check runs and commit statuses: at once when a webhook said something finished (or for the
   * last look before the timeout); in a poll round's look the statuses only once no counted check
   * run is still running — while one is, no status can make the verdict anything but pending.
   */
  protected async read(w: Waiting, all: boolean): Promise<ChecksRead> {
    const { owner, name } = w.queue.repo;
    const client = this.gh.forge.client;
    const checkRuns = () =>
      client.getCached<{ check_runs: CheckRunLike[] }>(
        owner,
        name,
        'GET /repos/{owner}/{repo}/commits/{ref}/check-runs',
        { ref: w.sha, per_page: 100 },
      );
    const statuses = async () =>
      (
        await client.getCached<{ statuses: StatusLike[] }>(
          owner,
          name,
          'GET /repos/{owner}/{repo}/commits/{ref}/status',
          { ref: w.sha, per_page: 100 },
        )
      ).statuses;
    const required = w.run.requiredStatuses;
    if (all) {
      const [runs, combined] = await Promise.all([checkRuns(), statuses()]);
      this.statuses.set(w, combined);
      return ciVerdict(runs.check_runs, combined, required);
    }
    const runs = (await checkRuns()).check_runs;
    if (countedRunning(runs, required)) {
      const verdict = ciVerdict(runs, this.statuses.get(w) ?? [], required);
      return { ...verdict, state: 'pending' };
    }
    const combined = await statuses();
    this.statuses.set(w, combined);
    return ciVerdict(runs, combined, required);
  }
}

/** Whether a check run that counts (every one, or a required name) is still queued or running (its latest run per name). */
export function countedRunning(runs: readonly CheckRunLike[], required: readonly string[] | null): boolean {
  const { checks } = ciVerdict(runs, [], null);
  return Object.entries(checks).some(
    ([n, o]) => o === 'pending' && (required === null || required.includes(n)),
  );
}
