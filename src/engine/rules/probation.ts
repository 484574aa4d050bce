/**
 * Probation (queue setting `probationThreshold`, docs/decisions.md): a pending PR whose
 * `riskEstimate` is above the threshold is first tested alone on the target, off the main line, on
 * the bisection slots — a probation group of one, which the bisection rules (bisection.ts) start,
 * judge and release like any other group. If it fails, it fails alone and nothing in the line was
 * built on it. If it passes, it lands at once when its commit is still the target plus itself and
 * nothing of the line in its lane is in flight; otherwise it joins the line (`PROBATION_PASSED`)
 * and is batched and tested there like the others. A PR split out of a failed batch, or one that
 * passed its probation in this submission, is not put on probation (again), nor is a PR of a stack
 * (stacks.ts: a stack is tested whole).
 */
import type { WorkingCopy } from '../working-copy.js';
import { Stacks } from './stacks.js';

/** Whether a PR with this estimate is tested alone first under `threshold`. */
export const needsProbation = (threshold: number | null, riskEstimate: number | null | undefined): boolean =>
  threshold !== null && riskEstimate !== null && riskEstimate !== undefined && riskEstimate > threshold;

/** Puts pending PRs above the threshold on probation: each becomes a group of one, tested off the line. */
export function startProbation(w: WorkingCopy): void {
  const threshold = w.config.probationThreshold;
  if (threshold === null) return;
  let stacks: Stacks | undefined;
  for (const e of w.entries) {
    if (e.state !== 'pending' || e.bisectGroup || e.bisected || e.probation) continue;
    if ((stacks ??= new Stacks(w.entries)).stacked(e)) continue;
    if (!needsProbation(threshold, e.riskEstimate)) continue;
    w.setState(e, 'pending', 'PROBATION_REQUIRED', {
      bisectGroup: w.ctx.newId(),
      bisectKnownFailure: null,
      probation: 'testing',
    });
  }
}
