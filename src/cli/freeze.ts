/**
 * `mq queue freeze` and `unfreeze`: reading `--until` (a zoned ISO 8601 time or a duration from
 * now) and the freeze windows the queue keeps after a freeze is added or lifted.
 */
import { parseZonedTime, zonedTimeProblem } from '../contract/freezes.js';
import type { FreezeWindowInput } from '../contract/mq.js';
import { ConfigError } from './config.js';

const DURATION = /^(\d+(?:\.\d+)?)\s*(m|min|minutes?|h|hours?|d|days?)$/i;
const UNIT_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };
/** A freeze set from the CLI lasts at most a year. */
const MAX_FREEZE_MS = 366 * 86_400_000;

/** `--until`: `2026-12-24T18:00:00Z`, `2026-12-24T19:00+01:00`, or a duration from now (`90m`, `2h`, `3d`). */
export function parseUntil(text: string, now: number): number {
  const t = text.trim();
  const duration = DURATION.exec(t);
  let until: number;
  if (duration) {
    until = now + Number(duration[1]) * (UNIT_MS[duration[2]!.charAt(0).toLowerCase()] as number);
  } else {
    const at = parseZonedTime(t);
    if (at === null) {
      const problem = zonedTimeProblem(t, '--until') as string;
      throw new ConfigError(`${problem}, or a duration from now such as 90m, 2h or 3d`);
    }
    until = at;
  }
  if (until <= now)
    throw new ConfigError(
      `--until: ${new Date(until).toISOString()} is not in the future (now ${new Date(now).toISOString()})`,
    );
  if (until - now > MAX_FREEZE_MS)
    throw new ConfigError(`--until: ${new Date(until).toISOString()} is more than a year away`);
  return until;
}

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
