import { Args } from '@oclif/core';
import { BaseCommand, prNumber, queueFlags } from '../../cli/base-command.js';

export default class Restart extends BaseCommand {
  static override summary = 'Restart the tests of a pull request in a merge queue (it keeps its place)';
  static override examples = ['<%= config.bin %> mq restart 123 --repo acme/web', '<%= config.bin %> mq restart 123 --branch release --json'];
  static override args = { pr: Args.string({ description: 'pull request number', required: true }) };
  static override flags = { ...queueFlags };

  async run() {
    const { args, flags } = await this.parse(Restart);
    const key = { repo: await this.repo(flags.repo), targetBranch: flags.branch, pr: { number: prNumber(args.pr) } };
    const client = await this.client(flags);
    await client.call('restartTestsOnPullRequest', key);
    this.out(`Restarted the tests of #${key.pr.number} in the ${flags.branch} queue\n`);
    return client.call('getSubmittedPullRequest', key);
  }
}
