/** The `railyard mq` commands' views: a submitted PR for people, PR list columns, waiting for a PR to settle. */
import type { QueueListItem, SubmittedPullRequest } from '../contract/index.js';
import type { Client } from '../client/index.js';
import type { Repo } from '../contract/index.js';
import { placeText } from '../watch/board.js';
import { holdPhrases, waitSentence } from '../watch/notices.js';
import { Progress } from './progress.js';
import { whenText, type Column } from './render.js';

export const repoLabel = (repo: Repo) => `${repo.host}/${repo.owner}/${repo.name}`;

export const prColumns: Column<QueueListItem>[] = [
  { header: 'PR', get: (p) => `#${p.prNumber}`, plain: (p) => p.prNumber },
  { header: 'State', get: (p) => p.state ?? '' },
  { header: 'Reason', get: (p) => p.stateReason ?? '', shrink: 'first' },
  {
    header: 'Priority',
    get: (p) => `${p.priorityName} (${p.priorityValue})`,
    plain: (p) => p.priorityName,
    drop: 2,
  },
  { header: 'Priority value', get: (p) => p.priorityValue, machineOnly: true },
  { header: 'Title', get: (p) => p.prTitle, shrink: true },
  { header: 'Author', get: (p) => p.prAuthor, drop: 1 },
  { header: 'SHA', get: (p) => p.prSha.slice(0, 12), plain: (p) => p.prSha },
  { header: 'Since', get: (p) => p.stateChangedAt, time: true },
];

/** The human view of one submitted PR. */
export function describePr(pr: SubmittedPullRequest): Record<string, unknown> {
  return {
    pr: `#${pr.prNumber} ${pr.prTitle}`,
    author: pr.prAuthor,
    sha: pr.prSha,
    base: pr.prBaseBranch,
    state: pr.state,
    reason: pr.stateReason,
    since: whenText(pr.stateChangedAt),
    priority: `${pr.priorityName} (${pr.priorityValue})`,
    inQueue: pr.isCurrentlySubmittedToQueue,
    // Extensions: tested and landed with the PRs of its stack; submitted past the forge's PR checks.
    stack: pr.stack?.description,
    direct: pr.direct ? "yes: admitted past the forge's pull-request requirements, still tested" : undefined,
    testRunId: pr.testRunId,
    // The server's estimate (an extension): absent from Trunk and from PRs not yet estimated.
    riskEstimate: typeof pr.riskEstimate === 'number' ? riskText(pr.riskEstimate) : undefined,
    readiness: pr.readiness
      ? `base matches: ${pr.readiness.doesBaseBranchMatch}, mergeability: ${pr.readiness.gitHubMergeability}` +
        (pr.readiness.requiresImpactedTargets
          ? `, impacted targets: ${pr.readiness.hasImpactedTargets ? 'yes' : 'missing'}`
          : '')
      : undefined,
    waitingFor: waitsBesidesConflict(pr).map(waitSentence).join('; ') || undefined,
    blockedBy: pr.readiness?.blockedBy,
    conflict: pr.readiness?.conflict?.message,
  };
}

/** `12 % chance its test run fails (estimated from the queue's history)`: the dashboard's figure, with what it means. */
export function riskText(estimate: number): string {
  return `${(estimate * 100).toFixed(0)} % chance its test run fails (estimated from the queue's history)`;
}

/** What the PR waits for, less the mergeability that its conflict sentence (its own row) explains. */
function waitsBesidesConflict(pr: SubmittedPullRequest) {
  return (pr.readiness?.waitingFor ?? []).filter((w) => !(w === 'mergeability' && pr.readiness?.conflict));
}

/** `, waiting for the queue, which is paused` or `, conflicts with main …: rebase on main` (empty when nothing holds the PR, or the server does not say). */
function waitsText(pr: SubmittedPullRequest): string {
  const phrases = holdPhrases(pr.readiness);
  return phrases.length ? `, ${phrases.join('; ')}` : '';
}

export interface WaitResult {
  pr: SubmittedPullRequest;
  timedOut: boolean;
  /** What only the PR's author can fix, when the wait stopped on it (src/watch/blocked.ts). */
  blocked?: string;
}

/** `, position 2 of 5, 3m 10s in queue` for a PR in the queue (empty when it is not, or the queue cannot be read). */
async function placeOf(
  client: Client,
  key: { repo: Repo; targetBranch: string; prNumber: number },
  pr: SubmittedPullRequest,
): Promise<string> {
  if (!pr.isCurrentlySubmittedToQueue) return '';
  try {
    return placeText(
      await client.call('getQueue', { repo: key.repo, targetBranch: key.targetBranch }),
      pr,
      Date.now(),
    );
  } catch {
    return '';
  }
}

/**
 * Polls a PR until merged / failed / cancelled, blocked on its author, or the timeout (the shared wait loop of
 * src/watch/wait.ts), with a spinner on stderr showing its position and time in queue, and one
 * line per state change. Transient errors (429, 5xx, network) are retried.
 */
export async function waitForPr(
  client: Client,
  key: { repo: Repo; targetBranch: string; prNumber: number },
  options: { timeoutMs: number; intervalMs: number; quiet?: boolean },
): Promise<WaitResult> {
  const { isTransientError } = await import('../client/index.js');
  const { waitForTerminal } = await import('../watch/wait.js');
  const progress = new Progress(process.stderr, 30_000, !options.quiet);
  try {
    const outcome = await waitForTerminal({
      read: () =>
        client.call('getSubmittedPullRequest', {
          repo: key.repo,
          targetBranch: key.targetBranch,
          pr: { number: key.prNumber },
        }),
      isTransient: isTransientError,
      timeoutMs: options.timeoutMs,
      intervalMs: options.intervalMs,
      // The CLI's interval is what the user asked for: no backoff beyond it.
      maxIntervalMs: options.intervalMs,
      // The outcome (merged, failed, cancelled) is printed once, by the command that waited.
      onState: (pr) => {
        if (!['merged', 'failed', 'cancelled'].includes(pr.state ?? ''))
          progress.log(`#${key.prNumber}: ${pr.state}${pr.stateReason ? ` (${pr.stateReason})` : ''}`);
      },
      onPoll: async (pr) =>
        progress.update(
          `#${key.prNumber} is ${pr.state ?? 'unknown'}${await placeOf(client, key, pr)}${waitsText(pr)}`,
        ),
      onRetry: (error) => progress.log(`#${key.prNumber}: ${(error as Error).message}; still waiting`),
    });
    if (outcome.kind === 'terminal') return { pr: outcome.pr, timedOut: false };
    if (outcome.kind === 'blocked') return { pr: outcome.pr, timedOut: false, blocked: outcome.reason };
    if (!outcome.pr) throw new Error(`#${key.prNumber}: no answer before the timeout`);
    return { pr: outcome.pr, timedOut: true };
  } finally {
    progress.stop();
  }
}
