import { Flags } from '@oclif/core';
import { BaseCommand, formatFlag, formatOf, queueFlags } from '../../cli/base-command.js';
import { parseTime } from '../../cli/config.js';
import { PULL_REQUEST_STATES } from '../../contract/constants.js';
import type { QueueListItem } from '../../contract/index.js';


export default class List extends BaseCommand {
  static override summary = 'List the pull requests of a merge queue';
  static override description =
    'In queue order, as the engine sees it: the line first (PRs being tested in the order their runs started, then the ' +
    'waiting PRs by priority, urgent first, then by submission), then the PRs not ready yet, then those that left the ' +
    'queue in the order they left. --since/--until select PRs that concluded (merged, failed, cancelled) in that window.';
  static override examples = [
    '<%= config.bin %> mq list --repo acme/web',
    '<%= config.bin %> mq list --state testing --format csv > testing.csv',
    '<%= config.bin %> mq list --since 2026-11-01T00:00:00Z --state merged --json',
    '<%= config.bin %> mq list --since 24h --state failed',
  ];
  static override flags = {
    ...queueFlags,
    ...formatFlag,
    state: Flags.string({ char: 's', description: 'only PRs in this state', options: [...PULL_REQUEST_STATES] }),
    since: Flags.string({ description: 'concluded at or after (ISO 8601, or a duration back from now: 24h, 7d)' }),
    until: Flags.string({ description: 'concluded at or before (ISO 8601, or a duration back from now)' }),
    limit: Flags.integer({ description: 'stop after this many PRs', min: 1 }),
  };

  async run() {
    const { flags } = await this.parse(List);
    const since = flags.since ? parseTime(flags.since, '--since') : undefined;
    const until = flags.until ? parseTime(flags.until, '--until') : undefined;
    const repo = await this.repo(flags.repo);
    const client = await this.client(flags);
    const all: QueueListItem[] = [];
    const listed = new Set<string>();
    let cursor: string | undefined;
    do {
      const take = Math.min(100, flags.limit ? flags.limit - all.length : 100);
      const page = await client.call('listPullRequests', {
        repo,
        targetBranch: flags.branch,
        take,
        ...(flags.state ? { state: flags.state as QueueListItem['state'] & string } : {}),
        ...(since ? { since } : {}),
        ...(until ? { until } : {}),
        ...(cursor ? { cursor } : {}),
      });
      // The order is live: a PR that moved between two pages may come twice; keep its first place.
      for (const pr of page.pullRequests) {
        const id = pr.id ?? `${pr.prNumber}@${pr.enqueuedAt ?? ''}`;
        if (listed.has(id)) continue;
        listed.add(id);
        all.push(pr);
      }
      cursor = page.nextCursor;
    } while (cursor && (!flags.limit || all.length < flags.limit));
    const { renderJson, renderRows } = await import('../../cli/render.js');
    const { prColumns } = await import('../../cli/present.js');
    const result = { pullRequests: all };
    const format = formatOf(flags);
    this.out(format === 'json' ? renderJson(result) : renderRows(all, prColumns, format, this.color()));
    return result;
  }
}
