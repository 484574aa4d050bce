/** `railyard mq watch`: watch a merge queue live: position, lane, state, test run, time in queue and ETA of each pull request. */
import { Flags } from '@oclif/core';
import { BaseCommand, prNumber, queueFlags } from '../../cli/base-command.js';
import { parseDuration } from '../../cli/config.js';
import { printable } from '../../cli/escape.js';
import { EXIT } from '../../cli/exit.js';
import { isTerminalState } from '../../contract/constants.js';
import type { SubmittedPullRequest } from '../../contract/index.js';

export default class Watch extends BaseCommand {
  static override summary =
    'Watch a merge queue live: position, lane, state, test run, time in queue and ETA of each pull request';
  static override description =
    'On a terminal the board is redrawn in place; piped, one line is printed per change. With pull request numbers, ' +
    'it ends when they have all settled: exit 0 when all merged, 1 when one failed or was cancelled or at the timeout, ' +
    '3 when one waits on what only its author can fix, a conflict with its base (as `mq status --wait`). Without, it runs until the timeout or Ctrl-C and also lists the PRs waiting outside the queue (not_ready) with what holds each, as `mq queue get`. In a parallel queue each PR shows its lane ' +
    "(PRs of different lanes are tested and merged independently). The ETA is a range from the queue's recent test " +
    'durations and failure rate.';
  static override examples = [
    '<%= config.bin %> mq watch --repo acme/web',
    '<%= config.bin %> mq watch 123 124   # until both merged, failed or cancelled',
    '<%= config.bin %> mq watch 123 | tee queue.log',
  ];
  static override strict = false;
  static override args = {};
  static override flags = {
    ...queueFlags,
    interval: Flags.string({ description: 'how often to look', default: '2s' }),
    timeout: Flags.string({ description: 'stop after this long (0 = never)', default: '1h' }),
    heartbeat: Flags.string({
      description:
        'piped: with no change for this long, a line says what is still waited for (a CI log never goes silent)',
      default: '30s',
    }),
  };

  async run() {
    const { argv, flags } = await this.parse(Watch);
    const prs = (argv as string[]).map(prNumber);
    const intervalMs = parseDuration(flags.interval, '--interval');
    const timeoutMs = flags.timeout === '0' ? 0 : parseDuration(flags.timeout, '--timeout');
    const heartbeatMs = parseDuration(flags.heartbeat, '--heartbeat');
    let lastLineAt = Date.now();
    const repo = await this.repo(flags.repo);
    const client = await this.client(flags);
    const { boardHeader, boardLine, boardRows } = await import('../../watch/board.js');
    const { repoLabel } = await import('../../cli/present.js');
    const { holdPhrases } = await import('../../watch/notices.js');
    const { authorMustFix } = await import('../../watch/blocked.js');
    const { notReadyPrs } = await import('../../watch/not-ready.js');
    const tty = Boolean(process.stdout.isTTY) && !this.jsonEnabled();
    const deadline = timeoutMs ? Date.now() + timeoutMs : Infinity;
    const key = { repo, targetBranch: flags.branch };
    const seen = new Map<number, string>();
    const settled = new Map<number, SubmittedPullRequest>();
    /** Settled PRs that wait on their author (a conflict): what to fix. */
    const blocked = new Map<number, string>();
    const settledLine = (n: number, pr: SubmittedPullRequest) =>
      blocked.has(n)
        ? `#${n} blocked until its author pushes: ${blocked.get(n)}`
        : `#${n} ${pr.state}${pr.stateReason ? ` (${pr.stateReason})` : ''}`;
    let drawn = 0;
    let stop = false;
    const onSigint = () => (stop = true);
    process.once('SIGINT', onSigint);
    const stamp = () => new Date().toISOString().slice(11, 19);
    try {
      for (;;) {
        const [queue, list] = await Promise.all([
          client.call('getQueue', key),
          client.call('listQueues', { repo }),
        ]);
        const summary = list.queues.find((q) => q.targetBranch === flags.branch);
        const now = Date.now();
        const rows = boardRows(queue, summary, now);
        // The whole queue's board also lists the PRs waiting outside it, with what holds each (as `mq queue get`).
        const waiting = prs.length
          ? null
          : await notReadyPrs({
              list: () => client.call('listPullRequests', { ...key, state: 'not_ready', take: 100 }),
              get: (n) => client.call('getSubmittedPullRequest', { ...key, pr: { number: n } }),
            });
        const waitingLines = (waiting?.prs ?? []).map((p) => ({
          n: p.prNumber,
          line: `#${p.prNumber} not_ready: ${p.why}  ${p.prTitle}`,
        }));
        if (waiting?.more)
          waitingLines.push({
            n: -1,
            line: `and ${waiting.more} more not ready: railyard mq list --state not_ready`,
          });
        // The PRs watched that left the queue (or are not ready): ask for each, and say what holds
        // one that waits outside (a conflict with its base: with what, and what to do).
        const outside = new Map<number, string>();
        for (const n of prs) {
          if (settled.has(n) || rows.some((r) => r.pr.prNumber === n)) continue;
          const pr = await client.call('getSubmittedPullRequest', { ...key, pr: { number: n } });
          const mustFix = isTerminalState(pr.state) ? null : authorMustFix(pr);
          if (mustFix) blocked.set(n, mustFix);
          if (isTerminalState(pr.state) || mustFix) settled.set(n, pr);
          else {
            const holds = holdPhrases(pr.readiness);
            const line = `#${n} ${pr.state}${holds.length ? `: ${holds.join('; ')}` : pr.stateReason ? ` (${pr.stateReason})` : ''}`;
            outside.set(n, line);
            if (!tty && seen.get(n) !== line) {
              seen.set(n, line);
              this.out(`${stamp()} ${printable(line)}\n`);
              lastLineAt = now;
            }
          }
        }
        if (tty) {
          const lines = [boardHeader(repoLabel(repo), queue, summary), ...rows.map(boardLine)];
          for (const line of outside.values()) lines.push(`     ${line}`);
          for (const [n, pr] of settled) lines.push(`     ${settledLine(n, pr)}`);
          for (const { line } of waitingLines) lines.push(`     ${line}`);
          if (!rows.length && !waitingLines.length) lines.push('     (the queue is empty)');
          process.stdout.write(
            (drawn ? `\x1b[${drawn}A\x1b[J` : '') + lines.map((l) => printable(l)).join('\n') + '\n',
          );
          drawn = lines.length;
        } else if (!this.jsonEnabled()) {
          for (const row of rows) {
            const what = `${row.pr.state}|${row.position}|${row.pr.testRunId ?? ''}|${row.pr.lane ?? ''}`;
            if (seen.get(row.pr.prNumber) === what) continue;
            seen.set(row.pr.prNumber, what);
            this.out(`${stamp()} ${printable(boardLine(row).trimStart())}\n`);
            lastLineAt = now;
          }
          for (const [n, pr] of settled) {
            const what = `${pr.state}`;
            if (seen.get(n) === what) continue;
            seen.set(n, what);
            this.out(`${stamp()} ${printable(settledLine(n, pr))}\n`);
            lastLineAt = now;
          }
          for (const { n, line } of waitingLines) {
            if (seen.get(n) === line) continue;
            seen.set(n, line);
            this.out(`${stamp()} ${printable(line)}\n`);
            lastLineAt = now;
          }
          if (now - lastLineAt >= heartbeatMs) {
            // Nothing changed for a while: say where each watched PR stands (the queue, when none is named).
            const watched = prs.length ? rows.filter((r) => prs.includes(r.pr.prNumber)) : [];
            const lines = watched.length
              ? watched.map((r) => `still ${boardLine(r).trimStart()}`)
              : [
                  `still watching ${boardHeader(repoLabel(repo), queue, summary)}`,
                  ...waitingLines.map(({ line }) => `still ${line}`),
                ];
            for (const n of prs) {
              if (settled.has(n) || watched.some((r) => r.pr.prNumber === n)) continue;
              const line = outside.get(n);
              lines.push(line ? `still ${line}` : `still waiting for #${n}: not in the queue yet`);
            }
            for (const line of lines) this.out(`${stamp()} ${printable(line)}\n`);
            lastLineAt = now;
          }
        }
        const done = prs.length > 0 && prs.every((n) => settled.has(n));
        if (done || stop || Date.now() >= deadline) {
          const result = {
            pullRequests: prs.map((n) => settled.get(n) ?? { prNumber: n, state: 'waiting' }),
          };
          if (prs.length && !(done && prs.every((n) => settled.get(n)?.state === 'merged'))) {
            if (this.jsonEnabled()) this.logJson(result);
            const left = prs.filter((n) => !settled.has(n)).map((n) => `#${n}`);
            if (left.length)
              this.logToStderr(
                `${left.join(', ')} still in the queue at the ${stop ? 'interrupt' : 'timeout'}`,
              );
            for (const [n, why] of blocked)
              this.logToStderr(printable(`#${n} is blocked until its author pushes: ${why}`));
            // Exit 3 when what stopped the watch is only a PR's author to fix; a failure or a timeout says 1.
            const failed =
              left.length > 0 || prs.some((n) => !blocked.has(n) && settled.get(n)?.state !== 'merged');
            this.exit(blocked.size && !failed ? EXIT.blocked : EXIT.error);
          }
          return result;
        }
        await new Promise((r) => setTimeout(r, Math.max(0, Math.min(intervalMs, deadline - Date.now()))));
      }
    } finally {
      process.off('SIGINT', onSigint);
    }
  }
}
