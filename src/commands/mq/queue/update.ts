/** `railyard mq queue update`: change merge queue settings (only the flags you give change). */
import { Flags } from '@oclif/core';
import { BaseCommand, queueFlags } from '../../../cli/base-command.js';
import { ConfigError } from '../../../cli/config.js';
import {
  DIRECT_MERGE_MODES,
  FLAKY_POLICIES,
  MERGE_METHODS,
  MODES,
  OPTIMIZATION_MODES,
  SETTABLE_QUEUE_STATES,
} from '../../../contract/constants.js';
import type { RequestBody } from '../../../contract/index.js';

const positive = (description: string) => Flags.integer({ description, min: 1, max: 4294967295 });
const nonNegative = (description: string) => Flags.integer({ description, min: 0, max: 4294967295 });
const toggle = (description: string) => Flags.boolean({ description, allowNo: true });

/** Flag name → updateQueue field. */
const FIELDS = {
  state: 'state',
  mode: 'mode',
  concurrency: 'concurrency',
  'bisection-concurrency': 'bisectionConcurrency',
  'testing-timeout-minutes': 'testingTimeoutMinutes',
  'pending-failure-depth': 'pendingFailureDepth',
  'can-optimistically-merge': 'canOptimisticallyMerge',
  batch: 'batch',
  'batching-max-wait-time-minutes': 'batchingMaxWaitTimeMinutes',
  'batching-min-size': 'batchingMinSize',
  'create-prs-for-testing-branches': 'createPrsForTestingBranches',
  'comments-enabled': 'commentsEnabled',
  'commands-enabled': 'commandsEnabled',
  'status-check-enabled': 'statusCheckEnabled',
  'direct-merge-mode': 'directMergeMode',
  'optimization-mode': 'optimizationMode',
  'merge-method': 'mergeMethod',
  'required-statuses': 'requiredStatuses',
  'delete-required-statuses': 'deleteRequiredStatuses',
  'extension-enabled': 'extensionEnabled',
  'enqueueing-label': 'enqueueingLabel',
  'label-commands-enabled': 'labelCommandsEnabled',
  'state-labels-enabled': 'stateLabelsEnabled',
  'flaky-policy': 'flakyPolicy',
  'flaky-report-grace-seconds': 'flakyReportGraceSeconds',
  'flaky-retries': 'flakyRetries',
  'probation-threshold': 'probationThreshold',
  freezes: 'freezes',
  'freeze-bypass-priority': 'freezeBypassPriority',
} as const;

export default class QueueUpdate extends BaseCommand {
  static override summary = 'Change merge queue settings (only the flags you give change)';
  static override examples = [
    '<%= config.bin %> mq queue update --repo acme/web --concurrency 5 --batch --batching-min-size 4',
    '<%= config.bin %> mq queue update --merge-method rebase --required-statuses test,lint',
    '<%= config.bin %> mq queue update --can-optimistically-merge --pending-failure-depth 1 --json',
    '<%= config.bin %> mq queue update --delete-required-statuses',
    '<%= config.bin %> mq queue update --freezes \'[{"cron":"0 16 * * 5","durationMinutes":3840,"reason":"weekend"}]\'',
  ];
  static override flags = {
    ...queueFlags,
    state: Flags.string({ description: 'queue state', options: [...SETTABLE_QUEUE_STATES] }),
    mode: Flags.string({ description: 'queue mode (a change on a non-empty queue switches once it is empty)', options: [...MODES] }),
    concurrency: positive('test runs at once (per lane in parallel mode)'),
    'bisection-concurrency': positive('extra test runs for bisection (per lane in parallel mode)'),
    'testing-timeout-minutes': Flags.string({
      description:
        'fail a run after this many minutes (0 = no timeout), or "auto": 1.5 × the p95 of recent passing runs, at least 10 (60 until 10 runs passed)',
      helpValue: 'N|auto',
    }),
    'pending-failure-depth': nonNegative('successor runs a failure waits for before it is final (0 = none)'),
    'can-optimistically-merge': toggle('a passing run also merges the units ahead of it'),
    batch: toggle('test pull requests in batches'),
    'batching-max-wait-time-minutes': positive('start a partial batch after this wait'),
    'batching-min-size': positive('pull requests per batch'),
    'create-prs-for-testing-branches': toggle('open draft PRs for test branches'),
    'comments-enabled': toggle('comment on pull requests'),
    'commands-enabled': toggle('accept slash commands'),
    'status-check-enabled': toggle('post a status check'),
    'direct-merge-mode': Flags.string({ description: 'merge up-to-date PRs without a test run', options: [...DIRECT_MERGE_MODES] }),
    'optimization-mode': Flags.string({ description: 'bisection optimisation', options: [...OPTIMIZATION_MODES] }),
    'merge-method': Flags.string({ description: 'how PRs land', options: [...MERGE_METHODS] }),
    'required-statuses': Flags.string({ description: 'comma-separated status names that must pass', exclusive: ['delete-required-statuses'] }),
    'delete-required-statuses': Flags.boolean({ description: 'drop the required-statuses override', exclusive: ['required-statuses'] }),
    'extension-enabled': toggle('browser extension integration'),
    'enqueueing-label': Flags.string({ description: 'label that submits a PR' }),
    'label-commands-enabled': toggle('accept label commands'),
    'state-labels-enabled': toggle('label PRs with their queue state'),
    'flaky-policy': Flags.string({ description: 'failing tests that do not fail a run (Railyard extension)', options: [...FLAKY_POLICIES] }),
    'flaky-report-grace-seconds': Flags.integer({ description: 'seconds a failed check waits for its test results (Railyard extension)', min: 0, max: 3600 }),
    'flaky-retries': Flags.integer({ description: 'retries of a failure of known-flaky tests only (Railyard extension)', min: 0, max: 3 }),
    'probation-threshold': Flags.string({
      description: 'risk (0..1) above which a PR is tested alone first, or "off" (Railyard extension)',
      helpValue: 'X|off',
    }),
    freezes: Flags.string({
      description:
        'freeze windows as JSON, replacing the list: [{"start":"…Z","end":"…Z","reason":"…"}, {"cron":"0 16 * * 5","durationMinutes":3840}] (UTC; [] for none; Railyard extension)',
      helpValue: 'JSON',
    }),
    'freeze-bypass-priority': Flags.integer({
      description: 'PRs of this priority value or lower land during a freeze (Railyard extension)',
      min: 0,
      max: 255,
    }),
  };

  async run() {
    const { flags } = await this.parse(QueueUpdate);
    const body: Record<string, unknown> = {};
    for (const [flag, field] of Object.entries(FIELDS)) {
      const value = (flags as Record<string, unknown>)[flag];
      if (value === undefined) continue;
      if (flag === 'required-statuses') {
        const list = String(value).split(',').map((s) => s.trim()).filter(Boolean);
        if (!list.length) throw new ConfigError('--required-statuses: give at least one name (use --delete-required-statuses to drop the override)');
        body[field] = list;
      } else if (flag === 'delete-required-statuses') {
        if (value) body[field] = true;
      } else if (flag === 'probation-threshold') {
        const text = String(value).trim();
        const number = Number(text);
        if (text !== 'off' && (text === '' || !(number >= 0 && number <= 1)))
          throw new ConfigError(`--probation-threshold: expected a number from 0 to 1 or "off", got "${text}"`);
        body[field] = text === 'off' ? null : number;
      } else if (flag === 'testing-timeout-minutes') {
        const text = String(value).trim().toLowerCase();
        if (text !== 'auto' && !/^\d{1,10}$/.test(text))
          throw new ConfigError(
            `--testing-timeout-minutes: expected a whole number of minutes or "auto", got "${String(value)}"`,
          );
        body[field] = text === 'auto' ? 'auto' : Number(text);
      } else if (flag === 'freezes') {
        let list: unknown;
        try {
          list = JSON.parse(String(value));
        } catch (error) {
          throw new ConfigError(
            `--freezes: not JSON (${(error as Error).message}); give a list such as [{"start":"2026-12-24T18:00:00Z","end":"2026-12-27T08:00:00Z"}]`,
          );
        }
        if (!Array.isArray(list))
          throw new ConfigError('--freezes: give a JSON list of windows ([] for none)');
        body[field] = list;
      } else body[field] = value;
    }
    if (Object.keys(body).length === 0) {
      throw new ConfigError('nothing to update: give at least one setting flag (see --help)');
    }
    const client = await this.client(flags);
    const queue = await client.call('updateQueue', {
      repo: await this.repo(flags.repo),
      targetBranch: flags.branch,
      ...body,
    } as RequestBody<'updateQueue'>);
    const { renderRecord } = await import('../../../cli/render.js');
    const { settingsRecord } = await import('../../../cli/queue.js');
    this.out(renderRecord(settingsRecord(queue), 'table', this.color()));
    return queue;
  }
}
