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
    const queue = await client.call('getQueue', {
      repo: await this.repo(flags.repo),
      targetBranch: flags.branch,
    });
    const { renderJson, renderRecord, renderRows } = await import('../../../cli/render.js');
    const { settingsRecord } = await import('../../../cli/queue.js');
    const { prColumns } = await import('../../../cli/present.js');
    const format = formatOf(flags);
    if (format === 'table' || format === 'markdown') {
      this.out(renderRecord(settingsRecord(queue), format, this.view(flags)));
      this.out(`\n${queue.enqueuedPullRequests.length} pull request(s) in the queue\n`);
      if (queue.enqueuedPullRequests.length)
        this.out(renderRows(queue.enqueuedPullRequests, prColumns, format, this.view(flags)));
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
