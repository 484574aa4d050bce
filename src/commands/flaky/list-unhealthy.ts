/** `railyard flaky list-unhealthy`: list the flaky and broken tests (or one of the two, --status). */
import { Flags } from '@oclif/core';
import { BaseCommand, formatFlag, formatOf, repoFlag } from '../../cli/base-command.js';
import { flakyFlags } from '../../cli/flaky.js';
import type { UnhealthyTestCase } from '../../contract/index.js';

export default class ListUnhealthy extends BaseCommand {
  static override summary = 'List flaky and broken tests (--status for one of the two)';
  static override examples = [
    '<%= config.bin %> flaky list-unhealthy --org acme --repo acme/web',
    '<%= config.bin %> flaky list-unhealthy --status broken --format csv --output broken.csv',
  ];
  static override flags = {
    repo: repoFlag(),
    status: Flags.string({ description: 'only these tests (default: both, flaky first)', options: ['flaky', 'broken'] }),
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
    const tests: UnhealthyTestCase[] = [];
    for (const which of flags.status ? [flags.status] : ['flaky', 'broken']) {
      const status = which.toUpperCase() as 'FLAKY' | 'BROKEN';
      tests.push(
        ...(await collectPages<UnhealthyTestCase>(async function* (onPage) {
          for await (const page of client.pages('listUnhealthyTests', { repo, org_url_slug: org, status }, { onPage })) yield page.tests;
        }, `${which} tests`)),
      );
    }
    const { renderJson, renderRows } = await import('../../cli/render.js');
    const result = { tests };
    const text = format === 'json' ? renderJson(result) : renderRows(tests, testColumns, format, this.view(flags));
    await emit(text, flags.output, this.jsonEnabled());
    return result;
  }
}
