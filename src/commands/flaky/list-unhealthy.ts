/** `railyard flaky list-unhealthy`: list flaky or broken tests. */
import { Flags } from '@oclif/core';
import { BaseCommand, formatFlag, formatOf, repoFlag } from '../../cli/base-command.js';
import { flakyFlags } from '../../cli/flaky.js';
import type { UnhealthyTestCase } from '../../contract/index.js';

export default class ListUnhealthy extends BaseCommand {
  static override summary = 'List flaky or broken tests';
  static override examples = [
    '<%= config.bin %> flaky list-unhealthy --org acme --repo acme/web',
    '<%= config.bin %> flaky list-unhealthy --status broken --format csv --output broken.csv',
  ];
  static override flags = {
    repo: repoFlag(),
    status: Flags.string({ description: 'which tests', options: ['flaky', 'broken'], default: 'flaky' }),
    ...flakyFlags,
    ...formatFlag,
  };

  async run() {
    const { flags } = await this.parse(ListUnhealthy);
    const format = formatOf(flags);
    const { resolveOrg, collectPages, emit, testColumns } = await import('../../cli/flaky.js');
    const org = await resolveOrg(flags.org, await this.config_());
    const repo = await this.repo(flags.repo);
    const client = await this.client(flags);
    const status = flags.status.toUpperCase() as 'FLAKY' | 'BROKEN';
    const tests = await collectPages<UnhealthyTestCase>(async function* (onPage) {
      for await (const page of client.pages('listUnhealthyTests', { repo, org_url_slug: org, status }, { onPage })) yield page.tests;
    }, `${flags.status} tests`);
    const { renderJson, renderRows } = await import('../../cli/render.js');
    const result = { tests };
    const text = format === 'json' ? renderJson(result) : renderRows(tests, testColumns, format, this.view(flags));
    await emit(text, flags.output, this.jsonEnabled());
    return result;
  }
}
