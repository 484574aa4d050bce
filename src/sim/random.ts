/**
 * Seeded pseudo-random numbers for the simulator: mulberry32 (32-bit state, fast, good enough
 * for queueing simulations; not for anything cryptographic). Every stream is derived from the
 * run's seed and a stream number, so changing one setting (say, the flake rate) does not reshuffle
 * which PRs are broken or when they arrive.
 */
export type Rng = () => number;

/** A hash of (seed, stream) to a 32-bit state (splitmix32-style finaliser). */
function mix(seed: number, stream: number): number {
  let h = (Math.imul(seed | 0, 0x9e3779b1) ^ Math.imul(stream + 1, 0x85ebca6b)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d);
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b);
  return (h ^ (h >>> 16)) >>> 0;
}

/** Uniform numbers in [0, 1). */
export function rng(seed: number, stream = 0): Rng {
  let a = mix(seed, stream);
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An exponentially distributed number with the given rate (mean 1/rate). */
export function exponential(random: Rng, rate: number): number {
  return -Math.log(1 - random()) / rate;
}
