/** `railyard flaky quarantine`: override quarantine for one test: always, never, or automatic (no override). */
import { Args, Flags } from '@oclif/core';
import { BaseCommand, repoFlag } from '../../cli/base-command.js';
import { ConfigError } from '../../cli/config.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export default class Quarantine extends BaseCommand {
  static override summary = 'Override quarantine for one test: always, never, or automatic (no override)';
  static override description =
    '--always quarantines the test even when it is healthy; --never keeps it out of quarantine even when it is flaky; ' +
    '--auto removes the override. Nothing is quarantined while quarantining is off for the repository (`railyard flaky settings`).';
  static override examples = [
    '<%= config.bin %> flaky quarantine 3f0e8a52-6b1c-5d7e-9f00-112233445566 --always --org acme --repo acme/web',
    '<%= config.bin %> flaky quarantine 3f0e8a52-6b1c-5d7e-9f00-112233445566 --auto',
  ];
  static override args = { testId: Args.string({ description: 'test id (UUID)', required: true }) };
  static override flags = {
    repo: repoFlag(),
    org: Flags.string({ description: 'organisation slug [env: RAILYARD_ORG]' }),
    always: Flags.boolean({ description: 'always quarantine the test', exactlyOne: ['always', 'never', 'auto'] }),
    never: Flags.boolean({ description: 'never quarantine the test', exactlyOne: ['always', 'never', 'auto'] }),
    auto: Flags.boolean({ description: 'remove the override: the repository settings decide', exactlyOne: ['always', 'never', 'auto'] }),
  };

  async run() {
    const { args, flags } = await this.parse(Quarantine);
    if (!UUID.test(args.testId)) throw new ConfigError(`testId: expected a test id (UUID), got "${args.testId}"`);
    const setting = flags.always ? 'ALWAYS_QUARANTINE' : flags.never ? 'NEVER_QUARANTINE' : 'AUTO';
    const { resolveOrg } = await import('../../cli/flaky.js');
    const org = await resolveOrg(flags.org, await this.config_());
    const repo = await this.repo(flags.repo);
    const client = await this.client(flags);
    await client.call('setTestQuarantine', { repo, org_url_slug: org, test_id: args.testId, setting });
    const what = { ALWAYS_QUARANTINE: 'always quarantined', NEVER_QUARANTINE: 'never quarantined', AUTO: 'quarantined by the repository settings' }[setting];
    this.out(`Test ${args.testId} is now ${what}\n`);
    return { test_id: args.testId, setting };
  }
}
