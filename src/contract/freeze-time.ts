/**
 * The times freezes are written in: ISO 8601 with a zone (Z or an offset), read as an instant,
 * so a window never moves with daylight saving. Shared by the server's checks of freeze windows
 * and the CLI's `mq queue freeze --until`.
 */

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
