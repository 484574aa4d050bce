/** `railyard mq metrics`: print the Prometheus metrics of the merge queues. */
import { BaseCommand, repoFlag } from '../../cli/base-command.js';
import { parseRepo } from '../../cli/config.js';
import { printable } from '../../cli/escape.js';

export default class Metrics extends BaseCommand {
  static override summary = 'Print the Prometheus metrics of the merge queues';
  static override examples = [
    '<%= config.bin %> mq metrics',
    '<%= config.bin %> mq metrics --repo github.com/acme/web | grep mq_depth_current',
  ];
  static override flags = {
    repo: repoFlag('every repository', 'only this repository'),
  };

  async run() {
    const { flags } = await this.parse(Metrics);
    const client = await this.client(flags);
    const query = flags.repo
      ? (() => {
          const repo = parseRepo(flags.repo as string);
          return { repo: `${repo.owner}/${repo.name}`, repoHost: repo.host };
        })()
      : {};
    const text = await client.call('getMergeQueueMetrics', query);
    const lines = text.endsWith('\n') ? text : `${text}\n`;
    // Label values are the server's text (a queue's owner and name): on a terminal their control characters show escaped; piped, the exposition is exact.
    this.out(process.stdout.isTTY ? printable(lines, '\n') : lines);
    return { metrics: text };
  }
}
