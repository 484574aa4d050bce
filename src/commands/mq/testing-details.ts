/** `railyard mq testing-details`: show a merge queue test run: branch, SHA, statuses and tested pull requests. */
import { Args } from '@oclif/core';
import { BaseCommand, queueFlags } from '../../cli/base-command.js';

export default class TestingDetails extends BaseCommand {
  static override summary = 'Show a merge queue test run: branch, SHA, statuses and tested pull requests';
  static override examples = [
    '<%= config.bin %> mq testing-details 5df7c1e2-0a4b-4c55-9d1e-2f3a4b5c6d7e --repo acme/web',
    '<%= config.bin %> mq testing-details 5df7c1e2-0a4b-4c55-9d1e-2f3a4b5c6d7e --json',
  ];
  static override args = {
    testRunId: Args.string({
      description: 'test run id (the UUID at the end of the test branch)',
      required: true,
    }),
  };
  static override flags = { ...queueFlags };

  async run() {
    const { args, flags } = await this.parse(TestingDetails);
    const client = await this.client(flags);
    const details = await client.call('getMergeQueueTestingDetails', {
      repo: await this.repo(flags.repo),
      targetBranch: flags.branch,
      testRunId: args.testRunId,
    });
    const { renderRecord, stateText, whenText } = await import('../../cli/render.js');
    this.out(
      renderRecord(
        {
          status: details.status,
          testBranch: details.testBranch,
          sha: details.testBranchSha,
          createdAt: whenText(details.createdAt),
          requiredStatuses: details.requiredStatuses,
          statuses: details.statusChecks.map((s) => `${s.context}: ${stateText(s.state ?? 'PENDING')}`),
          testedPullRequests: details.testedPullRequests.map((p) => `#${p.prNumber} ${p.title}`),
          impactedTargets: details.impactedTargets,
        },
        'table',
        this.view(),
      ),
    );
    return details;
  }
}
