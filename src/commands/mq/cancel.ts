/** `railyard mq cancel`: remove a pull request from a merge queue. */
import { Args } from '@oclif/core';
import { BaseCommand, prNumber, queueFlags } from '../../cli/base-command.js';

export default class Cancel extends BaseCommand {
  static override summary = 'Remove a pull request from a merge queue';
  static override description =
    'A PR that already left the queue (merged, failed or cancelled) has nothing to cancel: a notice on stderr, exit 0.';
  static override examples = ['<%= config.bin %> mq cancel 123 --repo acme/web', '<%= config.bin %> mq cancel 123 --branch release --json'];
  static override args = { pr: Args.string({ description: 'pull request number', required: true }) };
  static override flags = { ...queueFlags };

  async run() {
    const { args, flags } = await this.parse(Cancel);
    const key = { repo: await this.repo(flags.repo), targetBranch: flags.branch, pr: { number: prNumber(args.pr) } };
    const client = await this.client(flags);
    // Nothing to cancel once the PR left the queue: a notice and exit 0, as the Action's cancel.
    const before = await client.call('getSubmittedPullRequest', key);
    if (before.state === 'merged' || before.state === 'failed' || before.state === 'cancelled') {
      this.notice(`#${key.pr.number} is already ${before.state}${before.stateReason ? ` (${before.stateReason})` : ''}: nothing to cancel`);
      return before;
    }
    await client.call('cancelPullRequest', key);
    this.out(`Cancelled #${key.pr.number} in the ${flags.branch} queue\n`);
    return client.call('getSubmittedPullRequest', key);
  }
}
