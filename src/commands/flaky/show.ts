/** `railyard flaky show`: show one test: status, failure rates, most common failures, quarantine, and its recent history. */
import { Args } from '@oclif/core';
import { BaseCommand, formatFlag, formatOf, repoFlag } from '../../cli/base-command.js';
import { flakyFlags } from '../../cli/flaky.js';

/** The days of history `flaky show` reads: its runs, and the uploads excluded from detection. */
const HISTORY_DAYS = 30;

export default class Show extends BaseCommand {
  static override summary =
    'Show one test: status, failure rates, most common failures, quarantine, and its last 30 days (uploads excluded from detection included)';
  static override examples = [
    '<%= config.bin %> flaky show 3f0e8a52-6b1c-5d7e-9f00-112233445566 --org acme --repo acme/web',
  ];
  static override args = { testId: Args.string({ description: 'test id (UUID)', required: true }) };
  static override flags = {
    repo: repoFlag(),
    ...flakyFlags,
    ...formatFlag,
  };

  async run() {
    const { args, flags } = await this.parse(Show);
    const format = formatOf(flags);
    const { resolveOrg, emit, statusLabel, reasonText, overrideText, historyText, excludedUploadText } =
      await import('../../cli/flaky.js');
    const org = await resolveOrg(flags.org, await this.config_());
    const client = await this.client(flags);
    const key = { repo: await this.repo(flags.repo), org_url_slug: org, test_id: args.testId };
    const [{ test }, history] = await Promise.all([
      client.call('getTestDetails', key),
      client.call('getTestFailureHistory', { ...key, days: HISTORY_DAYS }),
    ]);
    const { renderJson, renderRecord, whenText } = await import('../../cli/render.js');
    const record = {
      name: test.name,
      id: test.id,
      status:
        test.verdict?.kind === 'not_enough_runs'
          ? statusLabel(test)
          : `${statusLabel(test)} since ${format === 'table' ? whenText(test.status.timestamp) : test.status.timestamp}`,
      reason: reasonText(test),
      file: test.file_path,
      classname: test.classname,
      parent: test.parent,
      variant: test.variant,
      quarantined: test.quarantined,
      quarantineOverride: test.quarantine_override
        ? overrideText(test.quarantine_override, test.quarantined)
        : undefined,
      codeowners: test.codeowners,
      ticket: test.ticket?.html_url,
      failureRate7d: `${(test.failure_rate_last_7d * 100).toFixed(1)}%`,
      failureRate24h: `${(test.failure_rate_last_24h * 100).toFixed(1)}%`,
      pullRequestsImpacted7d: test.pull_requests_impacted_last_7d,
      failuresPassedOnRetry7d: test.verdict?.failures_passed_on_retry_last_7d,
      mostCommonFailures: test.most_common_failures.map((f) => `${f.occurrence_count}× ${f.summary}`),
      [`history${HISTORY_DAYS}d`]: historyText(history),
      excludedUploads: history.excluded_uploads.map(excludedUploadText),
      link: test.html_url,
    };
    const text =
      format === 'json' ? renderJson({ test, history }) : renderRecord(record, format, this.view(flags));
    await emit(text, flags.output, this.jsonEnabled());
    return { test, history };
  }
}
