/** `railyard mq submit`: submit a pull request to a merge queue. */
import { Args, Flags } from '@oclif/core';
import { BaseCommand, prNumber, queueFlags } from '../../cli/base-command.js';
import { ConfigError, parseDuration } from '../../cli/config.js';
import type { Client } from '../../client/index.js';
import type { Repo } from '../../contract/index.js';

export default class Submit extends BaseCommand {
  static override summary = 'Submit a pull request to a merge queue';
  static override description =
    'Submitting a PR that is already queued updates its priority and --no-batch; a failed or cancelled PR is enqueued again. ' +
    'When the PR will wait for the queue (paused, draining) or for its impacted targets (parallel queue), a notice on stderr says so.';
  static override examples = [
    '<%= config.bin %> mq submit 123 --repo acme/web',
    '<%= config.bin %> mq submit 123 --priority urgent --wait --timeout 2h',
    '<%= config.bin %> mq submit 123 --priority 50 --no-batch --json',
    '<%= config.bin %> mq submit 123 --direct',
  ];
  static override args = { pr: Args.string({ description: 'pull request number', required: true }) };
  static override flags = {
    ...queueFlags,
    priority: Flags.string({ char: 'p', description: 'urgent, high, medium, low, or 0-255 (0 is highest)' }),
    'no-batch': Flags.boolean({ description: 'test this PR on its own, never in a batch' }),
    direct: Flags.boolean({
      description: "admit the PR past the forge's pull-request requirements (approvals, mergeability); still tested (needs the token's direct permission)",
    }),
    wait: Flags.boolean({ char: 'w', description: 'wait until the PR is merged, failed or cancelled' }),
    timeout: Flags.string({ description: 'with --wait: give up after this long', default: '1h' }),
    interval: Flags.string({ description: 'with --wait: polling interval', default: '5s' }),
  };

  async run() {
    const { args, flags } = await this.parse(Submit);
    const number = prNumber(args.pr);
    let priority: string | number | undefined;
    if (flags.priority !== undefined) {
      if (/^\d+$/.test(flags.priority)) priority = Number(flags.priority);
      else if (/^(urgent|high|medium|low)$/i.test(flags.priority)) priority = flags.priority.toLowerCase();
      else throw new ConfigError(`--priority: expected urgent, high, medium, low or 0-255, got "${flags.priority}"`);
      if (typeof priority === 'number' && priority > 255) throw new ConfigError('--priority: must be at most 255');
    }
    const repo = await this.repo(flags.repo);
    const client = await this.client(flags);
    const key = { repo, targetBranch: flags.branch, pr: { number } };
    await client.call('submitPullRequest', {
      ...key,
      ...(priority !== undefined ? { priority } : {}),
      ...(flags['no-batch'] ? { noBatch: true } : {}),
      ...(flags.direct ? { direct: true } : {}),
    });
    this.out(
      `Submitted #${number}${flags.direct ? ' direct' : ''} to the ${flags.branch} queue of ${repo.host}/${repo.owner}/${repo.name}\n`,
    );
    const pr = await client.call('getSubmittedPullRequest', key);
    // Why it will wait, when the queue or the PR holds it: on stderr, so --json output stays clean.
    const { submitNotices } = await import('../../watch/notices.js');
    const state = pr.readiness?.waitingFor ? undefined : await this.queueState(client, key);
    const notices = submitNotices(pr, state, {
      resume: 'railyard mq queue resume',
      uploadTargets: (p) => `railyard mq impacted-targets ${p.prNumber} --sha ${p.prSha} --target T…, or --all / --none`,
    });
    for (const { level, text } of notices) this.notice(`${level === 'warning' ? 'Warning' : 'Notice'}: ${text}`);
    if (!flags.wait) return pr;
    const { waitForPr } = await import('../../cli/present.js');
    const result = await waitForPr(
      client,
      { repo, targetBranch: flags.branch, prNumber: number },
      { timeoutMs: parseDuration(flags.timeout, '--timeout'), intervalMs: parseDuration(flags.interval, '--interval') },
    );
    return this.concludeWait(result);
  }

  /** The queue's state, for a server whose readiness does not say what a PR waits for (undefined if unreadable). */
  private async queueState(client: Client, key: { repo: Repo; targetBranch: string }) {
    try {
      return (await client.call('getQueue', { repo: key.repo, targetBranch: key.targetBranch })).state;
    } catch {
      return undefined;
    }
  }
}
