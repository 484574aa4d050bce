/**
 * `--until TIME` of the CLI's commands that set something which ends by itself (`mq queue freeze`,
 * `flaky quarantine`): a zoned ISO 8601 time or a duration from now, in one grammar and with one
 * set of messages. A time without a zone is refused rather than read in the machine's zone, and a
 * time not ahead of now is refused, so a mistyped date never sets something already over.
 */
import { parseZonedTime, zonedTimeProblem } from '../contract/freezes.js';
import { ConfigError } from '../input-error.js';

const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|min|minutes?|h|hours?|d|days?)$/i;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Milliseconds since the epoch at which `text` ends; `max` bounds how far ahead it may be ("a year"). */
export function parseUntil(
  text: string,
  flag: string,
  now: number,
  max?: { ms: number; words: string },
): number {
  const t = text.trim();
  const duration = DURATION.exec(t);
  let until: number;
  if (duration) {
    const unit = duration[2]!.toLowerCase();
    until = now + Number(duration[1]) * (UNIT_MS[unit === 'ms' ? 'ms' : unit.charAt(0)] as number);
  } else {
    const at = parseZonedTime(t);
    if (at === null) {
      const problem = zonedTimeProblem(t, flag) as string;
      throw new ConfigError(`${problem}, or a duration from now such as 90m, 2h or 3d`);
    }
    until = at;
  }
  const iso = (ms: number) => new Date(ms).toISOString();
  if (until <= now) throw new ConfigError(`${flag}: ${iso(until)} is not in the future (now ${iso(now)})`);
  if (max && until - now > max.ms)
    throw new ConfigError(`${flag}: ${iso(until)} is more than ${max.words} away`);
  return until;
}
