/**
 * The GitLab driver's CI role: a test commit's verdict is read from GitLab, the commit statuses of
 * its SHA (`GET …/repository/commits/:sha/statuses`: the jobs of its pipelines and any external
 * status, latest per name; checks.ts decides, asking the project whether a skipped pipeline may
 * pass). Pipeline and Job hooks poke the runs waiting on that
 * commit; the waiting, the no-checks grace period and the timeout that names missing jobs are the
 * remote forges' shared CI role (../shared/ci-wait.ts).
 */
import { CiWaiter, type ChecksRead, type Waiting } from '../shared/ci-wait.js';
import { ciVerdictOf, type GitLabStatus } from './checks.js';
import { projectPath } from './repo.js';
import type { GitLabRuntime } from './runtime.js';

export class GitLabCi extends CiWaiter {
  constructor(private readonly gl: GitLabRuntime) {
    super(gl);
  }

  protected async read(w: Waiting): Promise<ChecksRead> {
    const statuses = (await this.gl.client.api.Commits.allStatuses(
      projectPath(w.queue.repo),
      w.sha,
    )) as unknown as GitLabStatus[];
    const verdict = await ciVerdictOf(statuses, w.run.requiredStatuses, {
      allowSkipped: async () => {
        const project = (await this.gl.client.api.Projects.show(projectPath(w.queue.repo))) as unknown as {
          allow_merge_on_skipped_pipeline?: boolean | null;
        };
        return project.allow_merge_on_skipped_pipeline === true;
      },
    });
    // A pipeline that never tested (skipped, or held by a manual job): its words go on the note.
    if (verdict.state === 'failed' && verdict.detail && !verdict.detail.startsWith('failed on GitLab'))
      this.gl.refused(w.run.id, `GitLab: ${verdict.detail}`);
    return verdict;
  }

  protected override noChecksDetail(w: Waiting): string {
    return `no pipeline job or status reported on ${w.sha.slice(0, 12)} within ${Math.round(this.rt.options.ciStartMs / 1000)} s`;
  }
}
