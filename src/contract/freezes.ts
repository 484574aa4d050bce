/**
 * Freezes in the contract: the queue settings `freezes` and `freezeBypassPriority` as updateQueue
 * takes them and the queue object shows them (with `frozen`), and the times windows are written
 * in: ISO 8601 with a zone (Z or an offset), read as an instant, so a window never moves with
 * daylight saving. The times are read by the server's checks and the CLI's `mq queue freeze --until`.
 */
import { z } from 'zod';
import { looseInt, ShortString } from './common.js';

const ext = <T extends z.ZodType>(schema: T, description: string): T =>
  schema.meta({ 'x-railyard-extension': true, description });

/** A freeze window as updateQueue takes it: absolute (ISO 8601 with a zone) or recurring (cron, UTC). */
export const FreezeWindowInput = z.union([
  z.strictObject({ start: ShortString, end: ShortString, reason: ShortString.optional() }),
  z.strictObject({
    cron: ShortString,
    durationMinutes: looseInt(1, 525_600),
    reason: ShortString.optional(),
  }),
]);
export type FreezeWindowInput = z.infer<typeof FreezeWindowInput>;

/** The updateQueue (and createQueue) fields of freezes. */
export const FreezeSettingsInput = {
  freezes: ext(
    z.array(FreezeWindowInput).max(100).optional(),
    'Windows in which the queue tests but lands only PRs of priority ≤ freezeBypassPriority: { start, end } (ISO 8601 with a zone) or { cron, durationMinutes } (UTC); the list replaces the one before',
  ),
  freezeBypassPriority: ext(
    looseInt(0, 255).optional(),
    'PRs of this priority value or lower land during a freeze (default 0)',
  ),
};

/** The queue object's fields of freezes. */
export const FreezeSettingsOutput = {
  freezes: ext(
    z.array(
      z.union([
        z.object({ start: z.string(), end: z.string(), reason: z.string().optional() }),
        z.object({ cron: z.string(), durationMinutes: z.number(), reason: z.string().optional() }),
      ]),
    ),
    'Freeze windows: the queue tests but lands only PRs of priority ≤ freezeBypassPriority',
  ),
  freezeBypassPriority: ext(z.number(), 'PRs of this priority value or lower land during a freeze'),
  frozen: ext(
    z.object({ until: z.string(), reason: z.string().optional() }).optional(),
    'While a freeze window holds the queue: until when (chained windows included) and why',
  ),
};

const ISO_ZONED = /^\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d(?::?\d\d)?)$/i;
const HAS_ZONE = /(?:Z|[+-]\d\d(?::?\d\d)?)$/i;

/** An ISO 8601 time with its zone as epoch ms; null when it is not one. */
export function parseZonedTime(text: string): number | null {
  const t = text.trim();
  if (!ISO_ZONED.test(t)) return null;
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? null : ms;
}

/** What is wrong with a time of a freeze (`where` names the field or flag); null when it is a zoned ISO 8601 time. */
export function zonedTimeProblem(text: string, where: string): string | null {
  if (parseZonedTime(text) !== null) return null;
  if (/^\d{4}-\d\d-\d\d/.test(text.trim()) && !Number.isNaN(Date.parse(text)) && !HAS_ZONE.test(text.trim()))
    return `${where}: "${text}" has no time zone: add Z for UTC (2026-12-24T18:00:00Z) or an offset (+01:00)`;
  return `${where}: "${text}" is not an ISO 8601 time such as 2026-12-24T18:00:00Z`;
}
