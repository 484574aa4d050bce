/** `railyard flaky list-quarantined`: list quarantined tests. */
import { BaseCommand, formatFlag, formatOf, repoFlag } from '../../cli/base-command.js';
import { flakyFlags } from '../../cli/flaky.js';
import type { QuarantinedTest } from '../../contract/index.js';

export default class ListQuarantined extends BaseCommand {
  static override summary = 'List quarantined tests';
  static override examples = [
    '<%= config.bin %> flaky list-quarantined --org acme --repo acme/web',
    '<%= config.bin %> flaky list-quarantined --format markdown >> report.md',
  ];
  static override flags = {
    repo: repoFlag(),
    ...flakyFlags,
    ...formatFlag,
  };

  async run() {
    const { flags } = await this.parse(ListQuarantined);
    const format = formatOf(flags);
    const { resolveOrg, collectPages, emit, quarantinedColumns } = await import('../../cli/flaky.js');
    const org = await resolveOrg(flags.org, await this.config_());
    const repo = await this.repo(flags.repo);
    const client = await this.client(flags);
    const tests = await collectPages<QuarantinedTest>(async function* (onPage) {
      for await (const page of client.pages('listQuarantinedTests', { repo, org_url_slug: org }, { onPage })) yield page.quarantined_tests;
    }, 'quarantined tests');
    const { renderJson, renderRows } = await import('../../cli/render.js');
    const result = { quarantined_tests: tests };
    const text = format === 'json' ? renderJson(result) : renderRows(tests, quarantinedColumns, format, this.view(flags));
    await emit(text, flags.output, this.jsonEnabled());
    return result;
  }
}
