/**
 * The testing timeout a queue applies: `testingTimeoutMinutes` as set, or with "auto" one that
 * follows the queue's CI — the 95th percentile of its last passing runs times 1.5, at least 10
 * minutes, and 60 minutes until 10 runs have passed. The durations of the last passing runs are
 * kept with the queue's config (`recentPassedRunMs`). How long those minutes last is the server's
 * one setting (`serve --testing-minute-seconds`: 60 but in tests and demos).
 */
import type { QueueConfig } from './types.js';

/** How many passing runs "auto" reads, and how many it needs before it trusts them. */
export const AUTO_TIMEOUT_SAMPLES = 50;
export const AUTO_TIMEOUT_MIN_SAMPLES = 10;
/** "auto" before it has AUTO_TIMEOUT_MIN_SAMPLES runs; its floor; the factor over the p95. */
export const AUTO_TIMEOUT_DEFAULT_MINUTES = 60;
export const AUTO_TIMEOUT_FLOOR_MINUTES = 10;
export const AUTO_TIMEOUT_FACTOR = 1.5;

/** The length of a minute of testingTimeoutMinutes in ms: 60 000, or what `railyard serve` was told. */
let minuteMs = 60_000;

/**
 * Sets how long a minute of testingTimeoutMinutes lasts in this process (`serve
 * --testing-minute-seconds`, set once at start), so that tests and demos see a run time out in
 * seconds while every setting and text still speaks of minutes.
 */
export function setTestingMinuteMs(ms: number): void {
  if (!Number.isFinite(ms) || ms <= 0)
    throw new Error(`a testing minute must last a positive time, not ${ms} ms`);
  minuteMs = ms;
}

/** A testing timeout in ms as the minutes people see (rounded). */
export function inTestingMinutes(ms: number): number {
  return Math.round(ms / minuteMs);
}

/** The nearest-rank 95th percentile of a non-empty list. */
function p95(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.ceil(0.95 * sorted.length) - 1] as number;
}

/** The timeout of the queue's runs in ms (0: none). */
export function testingTimeoutMs(
  config: Pick<QueueConfig, 'testingTimeoutMinutes' | 'recentPassedRunMs'>,
): number {
  if (config.testingTimeoutMinutes !== 'auto') return config.testingTimeoutMinutes * minuteMs;
  const samples = config.recentPassedRunMs ?? [];
  if (samples.length < AUTO_TIMEOUT_MIN_SAMPLES) return AUTO_TIMEOUT_DEFAULT_MINUTES * minuteMs;
  return Math.max(AUTO_TIMEOUT_FLOOR_MINUTES * minuteMs, Math.ceil(p95(samples) * AUTO_TIMEOUT_FACTOR));
}

/** The config with a passing run's duration added to the samples (the oldest dropped past AUTO_TIMEOUT_SAMPLES). */
export function withPassedRun(config: QueueConfig, durationMs: number): QueueConfig {
  const samples = [...(config.recentPassedRunMs ?? []), Math.max(0, durationMs)];
  return { ...config, recentPassedRunMs: samples.slice(-AUTO_TIMEOUT_SAMPLES) };
}
