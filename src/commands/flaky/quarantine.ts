/** `railyard flaky quarantine`: override quarantine for one test (always, never, or automatic), until a time and with a reason. */
import { Args, Flags } from '@oclif/core';
import { BaseCommand, repoFlag } from '../../cli/base-command.js';
import { ConfigError } from '../../cli/config.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export default class Quarantine extends BaseCommand {
  static override summary = 'Override quarantine for one test: always, never, or automatic (no override)';
  static override description =
    '--always quarantines the test even when it is healthy; --never keeps it out of quarantine even when it is flaky; ' +
    '--auto removes the override. --until ends the override by itself (an ISO 8601 time with a zone, or a duration from now: 2h, 7d); ' +
    'from then the repository settings decide again. The override is owned by the label of the token used. ' +
    'Nothing is quarantined while quarantining is off for the repository (`railyard flaky settings --quarantining on`): ' +
    'the command warns on stderr (and in the --json answer\'s "warning").';
  static override examples = [
    '<%= config.bin %> flaky quarantine 3f0e8a52-6b1c-5d7e-9f00-112233445566 --always --until 7d --reason "KAN-123: times out on the ARM runners" --org acme --repo acme/web',
    '<%= config.bin %> flaky quarantine 3f0e8a52-6b1c-5d7e-9f00-112233445566 --always --until 2026-12-24T18:00:00Z',
    '<%= config.bin %> flaky quarantine 3f0e8a52-6b1c-5d7e-9f00-112233445566 --auto',
  ];
  static override args = { testId: Args.string({ description: 'test id (UUID)', required: true }) };
  static override flags = {
    repo: repoFlag(),
    org: Flags.string({ description: 'organisation slug [env: RAILYARD_ORG]' }),
    always: Flags.boolean({
      description: 'always quarantine the test',
      exactlyOne: ['always', 'never', 'auto'],
    }),
    never: Flags.boolean({
      description: 'never quarantine the test',
      exactlyOne: ['always', 'never', 'auto'],
    }),
    auto: Flags.boolean({
      description: 'remove the override: the repository settings decide',
      exactlyOne: ['always', 'never', 'auto'],
    }),
    until: Flags.string({
      description:
        'the override lapses by itself at TIME: an ISO 8601 time with a zone (2026-12-24T18:00:00Z), or a duration from now (30m, 2h, 7d)',
      helpValue: 'TIME',
    }),
    reason: Flags.string({
      description: 'why (shown with the override in the lists, `flaky show` and the dashboard)',
      helpValue: 'TEXT',
    }),
  };

  async run() {
    const { args, flags } = await this.parse(Quarantine);
    if (!UUID.test(args.testId))
      throw new ConfigError(`testId: expected a test id (UUID), got "${args.testId}"`);
    if (flags.auto && (flags.until !== undefined || flags.reason !== undefined))
      throw new ConfigError(
        `--${flags.until !== undefined ? 'until' : 'reason'}: only with --always or --never (--auto removes the override)`,
      );
    const { parseUntil } = await import('../../cli/until.js');
    const until =
      flags.until === undefined
        ? undefined
        : new Date(parseUntil(flags.until, '--until', Date.now())).toISOString();
    const reason = flags.reason?.trim();
    if (flags.reason !== undefined && !reason) throw new ConfigError('--reason: must not be empty');
    const setting = flags.always ? 'ALWAYS_QUARANTINE' : flags.never ? 'NEVER_QUARANTINE' : 'AUTO';
    const { resolveOrg, overrideEnd } = await import('../../cli/flaky.js');
    const org = await resolveOrg(flags.org, await this.config_());
    const repo = await this.repo(flags.repo);
    const client = await this.client(flags);
    const answer = await client.call('setTestQuarantine', {
      repo,
      org_url_slug: org,
      test_id: args.testId,
      setting,
      ...(until ? { until } : {}),
      ...(reason ? { reason } : {}),
    });
    const o = answer.quarantine_override;
    const what = {
      ALWAYS_QUARANTINE: 'always quarantined',
      NEVER_QUARANTINE: 'never quarantined',
      AUTO: 'quarantined by the repository settings',
    }[setting];
    const end = o ? overrideEnd(o) : '';
    const owner = o?.owner ? `, owner ${o.owner}` : '';
    // While quarantining is off the override is kept but does nothing: the line must not claim it does.
    const is = answer.warning ? 'is set to be' : 'is now';
    this.out(`Test ${args.testId} ${is} ${what}${end}${owner}${o?.reason ? `: ${o.reason}` : ''}\n`);
    if (answer.warning) this.notice(`Warning: ${answer.warning}`);
    return { test_id: args.testId, setting, ...answer };
  }
}
