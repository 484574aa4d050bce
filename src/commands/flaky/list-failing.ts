import { Flags } from '@oclif/core';
import { BaseCommand, formatFlag, formatOf, repoFlag } from '../../cli/base-command.js';
import { ConfigError, parseDuration } from '../../cli/config.js';
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
    '<%= config.bin %> flaky list-failing --start 2026-11-01T00:00:00Z --end 2026-11-20T00:00:00Z --format csv --output failing.csv',
  ];
  static override flags = {
    repo: repoFlag(),
    since: Flags.string({ description: 'window ending now, e.g. 24h or 7d', exclusive: ['start'] }),
    start: Flags.string({ description: 'window start (ISO 8601, inclusive)', dependsOn: ['end'] }),
    end: Flags.string({ description: 'window end (ISO 8601, exclusive)', dependsOn: ['start'] }),
    ...flakyFlags,
    ...formatFlag,
  };

  async run() {
    const { flags } = await this.parse(ListFailing);
    let start: number;
    let end: number;
    if (flags.start && flags.end) {
      start = Date.parse(flags.start);
      end = Date.parse(flags.end);
      if (Number.isNaN(start)) throw new ConfigError(`--start: expected an ISO 8601 date-time, got "${flags.start}"`);
      if (Number.isNaN(end)) throw new ConfigError(`--end: expected an ISO 8601 date-time, got "${flags.end}"`);
      if (end <= start) throw new ConfigError('--end: must be after --start');
    } else {
      end = Date.now();
      start = end - parseDuration(flags.since ?? '24h', '--since');
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
    const { renderRows } = await import('../../cli/render.js');
    await emit(renderRows(tests, failingColumns, formatOf(flags), !flags.output && this.color()), flags.output, this.jsonEnabled());
    return { tests };
  }
}
