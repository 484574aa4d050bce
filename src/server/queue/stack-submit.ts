/**
 * Submitting a stacked PR: the PRs below it (each based on the head branch of the next one down,
 * as the forge reports with `stackedOn`) are read from the forge, bottom first, down to the one
 * based on the queue's branch. Submitting the PR submits those of them not queued yet, so the
 * engine (rules/stacks.ts) tests and lands the stack as one unit.
 */
import type { ForgePrFacts } from '../../forge/types.js';
import { badRequest } from '../errors.js';

/** The most PRs below one PR that a submission follows: deeper stacks are refused, as are cycles. */
export const MAX_STACK_DEPTH = 50;

/** One PR of a stack, with its facts as the forge reads them. */
export interface StackMember {
  prNumber: number;
  facts: ForgePrFacts;
}

/**
 * The PRs below `prNumber` (whose facts are `facts`), bottom first: empty when it is stacked on
 * no other PR. Refuses (400) a stack on a closed PR, a cycle, and a stack deeper than MAX_STACK_DEPTH.
 */
export async function stackBelow(
  prNumber: number,
  facts: ForgePrFacts,
  read: (prNumber: number) => Promise<ForgePrFacts>,
): Promise<StackMember[]> {
  const below: StackMember[] = [];
  const seen = new Set([prNumber]);
  let at: StackMember = { prNumber, facts };
  while (at.facts.stackedOn !== undefined && at.facts.stackedOn !== null) {
    const next = at.facts.stackedOn;
    if (seen.has(next))
      throw badRequest(
        `pull request #${prNumber}: its stack goes round in a circle (#${at.prNumber} is based on #${next}): change a base branch`,
      );
    if (below.length >= MAX_STACK_DEPTH)
      throw badRequest(
        `pull request #${prNumber} is stacked more than ${MAX_STACK_DEPTH} pull requests deep: submit a lower one first, or shorten the stack`,
      );
    seen.add(next);
    const nextFacts = await read(next);
    if (!nextFacts.open)
      throw badRequest(
        `pull request #${prNumber}: #${at.prNumber} is based on #${next}, which is ${nextFacts.closedAs ?? 'closed'}: change the base of #${at.prNumber}`,
      );
    at = { prNumber: next, facts: nextFacts };
    below.unshift(at);
  }
  return below;
}

/** How a stack reads for people, bottom first: `stack of 3: #4 ← #5 ← #6`. */
export function describeStack(prNumbers: readonly number[]): string {
  return `stack of ${prNumbers.length}: ${prNumbers.map((n) => `#${n}`).join(' ← ')}`;
}
