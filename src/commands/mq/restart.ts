/** `railyard mq restart`: restart the tests of a pull request in a merge queue (it keeps its place). */
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
    // Restart re-tests a PR that is in the queue; for one that left it, say what to do instead.
    const before = await client.call('getSubmittedPullRequest', key);
    const n = key.pr.number;
    const where = `${flags.repo ? ` --repo ${flags.repo}` : ''}${flags.branch !== 'main' ? ` --branch ${flags.branch}` : ''}`;
    if (before.state === 'merged') throw new Error(`#${n} is merged: there is nothing to restart`);
    if (before.state === 'failed' || before.state === 'cancelled') {
      throw new Error(
        `#${n} is ${before.state}${before.stateReason ? ` (${before.stateReason})` : ''}: restart re-tests a PR in the queue; resubmit it with \`railyard mq submit ${n}${where}\` (see why with \`railyard mq logs ${n}${where}\`)`,
      );
    }
    await client.call('restartTestsOnPullRequest', key);
    this.out(`Restarted the tests of #${key.pr.number} in the ${flags.branch} queue\n`);
    return client.call('getSubmittedPullRequest', key);
  }
}
