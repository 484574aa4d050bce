/** `railyard flaky settings`: show or change the flaky-test detection and quarantine settings of a repository. */
import { Flags } from '@oclif/core';
import { BaseCommand, repoFlag } from '../../cli/base-command.js';
import { ConfigError } from '../../cli/config.js';
import type { RepositorySettings, UpdateRepositorySettingsRequest } from '../../contract/index.js';

const onOff = (description: string) => Flags.string({ description, options: ['on', 'off'] });

/** "0.3", "30%" → 0.3; a fraction in [0, 1]. */
export function parseFraction(text: string, flag: string): number {
  const match = /^(\d+(?:\.\d+)?|\.\d+)\s*(%)?$/.exec(text.trim());
  const value = match ? Number(match[1]) / (match[2] ? 100 : 1) : Number.NaN;
  if (!(value >= 0 && value <= 1)) throw new ConfigError(`--${flag}: expected a fraction 0..1 or a percentage 0%..100%, got "${text}"`);
  return value;
}

export function parseBranches(text: string): string[] {
  const branches = text.split(',').map((s) => s.trim()).filter(Boolean);
  if (branches.length === 0) throw new ConfigError('--branches: give at least one branch or glob, e.g. main,release/*');
  if (branches.length > 10) throw new ConfigError(`--branches: at most 10 branches or globs, got ${branches.length}`);
  return branches;
}

const PROJECT_HINT: Record<string, string> = {
  github: 'owner/name',
  gitlab: 'the project path, e.g. group/project',
  jira: 'the project key, e.g. WEB',
};

type Change = NonNullable<UpdateRepositorySettingsRequest['settings']>;

export default class Settings extends BaseCommand {
  static override summary = 'Show or change the flaky-test detection and quarantine settings of a repository';
  static override description =
    'Without change flags it shows the settings. Quarantining is the master switch: with it off nothing is quarantined; ' +
    'auto-quarantine then quarantines tests detected as flaky (never broken ones). Fractions take 0.3 or 30%.';
  static override examples = [
    '<%= config.bin %> flaky settings --org acme --repo acme/web',
    '<%= config.bin %> flaky settings --quarantining on --auto-quarantine on',
    '<%= config.bin %> flaky settings --ticket-system jira --ticket-project WEB',
    '<%= config.bin %> flaky settings --failure-rate on --branches main,release/* --window-hours 168 --flaky-activation 5% --json',
  ];
  static override flags = {
    repo: repoFlag(),
    org: Flags.string({ description: 'organisation slug [env: RAILYARD_ORG]' }),
    quarantining: onOff('quarantine tests at all (master switch)'),
    'auto-quarantine': onOff('quarantine tests detected as flaky'),
    'pass-on-retry': onOff('a test that fails and passes on a retry of the same commit is flaky'),
    'recovery-days': Flags.integer({ description: 'pass-on-retry: days without such evidence before a flaky test is healthy again (1-15)', min: 1, max: 15 }),
    'failure-rate': onOff('detect flaky and broken tests from their failure rate on stable branches'),
    branches: Flags.string({ description: 'failure-rate: stable branches, comma-separated globs (* and ?)' }),
    'window-hours': Flags.integer({ description: 'failure-rate: window in hours (1-720)', min: 1, max: 720 }),
    'min-sample': Flags.integer({ description: 'failure-rate: runs in the window before a status is decided (1-100000)', min: 1, max: 100_000 }),
    'flaky-activation': Flags.string({ description: 'failure-rate: failure rate at which a test becomes flaky (0..1 or %)' }),
    'flaky-resolution': Flags.string({ description: 'failure-rate: failure rate under which a flaky test is healthy again (0..1 or %)' }),
    'broken-threshold': Flags.string({ description: 'failure-rate: failure rate at which a test is broken (0..1 or %)' }),
    'ticket-url-template': Flags.string({ description: 'link of a ticket id, with {id} where the id goes' }),
    'ticket-system': Flags.string({
      description: 'open a ticket for each test turning flaky or broken, and close it when the test is healthy again (off: no tickets)',
      options: ['github', 'gitlab', 'jira', 'off'],
    }),
    'ticket-project': Flags.string({
      description: 'where tickets go: GitHub owner/name, GitLab project path, Jira project key',
      helpValue: 'PROJECT',
    }),
  };

  async run(): Promise<RepositorySettings> {
    const { flags } = await this.parse(Settings);
    const change: Change = {};
    const on = (v: string | undefined) => (v === undefined ? undefined : v === 'on');
    if (flags.quarantining !== undefined) change.quarantining_enabled = on(flags.quarantining);
    if (flags['auto-quarantine'] !== undefined) change.auto_quarantine_flaky = on(flags['auto-quarantine']);
    const passOnRetry: NonNullable<Change['pass_on_retry']> = {};
    if (flags['pass-on-retry'] !== undefined) passOnRetry.enabled = on(flags['pass-on-retry']);
    if (flags['recovery-days'] !== undefined) passOnRetry.recovery_days = flags['recovery-days'];
    if (Object.keys(passOnRetry).length) change.pass_on_retry = passOnRetry;
    const rate: NonNullable<Change['failure_rate']> = {};
    if (flags['failure-rate'] !== undefined) rate.enabled = on(flags['failure-rate']);
    if (flags.branches !== undefined) rate.branches = parseBranches(flags.branches);
    if (flags['window-hours'] !== undefined) rate.window_hours = flags['window-hours'];
    if (flags['min-sample'] !== undefined) rate.min_sample = flags['min-sample'];
    if (flags['flaky-activation'] !== undefined) rate.flaky_activation = parseFraction(flags['flaky-activation'], 'flaky-activation');
    if (flags['flaky-resolution'] !== undefined) rate.flaky_resolution = parseFraction(flags['flaky-resolution'], 'flaky-resolution');
    if (flags['broken-threshold'] !== undefined) rate.broken_threshold = parseFraction(flags['broken-threshold'], 'broken-threshold');
    if (rate.flaky_activation !== undefined && rate.flaky_resolution !== undefined && rate.flaky_resolution > rate.flaky_activation) {
      throw new ConfigError('--flaky-resolution: must not be above --flaky-activation (a flaky test would be healthy and flaky at once)');
    }
    if (Object.keys(rate).length) change.failure_rate = rate;
    if (flags['ticket-url-template'] !== undefined) {
      const template = flags['ticket-url-template'];
      if (!/^https?:\/\/[^\s/]/i.test(template)) throw new ConfigError(`--ticket-url-template: must be an http:// or https:// URL, got "${template}"`);
      if (!template.includes('{id}')) throw new ConfigError(`--ticket-url-template: must contain {id}, got "${template}"`);
      change.ticket_url_template = template;
    }
    if (flags['ticket-system'] !== undefined) change.ticket_system = flags['ticket-system'] as RepositorySettings['ticket_system'];
    if (flags['ticket-project'] !== undefined) {
      const project = flags['ticket-project'].trim();
      if (!project) throw new ConfigError('--ticket-project: give the project: GitHub owner/name, GitLab project path or Jira project key');
      change.ticket_project = project;
    }
    if (change.ticket_system && change.ticket_system !== 'off' && change.ticket_project === undefined)
      throw new ConfigError(`--ticket-system ${change.ticket_system}: give --ticket-project too (${PROJECT_HINT[change.ticket_system]})`);

    const { resolveOrg } = await import('../../cli/flaky.js');
    const org = await resolveOrg(flags.org, await this.config_());
    const key = { repo: await this.repo(flags.repo), org_url_slug: org };
    const client = await this.client(flags);
    const settings = Object.keys(change).length
      ? await client.call('updateRepositorySettings', { ...key, settings: change })
      : await client.call('getRepositorySettings', key);
    const { renderRecord } = await import('../../cli/render.js');
    const pct = (n: number) => `${+(n * 100).toFixed(2)}%`;
    const f = settings.failure_rate;
    const record = {
      quarantining: settings.quarantining_enabled ? 'on' : 'off',
      'auto-quarantine': settings.auto_quarantine_flaky ? 'on' : 'off',
      'pass-on-retry': settings.pass_on_retry.enabled ? 'on' : 'off',
      'recovery-days': settings.pass_on_retry.recovery_days,
      'failure-rate': f.enabled ? 'on' : 'off',
      branches: f.branches.join(', '),
      'window-hours': f.window_hours,
      'min-sample': f.min_sample,
      'flaky-activation': pct(f.flaky_activation),
      'flaky-resolution': pct(f.flaky_resolution),
      'broken-threshold': pct(f.broken_threshold),
      'infra-failure-threshold': `${pct(settings.infra_failure_threshold)} of at least ${settings.infra_failure_min_tests} tests`,
      'ticket-url-template': settings.ticket_url_template,
      tickets: settings.ticket_system === 'off' ? 'off' : `${settings.ticket_system} ${settings.ticket_project}`,
    };
    this.out(renderRecord(record, 'table', this.color()));
    return settings;
  }
}
