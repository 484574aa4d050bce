/** `railyard mq queue unfreeze`: lift a merge queue's freeze now; passed PRs land. */
import { BaseCommand, queueFlags } from '../../../cli/base-command.js';

export default class QueueUnfreeze extends BaseCommand {
  static override summary = 'Lift the freeze of a merge queue now: the PRs that passed land';
  static override description =
    'Removes the freeze windows that hold the queue now (those of `mq queue freeze` and other absolute windows); windows still to come stay, and so do recurring (cron) ones: change those with `mq queue update --freezes`.';
  static override examples = [
    '<%= config.bin %> mq queue unfreeze --repo acme/web',
    '<%= config.bin %> mq queue unfreeze --json',
  ];
  static override flags = { ...queueFlags };

  async run() {
    const { flags } = await this.parse(QueueUnfreeze);
    const { withoutFreeze } = await import('../../../cli/freeze.js');
    const client = await this.client(flags);
    const repo = await this.repo(flags.repo);
    const before = await client.call('getQueue', { repo, targetBranch: flags.branch });
    const windows = before.freezes ?? [];
    const kept = withoutFreeze(windows, Date.now());
    const queue = await client.call('updateQueue', { repo, targetBranch: flags.branch, freezes: kept });
    if (queue.frozen) {
      this.notice(
        `The ${flags.branch} queue is still frozen until ${queue.frozen.until} by a recurring window: change its freezes with \`railyard mq queue update --freezes\``,
      );
    } else if (!before.frozen) this.out(`The ${flags.branch} queue was not frozen\n`);
    else this.out(`The ${flags.branch} queue is no longer frozen: the pull requests that passed land\n`);
    return queue;
  }
}
