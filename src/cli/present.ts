import type { QueueListItem, SubmittedPullRequest } from '../contract/index.js';
import type { Client } from '../client/index.js';
import type { Repo } from '../contract/index.js';
import { formatDuration } from '../watch/board.js';
import { Progress } from './progress.js';
import type { Column } from './render.js';

export const repoLabel = (repo: Repo) => `${repo.host}/${repo.owner}/${repo.name}`;

export const prColumns: Column<QueueListItem>[] = [
  { header: 'PR', get: (p) => `#${p.prNumber}` },
  { header: 'State', get: (p) => p.state ?? '' },
  { header: 'Reason', get: (p) => p.stateReason ?? '' },
  { header: 'Priority', get: (p) => `${p.priorityName} (${p.priorityValue})` },
  { header: 'Title', get: (p) => p.prTitle },
  { header: 'Author', get: (p) => p.prAuthor },
  { header: 'SHA', get: (p) => p.prSha.slice(0, 12) },
  { header: 'Since', get: (p) => p.stateChangedAt },
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
    since: pr.stateChangedAt,
    priority: `${pr.priorityName} (${pr.priorityValue})`,
    inQueue: pr.isCurrentlySubmittedToQueue,
    testRunId: pr.testRunId,
    readiness: pr.readiness
      ? `base matches: ${pr.readiness.doesBaseBranchMatch}, mergeability: ${pr.readiness.gitHubMergeability}` +
        (pr.readiness.requiresImpactedTargets ? `, impacted targets: ${pr.readiness.hasImpactedTargets ? 'yes' : 'missing'}` : '')
      : undefined,
  };
}

const TERMINAL = new Set(['merged', 'failed', 'cancelled']);

export interface WaitResult {
  pr: SubmittedPullRequest;
  timedOut: boolean;
}

/** `, position 2 of 5, 3m 10s in queue` for a PR in the queue (empty when it is not, or the queue cannot be read). */
async function placeOf(client: Client, key: { repo: Repo; targetBranch: string; prNumber: number }, pr: SubmittedPullRequest | null): Promise<string> {
  if (!pr || !pr.isCurrentlySubmittedToQueue) return '';
  const since = formatDuration(Date.now() - Date.parse(pr.enqueuedAt ?? pr.stateChangedAt));
  try {
    const queue = await client.call('getQueue', { repo: key.repo, targetBranch: key.targetBranch });
    const at = queue.enqueuedPullRequests.findIndex((p) => p.prNumber === key.prNumber);
    return at < 0 ? `, ${since} in queue` : `, position ${at + 1} of ${queue.enqueuedPullRequests.length}, ${since} in queue`;
  } catch {
    return `, ${since} in queue`;
  }
}

/**
 * Polls a PR until merged / failed / cancelled or the timeout, with a spinner on stderr and one
 * line per state change. Transient errors (429, 5xx, network) are retried by the client.
 */
export async function waitForPr(
  client: Client,
  key: { repo: Repo; targetBranch: string; prNumber: number },
  options: { timeoutMs: number; intervalMs: number; quiet?: boolean },
): Promise<WaitResult> {
  const { isTransientError } = await import('../client/index.js');
  const progress = new Progress(process.stderr, 30_000, !options.quiet);
  const deadline = Date.now() + options.timeoutMs;
  let last = '';
  let pr: SubmittedPullRequest | null = null;
  try {
    for (;;) {
      try {
        pr = await client.call('getSubmittedPullRequest', { repo: key.repo, targetBranch: key.targetBranch, pr: { number: key.prNumber } });
        const stateKey = `${pr.state}|${pr.stateReason ?? ''}`;
        if (stateKey !== last) {
          last = stateKey;
          progress.log(`#${key.prNumber}: ${pr.state}${pr.stateReason ? ` (${pr.stateReason})` : ''}`);
        }
        if (pr.state && TERMINAL.has(pr.state)) return { pr, timedOut: false };
      } catch (error) {
        if (!isTransientError(error)) throw error;
        progress.log(`#${key.prNumber}: ${(error as Error).message}; still waiting`);
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        if (!pr) throw new Error(`#${key.prNumber}: no answer before the timeout`);
        return { pr, timedOut: true };
      }
      progress.update(`#${key.prNumber} is ${pr?.state ?? 'unknown'}${await placeOf(client, key, pr)}`);
      await new Promise((r) => setTimeout(r, Math.min(options.intervalMs, remaining)));
    }
  } finally {
    progress.stop();
  }
}
