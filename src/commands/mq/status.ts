/** `railyard mq status`: show the state of a submitted pull request (optionally wait for it to finish). */
import { Args, Flags } from '@oclif/core';
import { BaseCommand, prNumber, queueFlags } from '../../cli/base-command.js';
import { parseDuration } from '../../cli/config.js';

export default class Status extends BaseCommand {
  static override summary = 'Show the state of a submitted pull request (optionally wait for it to finish)';
  static override examples = [
    '<%= config.bin %> mq status 123 --repo acme/web',
    '<%= config.bin %> mq status 123 --wait --timeout 45m   # exit 0 merged, 1 failed/cancelled/timeout',
    '<%= config.bin %> mq status 123 --json',
  ];
  static override args = { pr: Args.string({ description: 'pull request number', required: true }) };
  static override flags = {
    ...queueFlags,
    wait: Flags.boolean({ char: 'w', description: 'poll until merged, failed or cancelled' }),
    timeout: Flags.string({ description: 'with --wait: give up after this long', default: '1h' }),
    interval: Flags.string({ description: 'with --wait: polling interval', default: '5s' }),
  };

  async run() {
    const { args, flags } = await this.parse(Status);
    const number = prNumber(args.pr);
    const repo = await this.repo(flags.repo);
    const timeoutMs = parseDuration(flags.timeout, '--timeout');
    const intervalMs = parseDuration(flags.interval, '--interval');
    const client = await this.client(flags);
    const { describePr, waitForPr } = await import('../../cli/present.js');
    if (flags.wait) {
      const result = await waitForPr(
        client,
        { repo, targetBranch: flags.branch, prNumber: number },
        { timeoutMs, intervalMs },
      );
      return this.concludeWait(result);
    }
    const key = { repo, targetBranch: flags.branch, pr: { number } };
    const pr = await client.call('getSubmittedPullRequest', key);
    const { renderRecord } = await import('../../cli/render.js');
    const view = describePr(pr);
    if (pr.testRunId) {
      // The failing tests of its run: from the results CI uploaded for the test commit.
      const details = await client
        .call('getMergeQueueTestingDetails', { repo, targetBranch: flags.branch, testRunId: pr.testRunId })
        .catch(() => undefined);
      // While it tests: the checks it still waits for (a renamed job shows here as never reported).
      if (details?.pendingChecks?.length)
        view.waitingForChecks = details.pendingChecks
          .map((c) => `${c.name} (${c.state === 'running' ? 'running' : 'not reported yet'})`)
          .join(', ');
      if (details?.failingTests?.length) {
        const { failingTestLine } = await import('../../watch/failing-tests.js');
        view.failingTests = details.failingTests.map(failingTestLine);
      }
    }
    if (pr.state === 'failed' || pr.state === 'cancelled') {
      // The reason code alone does not say what to do: the detail sentence of its history, and where to look next.
      const history = await client.call('getPullRequestHistory', key).catch(() => undefined);
      const current = history?.transitions.filter((t) => t.queueEntryId === pr.id) ?? [];
      const detail = [...current].reverse().find((t) => t.detail)?.detail;
      const where = `${flags.repo ? ` --repo ${flags.repo}` : ''}${flags.branch !== 'main' ? ` --branch ${flags.branch}` : ''}`;
      // A cancelled PR has nothing that failed to read: only submitting it again is next.
      const next =
        pr.state === 'failed'
          ? `${this.config.bin} mq logs ${number}${where} (what failed), ${this.config.bin} mq submit ${number}${where} (try again)`
          : `${this.config.bin} mq submit ${number}${where} (submit it again)`;
      Object.assign(view, { detail, next });
    }
    this.out(renderRecord(view, 'table', this.view()));
    return pr;
  }
}
