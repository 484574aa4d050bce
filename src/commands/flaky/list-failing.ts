/** `railyard flaky list-failing`: list the distinct tests that failed in a time window. */
import { Flags } from '@oclif/core';
import { BaseCommand, formatFlag, formatOf, repoFlag } from '../../cli/base-command.js';
import { ConfigError, parseTime } from '../../cli/config.js';
import { flakyFlags } from '../../cli/flaky.js';
import type { DetailedTestCase } from '../../contract/index.js';

const WEEK = 7 * 24 * 60 * 60 * 1000;

/** [start, end) cut into windows of at most 7 days, the API's limit. */
export function splitWindow(start: number, end: number): Array<[number, number]> {
  const windows: Array<[number, number]> = [];
  for (let from = start; from < end; from += WEEK) windows.push([from, Math.min(from + WEEK, end)]);
  return windows;
}

export default class ListFailing extends BaseCommand {
  static override summary = 'List the distinct tests that failed in a time window';
  static override description =
    'Windows longer than 7 days are split into several calls and merged (a test that failed in several windows appears once).';
  static override examples = [
    '<%= config.bin %> flaky list-failing --org acme --repo acme/web --since 24h',
    '<%= config.bin %> flaky list-failing --start 2026-11-01T00:00:00Z --end 2026-11-20T00:00:00Z --output failing.csv',
    '<%= config.bin %> flaky list-failing --start 14d --end 7d --output last-week.json',
  ];
  static override flags = {
    repo: repoFlag(),
    since: Flags.string({ description: 'window from this time to now: a duration back from now (24h, 7d) or ISO 8601', exclusive: ['start'] }),
    start: Flags.string({ description: 'window start, inclusive (ISO 8601, or a duration back from now)', dependsOn: ['end'] }),
    end: Flags.string({ description: 'window end, exclusive (ISO 8601, or a duration back from now)', dependsOn: ['start'] }),
    ...flakyFlags,
    ...formatFlag,
  };

  async run() {
    const { flags } = await this.parse(ListFailing);
    const format = formatOf(flags);
    let start: number;
    let end: number;
    const now = Date.now();
    if (flags.start && flags.end) {
      start = Date.parse(parseTime(flags.start, '--start', now));
      end = Date.parse(parseTime(flags.end, '--end', now));
      if (end <= start) throw new ConfigError('--end: must be after --start');
    } else {
      end = now;
      start = Date.parse(parseTime(flags.since ?? '24h', '--since', now));
      if (start >= end) throw new ConfigError('--since: must be in the past');
    }
    const { resolveOrg, collectPages, emit, failingColumns } = await import('../../cli/flaky.js');
    const org = await resolveOrg(flags.org, await this.config_());
    const repo = await this.repo(flags.repo);
    const client = await this.client(flags);
    const byId = new Map<string, DetailedTestCase>();
    for (const [from, to] of splitWindow(start, end)) {
      const tests = await collectPages<DetailedTestCase>(async function* (onPage) {
        const body = { repo, org_url_slug: org, start_time: new Date(from).toISOString(), end_time: new Date(to).toISOString() };
        for await (const page of client.pages('listFailingTests', body, { onPage })) yield page.tests;
      }, `failing tests ${new Date(from).toISOString().slice(0, 10)}`);
      // Later windows carry fresher statistics.
      for (const test of tests) byId.set(test.id, test);
    }
    const tests = [...byId.values()];
    const { renderJson, renderRows } = await import('../../cli/render.js');
    const result = { tests };
    const text = format === 'json' ? renderJson(result) : renderRows(tests, failingColumns, format, this.view(flags));
    await emit(text, flags.output, this.jsonEnabled());
    return result;
  }
}
