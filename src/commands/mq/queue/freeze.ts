/** `railyard mq queue freeze`: hold a merge queue's landings until a time; testing goes on. */
import { Flags } from '@oclif/core';
import { BaseCommand, queueFlags } from '../../../cli/base-command.js';

export default class QueueFreeze extends BaseCommand {
  static override summary =
    'Freeze a merge queue until a time: PRs are still tested, but only urgent ones land';
  static override description =
    'Adds a freeze window from now to --until to the queue (its `freezes`). While a freeze holds, pull requests are tested as usual and wait once they pass; only PRs of priority value at most the queue\'s freezeBypassPriority (default 0, "urgent") land. `railyard mq queue unfreeze` lifts it early.';
  static override examples = [
    '<%= config.bin %> mq queue freeze --until 2026-12-24T18:00:00Z --reason "release 4.2"',
    '<%= config.bin %> mq queue freeze --until 2h --reason incident --json',
  ];
  static override flags = {
    ...queueFlags,
    until: Flags.string({
      description:
        'end of the freeze: an ISO 8601 time with a zone (2026-12-24T18:00:00Z, ...T19:00+01:00) or a duration from now (90m, 2h, 3d)',
      required: true,
    }),
    reason: Flags.string({ description: 'why, shown on the dashboard and by `mq queue get`' }),
  };

  async run() {
    const { flags } = await this.parse(QueueFreeze);
    const { MAX_FREEZE_MS, withFreeze } = await import('../../../cli/freeze.js');
    const { parseUntil } = await import('../../../cli/until.js');
    const now = Date.now();
    const until = parseUntil(flags.until, '--until', now, { ms: MAX_FREEZE_MS, words: 'a year' });
    const client = await this.client(flags);
    const repo = await this.repo(flags.repo);
    const before = await client.call('getQueue', { repo, targetBranch: flags.branch });
    const freezes = withFreeze(before.freezes ?? [], now, until, flags.reason);
    const queue = await client.call('updateQueue', { repo, targetBranch: flags.branch, freezes });
    const frozen = queue.frozen;
    const why = frozen?.reason ? ` (${frozen.reason})` : '';
    this.out(
      `The ${flags.branch} queue is frozen until ${frozen?.until ?? new Date(until).toISOString()}${why}: pull requests are tested, and only those of priority ${queue.freezeBypassPriority} or lower land\n`,
    );
    return queue;
  }
}
