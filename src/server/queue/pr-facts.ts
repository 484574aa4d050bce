/** A forge's facts of a PR as the engine takes them, and whether two reads of them differ. */
import type { PrFacts } from '../../engine/index.js';
import type { ForgePrFacts } from '../../forge/types.js';

/** The engine's part of a forge's facts: how a closed PR ended becomes `merged`. */
export function engineFacts(f: ForgePrFacts): PrFacts {
  const { closedAs, ...facts } = f;
  return closedAs === 'merged' ? { ...facts, merged: true } : facts;
}

/** Whether two reads of a PR say the same (a refresh that changes nothing writes nothing). */
export function sameFacts(a: PrFacts, b: PrFacts): boolean {
  return (
    a.headSha === b.headSha &&
    a.headBranch === b.headBranch &&
    a.title === b.title &&
    a.author === b.author &&
    a.baseBranch === b.baseBranch &&
    a.mergeability === b.mergeability &&
    a.open === b.open &&
    (a.blockedBy ?? '') === (b.blockedBy ?? '') &&
    a.stackedOn === b.stackedOn &&
    JSON.stringify(a.conflict ?? null) === JSON.stringify(b.conflict ?? null)
  );
}
