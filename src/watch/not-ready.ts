/**
 * The pull requests that wait outside a queue (`not_ready`), each with what holds it (a conflict
 * with its base, branch rules, impacted targets): `mq queue get` and the dashboard's queue page
 * list them under the queue, which holds only admitted PRs. Shared by the CLI and the dashboard
 * (no oclif, no Node-only modules).
 */
import type { ListPullRequestsResponse, SubmittedPullRequest } from '../contract/index.js';
import { holdPhrases } from './notices.js';

export interface NotReadyPr {
  prNumber: number;
  prTitle: string;
  prAuthor: string;
  /** What holds it, in words. */
  why: string;
}

/** How many not-ready PRs are read one by one (a PR's readiness is only in its own answer). */
export const NOT_READY_READ = 50;

/** What holds a not-ready PR, in one line (its readiness, else its state reason). */
export function notReadyWhy(pr: SubmittedPullRequest): string {
  return holdPhrases(pr.readiness).join('; ') || pr.stateReason || 'not ready yet';
}

/** The not-ready PRs of a queue (at most NOT_READY_READ, `more` counts the rest seen), by PR number. */
export async function notReadyPrs(api: {
  list: () => Promise<ListPullRequestsResponse>;
  get: (prNumber: number) => Promise<SubmittedPullRequest>;
}): Promise<{ prs: NotReadyPr[]; more: number }> {
  const listed = (await api.list()).pullRequests.filter((p) => p.state === 'not_ready');
  const numbers = [...new Set(listed.map((p) => p.prNumber))].sort((a, b) => a - b);
  const read = await Promise.all(numbers.slice(0, NOT_READY_READ).map((n) => api.get(n).catch(() => null)));
  const prs = read
    .filter((pr): pr is SubmittedPullRequest => pr !== null && pr.state === 'not_ready')
    .map((pr) => ({
      prNumber: pr.prNumber,
      prTitle: pr.prTitle,
      prAuthor: pr.prAuthor,
      why: notReadyWhy(pr),
    }));
  return { prs, more: Math.max(0, numbers.length - NOT_READY_READ) };
}
