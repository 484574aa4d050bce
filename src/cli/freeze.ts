/**
 * `mq queue freeze` and `unfreeze`: the freeze windows the queue keeps after a freeze is added or lifted.
 */
import type { FreezeWindowInput } from '../contract/mq.js';

/** A freeze set from the CLI lasts at most a year. */
export const MAX_FREEZE_MS = 366 * 86_400_000;

const isAbsolute = (w: FreezeWindowInput): w is Extract<FreezeWindowInput, { start: string }> => 'start' in w;

/** The windows after `freeze`: those that have not ended, plus now..until. */
export function withFreeze(
  windows: readonly FreezeWindowInput[],
  now: number,
  until: number,
  reason?: string,
): FreezeWindowInput[] {
  const kept = windows.filter((w) => !isAbsolute(w) || Date.parse(w.end) > now);
  const added: FreezeWindowInput = { start: new Date(now).toISOString(), end: new Date(until).toISOString() };
  if (reason !== undefined && reason.trim() !== '') added.reason = reason.trim();
  return [...kept, added];
}

/**
 * The windows after `unfreeze`: the absolute windows holding the queue now (or ended) go, those
 * still to come and the recurring ones stay.
 */
export function withoutFreeze(windows: readonly FreezeWindowInput[], now: number): FreezeWindowInput[] {
  return windows.filter((w) => !isAbsolute(w) || Date.parse(w.start) > now);
}
