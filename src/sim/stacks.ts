/**
 * Stacked PRs in `railyard sim` (--stack-share, --stack-depth): which arrivals bring a stack and
 * how deep, and the figures of the stacks (landed whole, landed partly). The engine tests and
 * lands each stack as one unit (src/engine/rules/stacks.ts); these figures check that it did.
 */
import type { StackSimFigures, StackSimOptions } from './options.js';
import { rng } from './random.js';

export class SimStacks {
  readonly on: boolean;
  /** PRs per arrival on average: arrivals come at `arrivalRate / prsPerArrival`, keeping `arrivalRate` PRs an hour. */
  readonly prsPerArrival: number;
  private readonly chance: number;
  private readonly min: number;
  private readonly max: number;
  private readonly random: () => number;
  /** Per stack: its PRs (bottom first) and when each merged. */
  private readonly stacks: { prs: number[]; mergedAt: Map<number, number> }[] = [];

  constructor(options: StackSimOptions, seed: number) {
    this.on = options.stackShare !== undefined;
    [this.min, this.max] = options.stackDepth ?? [2, 3];
    const depth = (this.min + this.max) / 2;
    // An arrival brings a stack with this probability, so that `stackShare` of the PRs are in stacks.
    const share = options.stackShare ?? 0;
    this.chance = share > 0 ? share / (share + depth * (1 - share)) : 0;
    this.prsPerArrival = 1 + this.chance * (depth - 1);
    this.random = rng(seed, 6);
  }

  /** How many PRs the next arrival brings (1: a PR alone). */
  nextDepth(): number {
    if (!this.on || this.random() >= this.chance) return 1;
    return this.min + Math.floor(this.random() * (this.max - this.min + 1));
  }

  /** A new stack; its number. */
  begin(): number {
    this.stacks.push({ prs: [], mergedAt: new Map() });
    return this.stacks.length - 1;
  }

  add(stack: number, prNumber: number): void {
    this.stacks[stack]!.prs.push(prNumber);
  }

  merged(stack: number, prNumber: number, now: number): void {
    this.stacks[stack]!.mergedAt.set(prNumber, now);
  }

  figures(): StackSimFigures {
    const s = this.stacks;
    const oneMerge = (x: (typeof s)[number]) => new Set(x.mergedAt.values()).size === 1;
    return {
      stacks: s.length,
      prsInStacks: s.reduce((n, x) => n + x.prs.length, 0),
      stacksLanded: s.filter((x) => x.mergedAt.size === x.prs.length && oneMerge(x)).length,
      stacksLandedPartly: s.filter(
        (x) => x.mergedAt.size > 0 && (x.mergedAt.size < x.prs.length || !oneMerge(x)),
      ).length,
    };
  }
}
