/** `railyard mq queue get`: show a merge queue: its settings and enqueued pull requests. */
import { BaseCommand, formatFlag, formatOf, queueFlags } from '../../../cli/base-command.js';

export default class QueueGet extends BaseCommand {
  static override summary = 'Show a merge queue: its settings and enqueued pull requests';
  static override examples = [
    '<%= config.bin %> mq queue get --repo acme/web',
    '<%= config.bin %> mq queue get --branch release --json',
  ];
  static override flags = { ...queueFlags, ...formatFlag };

  async run() {
    const { flags } = await this.parse(QueueGet);
    const client = await this.client(flags);
    const key = { repo: await this.repo(flags.repo), targetBranch: flags.branch };
    const queue = await client.call('getQueue', key);
    const { renderJson, renderRecord, renderRows } = await import('../../../cli/render.js');
    const { settingsRecord } = await import('../../../cli/queue.js');
    const { prColumns } = await import('../../../cli/present.js');
    const format = formatOf(flags);
    if (format === 'table' || format === 'markdown') {
      // The queue holds the admitted PRs; the ones waiting outside it are listed with what holds them.
      const { notReadyPrs } = await import('../../../watch/not-ready.js');
      const waiting = await notReadyPrs({
        list: () => client.call('listPullRequests', { ...key, state: 'not_ready', take: 100 }),
        get: (n) => client.call('getSubmittedPullRequest', { ...key, pr: { number: n } }),
      });
      this.out(renderRecord(settingsRecord(queue), format, this.view(flags)));
      this.out(`\n${queue.enqueuedPullRequests.length} pull request(s) in the queue\n`);
      if (queue.enqueuedPullRequests.length)
        this.out(renderRows(queue.enqueuedPullRequests, prColumns, format, this.view(flags)));
      if (waiting.prs.length) {
        const more = waiting.more ? ` (and ${waiting.more} more: railyard mq list --state not_ready)` : '';
        this.out(`\n${waiting.prs.length} waiting outside it (not_ready)${more}\n`);
        this.out(
          renderRows(
            waiting.prs,
            [
              { header: 'PR', get: (p) => `#${p.prNumber}` },
              { header: 'Waiting for', get: (p) => p.why, shrink: true },
              { header: 'Title', get: (p) => p.prTitle, shrink: true },
              { header: 'Author', get: (p) => p.prAuthor },
            ],
            format,
            this.view(flags),
          ),
        );
      }
    } else {
      this.out(
        format === 'json'
          ? renderJson(queue)
          : renderRows(queue.enqueuedPullRequests, prColumns, format, this.view(flags)),
      );
    }
    return queue;
  }
}
