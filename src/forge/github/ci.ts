/**
 * The GitHub driver's CI role: a test commit's verdict is read from GitHub (check runs and commit
 * statuses of its SHA, through ETag-cached reads; checks.ts decides). The waiting, the
 * no-checks grace period and the timeout that names missing checks are the remote forges' shared
 * CI role (../shared/ci-wait.ts).
 */
import { CiWaiter, type ChecksRead, type Waiting } from '../shared/ci-wait.js';
import { ciVerdict, type CheckRunLike, type StatusLike } from './checks.js';
import type { GitHubRuntime } from './runtime.js';

export class GitHubCi extends CiWaiter {
  constructor(private readonly gh: GitHubRuntime) {
    super(gh);
  }

  protected async read(w: Waiting): Promise<ChecksRead> {
    const { owner, name } = w.queue.repo;
    const client = this.gh.forge.client;
    const [runs, combined] = await Promise.all([
      client.getCached<{ check_runs: CheckRunLike[] }>(owner, name, 'GET /repos/{owner}/{repo}/commits/{ref}/check-runs', { ref: w.sha, per_page: 100 }),
      client.getCached<{ statuses: StatusLike[] }>(owner, name, 'GET /repos/{owner}/{repo}/commits/{ref}/status', { ref: w.sha, per_page: 100 }),
    ]);
    return ciVerdict(runs.check_runs, combined.statuses, w.run.requiredStatuses);
  }
}
