/** `railyard mq logs`: show why a pull request failed in the queue: the reason, its detail and the output of the failed checks. */
import { Args, Flags } from '@oclif/core';
import { BaseCommand, prNumber, queueFlags } from '../../cli/base-command.js';
import { ConfigError } from '../../cli/config.js';
import { printable } from '../../cli/escape.js';
import type { PullRequestTransition } from '../../contract/index.js';

interface CheckLog {
  name: string;
  conclusion?: string;
  url: string;
  /** The output (its last 1 MiB), or null when the server keeps none. */
  log: string | null;
  /** Why there is no output. */
  note?: string;
}

export default class Logs extends BaseCommand {
  static override summary =
    'Show why a pull request failed in the queue: the reason, its detail and the output of the failed checks';
  static override description =
    'Reads the test run that tested (or is testing) the PR: the failure reason and what it means (the PR it conflicts with ' +
    'and the files, what is wrong in railyard.json, the missing status, the failed checks), then the output of each ' +
    'failed check (its last 1 MiB). --all shows every check; --check one of them.';
  static override examples = [
    '<%= config.bin %> mq logs 123 --repo acme/web',
    '<%= config.bin %> mq logs 123 --check test',
    '<%= config.bin %> mq logs 123 --json',
  ];
  static override args = { pr: Args.string({ description: 'pull request number', required: true }) };
  static override flags = {
    ...queueFlags,
    check: Flags.string({ char: 'c', description: 'only the output of this check' }),
    all: Flags.boolean({
      char: 'a',
      description: 'the output of every check, not only the failed ones',
      exclusive: ['check'],
    }),
  };

  async run() {
    const { args, flags } = await this.parse(Logs);
    const number = prNumber(args.pr);
    const repo = await this.repo(flags.repo);
    const client = await this.client(flags);
    const key = { repo, targetBranch: flags.branch, pr: { number } };
    const [pr, history] = await Promise.all([
      client.call('getSubmittedPullRequest', key),
      client.call('getPullRequestHistory', key),
    ]);
    const testRunId = pr.testRunId;
    const current = history.transitions.filter((t) => t.queueEntryId === pr.id);
    // The change that explains the state: the last one that carries a detail, else the last one.
    const last: PullRequestTransition | undefined =
      [...current].reverse().find((t) => t.detail) ?? current.at(-1);
    const lines = [`#${pr.prNumber} ${pr.state}${pr.stateReason ? `: ${pr.stateReason}` : ''}`];
    if (last?.detail) lines.push(`  ${last.detail}`);
    if (!testRunId) {
      if (flags.check)
        throw new ConfigError(`--check: #${number} has not been tested yet (it is ${pr.state})`);
      // Why not: a conflict with its base (with what, and what to do), or what it waits for.
      const { holdPhrases } = await import('../../watch/notices.js');
      const holds = pr.isCurrentlySubmittedToQueue ? holdPhrases(pr.readiness) : [];
      const why = pr.readiness?.conflict && holds.length ? `it ${holds.join('; ')}` : holds.join('; ');
      const all = [...lines, why ? `  not tested: ${why}` : '  (not tested yet)'];
      this.out(printable((await this.fitted(all)).join('\n') + '\n', '\n'));
      return {
        prNumber: number,
        state: pr.state,
        reason: pr.stateReason,
        detail: last?.detail,
        ...(why ? { notTested: why } : {}),
        checks: [],
      };
    }
    const details = await client.call('getMergeQueueTestingDetails', {
      repo,
      targetBranch: flags.branch,
      testRunId,
    });
    lines.push(
      `  test run ${testRunId}${details.testBranch ? ` on ${details.testBranch}` : ''}${details.testBranchSha ? ` (${details.testBranchSha.slice(0, 12)})` : ''}`,
    );
    if (details.retryOf)
      lines.push(`  a retry of run ${details.retryOf} (it failed only on tests with flake history)`);
    if (details.failingTests?.length) {
      // What failed, test by test, from the results uploaded for the test commit.
      const { failingTestLine } = await import('../../watch/failing-tests.js');
      lines.push(`  failing tests (${details.failingTests.length}):`);
      for (const t of details.failingTests) lines.push(`    ${failingTestLine(t)}`);
    }
    const runs = details.checkSuites.flatMap((s) => s.checkRuns);
    if (flags.check && !runs.some((r) => r.name === flags.check)) {
      throw new ConfigError(
        `--check: run ${testRunId} has no check "${flags.check}" (checks: ${runs.map((r) => r.name).join(', ') || 'none yet'})`,
      );
    }
    const wanted = runs.filter((r) =>
      flags.check
        ? r.name === flags.check
        : flags.all || (r.conclusion !== undefined && r.conclusion !== 'SUCCESS'),
    );
    const { ApiError } = await import('../../client/index.js');
    const checks: CheckLog[] = [];
    for (const r of wanted) {
      const entry: CheckLog = { name: r.name, conclusion: r.conclusion, url: r.url, log: null };
      try {
        entry.log = await client.call('getCheckRunLog', {
          repoHost: repo.host,
          repo: `${repo.owner}/${repo.name}`,
          targetBranch: flags.branch,
          testRunId,
          check: r.name,
        });
      } catch (error) {
        if (!(error instanceof ApiError) || error.status !== 404) throw error;
        entry.note = error.serverMessage.replace(/^check: /, '');
      }
      checks.push(entry);
    }
    let text = (await this.fitted(lines)).join('\n') + '\n';
    if (!wanted.length) text += runs.length ? '  (no failed check)\n' : '  (no check finished yet)\n';
    for (const c of checks) {
      text += `\n==> ${c.name}${c.conclusion ? ` (${c.conclusion.toLowerCase()})` : ' (running)'} <==\n`;
      text +=
        c.log === null
          ? `(no output: ${c.note})\n`
          : c.log.endsWith('\n') || c.log === ''
            ? c.log
            : `${c.log}\n`;
    }
    // A check's output is the PR's code talking: its lines stay lines, but nothing in it drives the terminal.
    this.out(printable(text, '\n\t'));
    return {
      prNumber: number,
      state: pr.state,
      reason: pr.stateReason,
      detail: last?.detail,
      testRunId,
      ...(details.failingTests ? { failingTests: details.failingTests } : {}),
      checks,
    };
  }

  /**
   * The summary lines (not a check's output) fitted to the terminal: a long one goes on over
   * lines indented under it, cut at spaces, so an id or a SHA stays whole to copy.
   */
  private async fitted(lines: string[]): Promise<string[]> {
    const width = this.view().width;
    if (!width) return lines;
    const { wrapWords } = await import('../../cli/render.js');
    return lines.flatMap((line) => {
      const indent = /^ */.exec(line)![0].length + 2;
      const [first, ...rest] = wrapWords(line.trimStart(), width - indent);
      return [line.slice(0, indent - 2) + first, ...rest.map((more) => ' '.repeat(indent) + more)];
    });
  }
}
