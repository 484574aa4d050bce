/** `railyard mq queue list`: list the merge queues of the token's organisation. */
import { BaseCommand, formatFlag, formatOf, repoFlag } from '../../../cli/base-command.js';
import { parseRepo } from '../../../cli/config.js';
import type { QueueSummary } from '../../../contract/index.js';

export default class QueueList extends BaseCommand {
  static override summary = "List the merge queues of the token's organisation";
  static override examples = [
    '<%= config.bin %> mq queue list',
    '<%= config.bin %> mq queue list --repo acme/web --json',
  ];
  static override flags = {
    repo: repoFlag(null, 'only the queues of this repository'),
    ...formatFlag,
  };

  async run() {
    const { flags } = await this.parse(QueueList);
    const client = await this.client(flags);
    const answer = await client.call('listQueues', flags.repo ? { repo: parseRepo(flags.repo) } : {});
    const { renderJson, renderRows } = await import('../../../cli/render.js');
    const { formatDuration } = await import('../../../watch/board.js');
    const format = formatOf(flags);
    this.out(
      format === 'json'
        ? renderJson(answer)
        : renderRows<QueueSummary>(
            answer.queues,
            [
              { header: 'Repository', get: (q) => `${q.repo.host}/${q.repo.owner}/${q.repo.name}` },
              { header: 'Branch', get: (q) => q.targetBranch },
              { header: 'State', get: (q) => q.state },
              // On a narrow terminal the settings and figures go (the highest `drop` first), never the repository.
              { header: 'Mode', get: (q) => q.mode, drop: 4 },
              { header: 'Concurrency', get: (q) => q.concurrency, drop: 3 },
              // As `mq queue get` counts: the admitted PRs are in the queue; the not-ready ones wait outside it.
              { header: 'In queue', get: (q) => q.depth },
              { header: 'Waiting (not_ready)', get: (q) => q.notReady, drop: 1 },
              { header: 'Testing', get: (q) => q.testing, drop: 2 },
              {
                header: 'Recent run (median)',
                get: (q) => (q.recentTestSeconds ? formatDuration(q.recentTestSeconds.p50 * 1000) : ''),
                drop: 5,
              },
            ],
            format,
            this.view(flags),
          ),
    );
    return answer;
  }
}
