/**
 * Freezes: windows of time in which a queue goes on testing but lands nothing except PRs whose
 * priority value is at most `freezeBypassPriority`. A window is absolute (`start`, `end`, ISO 8601
 * with a zone) or recurring (`cron`, read in UTC, and `durationMinutes` from each occurrence).
 * Everything here is UTC and takes the time as an argument: no clock, no DST.
 */
import { CronExpressionParser, type CronExpression } from 'cron-parser';
import { parseZonedTime, zonedTimeProblem } from '../contract/freezes.js';
import type { FreezeWindow, QueueConfig } from './types.js';

/** The freeze in force at a time: until when (chained windows included) and why. */
export interface ActiveFreeze {
  /** Epoch ms at which no window holds the queue any more. */
  until: number;
  /** The reason of the window that holds it now (the one ending last, with a reason), or null. */
  reason: string | null;
}

/** The most windows a queue keeps, and the longest a recurring window lasts (one year). */
export const MAX_FREEZES = 100;
export const MAX_FREEZE_MINUTES = 525_600;
/** How many chained windows `activeFreeze` follows to find the end of a freeze. */
const MAX_CHAIN = 64;

const parsed = new Map<string, CronExpression | Error>();

/** A cron expression read in UTC, parsed once per text (an Error when it is not one). */
function cronOf(text: string): CronExpression | Error {
  let out = parsed.get(text);
  if (!out) {
    try {
      out = CronExpressionParser.parse(text, { tz: 'UTC', currentDate: 0 });
    } catch (error) {
      out = error instanceof Error ? error : new Error(String(error));
    }
    if (parsed.size > 1000) parsed.clear();
    parsed.set(text, out);
  }
  return out;
}

/** What is wrong with a list of freeze windows, in one line naming the field; null when nothing. */
export function freezesProblem(freezes: readonly FreezeWindow[]): string | null {
  if (freezes.length > MAX_FREEZES) return `freezes: at most ${MAX_FREEZES} windows, got ${freezes.length}`;
  for (const [i, w] of freezes.entries()) {
    const at = `freezes[${i}]`;
    if ('cron' in w) {
      const cron = cronOf(w.cron);
      if (cron instanceof Error) return `${at}.cron: "${w.cron}" is not a cron expression (${cron.message})`;
      if (
        !Number.isInteger(w.durationMinutes) ||
        w.durationMinutes < 1 ||
        w.durationMinutes > MAX_FREEZE_MINUTES
      )
        return `${at}.durationMinutes: must be a whole number of minutes from 1 to ${MAX_FREEZE_MINUTES}`;
    } else {
      const problem = zonedTimeProblem(w.start, `${at}.start`) ?? zonedTimeProblem(w.end, `${at}.end`);
      if (problem) return problem;
      if ((parseZonedTime(w.end) as number) <= (parseZonedTime(w.start) as number))
        return `${at}: end (${w.end}) must be after start (${w.start})`;
    }
  }
  return null;
}

/** The window's span that holds `now` ([from, to) in epoch ms), or null when it does not hold it. */
function spanAt(w: FreezeWindow, now: number): { from: number; to: number } | null {
  if ('cron' in w) {
    const cron = cronOf(w.cron);
    if (cron instanceof Error) return null;
    cron.reset(new Date(now + 1)); // prev() is strictly before: an occurrence at `now` counts
    if (!cron.hasPrev()) return null;
    const from = cron.prev().getTime();
    const to = from + w.durationMinutes * 60_000;
    return now < to ? { from, to } : null;
  }
  const from = parseZonedTime(w.start);
  const to = parseZonedTime(w.end);
  if (from === null || to === null) return null;
  return from <= now && now < to ? { from, to } : null;
}

/**
 * The freeze in force at `now`, or null. Its `until` follows windows that begin before the one
 * in force ends (a freeze ends when none holds the queue any more).
 */
export function activeFreeze(freezes: readonly FreezeWindow[] | undefined, now: number): ActiveFreeze | null {
  if (!freezes?.length) return null;
  let reason: string | null = null;
  let reasonEnd = -Infinity;
  let until = now;
  for (let i = 0; i < MAX_CHAIN; i++) {
    let next = until;
    for (const w of freezes) {
      const span = spanAt(w, until);
      if (!span) continue;
      next = Math.max(next, span.to);
      if (i === 0 && w.reason && span.to > reasonEnd) {
        reason = w.reason;
        reasonEnd = span.to;
      }
    }
    if (next === until) break;
    until = next;
  }
  return until > now ? { until, reason } : null;
}

/** Whether a PR of this priority value may land at `now` (no freeze, or it bypasses freezes). */
export function landsAt(
  config: Pick<QueueConfig, 'freezes' | 'freezeBypassPriority'>,
  priorityValue: number,
  now: number,
): boolean {
  if (priorityValue <= (config.freezeBypassPriority ?? 0)) return true;
  return activeFreeze(config.freezes, now) === null;
}
