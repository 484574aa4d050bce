/** `railyard mq history`: show every state change of a pull request in a merge queue: when, why, and which test run. */
import { Args } from '@oclif/core';
import { BaseCommand, formatFlag, formatOf, prNumber, queueFlags } from '../../cli/base-command.js';
import type { PullRequestTransition } from '../../contract/index.js';

export default class History extends BaseCommand {
  static override summary =
    'Show every state change of a pull request in a merge queue: when, why, and which test run';
  static override description =
    'One row per change, oldest first, over every submission of the PR to the queue (a resubmission starts a new entry).';
  static override examples = [
    '<%= config.bin %> mq history 123 --repo acme/web',
    '<%= config.bin %> mq history 123 --format csv > pr-123.csv',
    '<%= config.bin %> mq history 123 --json',
  ];
  static override args = { pr: Args.string({ description: 'pull request number', required: true }) };
  static override flags = { ...queueFlags, ...formatFlag };

  async run() {
    const { args, flags } = await this.parse(History);
    const number = prNumber(args.pr);
    const repo = await this.repo(flags.repo);
    const client = await this.client(flags);
    const history = await client.call('getPullRequestHistory', {
      repo,
      targetBranch: flags.branch,
      pr: { number },
    });
    const entries = [...new Set(history.transitions.map((t) => t.queueEntryId))];
    const { renderJson, renderRows } = await import('../../cli/render.js');
    const format = formatOf(flags);
    if (format === 'json') {
      this.out(renderJson(history));
      return history;
    }
    this.out(
      renderRows<PullRequestTransition>(
        history.transitions,
        [
          { header: 'Time', get: (t) => t.at, time: true },
          { header: 'Submission', get: (t) => entries.indexOf(t.queueEntryId) + 1, drop: 1 },
          { header: 'From', get: (t) => t.previousState ?? '', drop: 2 },
          { header: 'State', get: (t) => t.state },
          // Cut first on a narrow terminal: the test run id stays whole, to copy into `mq testing-details`.
          { header: 'Reason', get: (t) => t.reason ?? '', shrink: 'first' },
          { header: 'Test run', get: (t) => t.testRunId ?? '' },
        ],
        format,
        this.view(flags),
      ),
    );
    return history;
  }
}
