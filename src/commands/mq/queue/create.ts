/** `railyard mq queue create`: create a merge queue for a branch. */
import { Flags } from '@oclif/core';
import { BaseCommand, queueFlags } from '../../../cli/base-command.js';

export default class QueueCreate extends BaseCommand {
  static override summary = 'Create a merge queue for a branch';
  static override description = 'Other settings (batching, timeouts, merge method, ...) are set afterwards with `mq queue update`.';
  static override examples = [
    '<%= config.bin %> mq queue create --repo acme/web',
    '<%= config.bin %> mq queue create --repo acme/web --branch release --mode parallel --concurrency 5',
  ];
  static override flags = {
    ...queueFlags,
    mode: Flags.string({ description: 'queue mode', options: ['single', 'parallel'] }),
    concurrency: Flags.integer({ description: 'test runs at once (per lane in parallel mode)', min: 1 }),
  };

  async run() {
    const { flags } = await this.parse(QueueCreate);
    const repo = await this.repo(flags.repo);
    const client = await this.client(flags);
    await client.call('createQueue', {
      repo,
      targetBranch: flags.branch,
      ...(flags.mode ? { mode: flags.mode as 'single' | 'parallel' } : {}),
      ...(flags.concurrency ? { concurrency: flags.concurrency } : {}),
    });
    this.out(`Created the ${flags.branch} queue of ${repo.host}/${repo.owner}/${repo.name}\n`);
    return {};
  }
}
