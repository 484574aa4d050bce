/** `railyard mq list`: list the pull requests of a merge queue. */
import { Flags } from '@oclif/core';
import { BaseCommand, formatFlag, formatOf, queueFlags } from '../../cli/base-command.js';
import { parseTime } from '../../cli/config.js';
import { isTerminalState, PULL_REQUEST_STATES } from '../../contract/constants.js';
import type { QueueListItem } from '../../contract/index.js';

export default class List extends BaseCommand {
  static override summary = 'List the pull requests of a merge queue';
  static override description =
    'In queue order, as the engine sees it: the line first (PRs being tested in the order their runs started, then the ' +
    'waiting PRs by priority, urgent first, then by submission), then the PRs not ready yet, then those that left the ' +
    'queue in the order they left. --since/--until select PRs that concluded (merged, failed, cancelled) in that window. ' +
    'A PR submitted more than once is listed once, as its current submission (else its latest); --all-submissions ' +
    'lists every submission.';
  static override examples = [
    '<%= config.bin %> mq list --repo acme/web',
    '<%= config.bin %> mq list --state testing --format csv > testing.csv',
    '<%= config.bin %> mq list --since 2026-11-01T00:00:00Z --state merged --json',
    '<%= config.bin %> mq list --since 24h --state failed',
  ];
  static override flags = {
    ...queueFlags,
    ...formatFlag,
    state: Flags.string({
      char: 's',
      description: 'only PRs in this state',
      options: [...PULL_REQUEST_STATES],
    }),
    since: Flags.string({
      description: 'concluded at or after (ISO 8601, or a duration back from now: 24h, 7d)',
    }),
    until: Flags.string({ description: 'concluded at or before (ISO 8601, or a duration back from now)' }),
    limit: Flags.integer({ description: 'stop after this many PRs', min: 1 }),
    'all-submissions': Flags.boolean({
      description: 'one row per submission of a PR, not only its current one',
    }),
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
      const take = Math.min(
        100,
        flags.limit ? Math.max(1, flags.limit - once(all, flags['all-submissions']).length) : 100,
      );
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
    } while (cursor && (!flags.limit || once(all, flags['all-submissions']).length < flags.limit));
    const shown = once(all, flags['all-submissions']).slice(0, flags.limit);
    const { renderJson, renderRows } = await import('../../cli/render.js');
    const { prColumns } = await import('../../cli/present.js');
    const result = { pullRequests: shown };
    const format = formatOf(flags);
    this.out(format === 'json' ? renderJson(result) : renderRows(shown, prColumns, format, this.view(flags)));
    return result;
  }
}

/**
 * Each PR once, in the place of the submission kept: the one still in the queue, else the one
 * that changed state last (all of them with `all`).
 */
function once(rows: QueueListItem[], all: boolean): QueueListItem[] {
  if (all) return rows;
  const kept = new Map<number, QueueListItem>();
  for (const pr of rows) {
    const held = kept.get(pr.prNumber);
    if (!held || better(pr, held)) kept.set(pr.prNumber, pr);
  }
  return rows.filter((pr) => kept.get(pr.prNumber) === pr);
}

function better(a: QueueListItem, b: QueueListItem): boolean {
  const live = (p: QueueListItem) => !isTerminalState(p.state);
  if (live(a) !== live(b)) return live(a);
  return Date.parse(a.stateChangedAt ?? '') > Date.parse(b.stateChangedAt ?? '');
}
