/** What the `railyard webhook` commands share: checking event names, readable delivery errors and retry times. */
import { EVENT_TYPES } from '../contract/webhook-events.js';
import { ConfigError } from './config.js';
import { closest } from './did-you-mean.js';
import { ago, localTime } from './render.js';

/**
 * Refuses an event name the server does not know, in one line: the name meant when one is near
 * (`pull_request.cancelled` → Trunk's spelling `pull_request.canceled`), else where the list is.
 */
export function checkEvents(events: readonly string[]): void {
  for (const event of events) {
    if (EVENT_TYPES.includes(event)) continue;
    const hit = nearest(event.replace(/cancelled/i, 'canceled')) ?? nearest(event);
    throw new ConfigError(
      hit
        ? `--event: unknown event "${event}" (did you mean ${hit.name}?${/cancell?ed/i.test(event) ? ' Trunk spells it "canceled"' : ''})`
        : `--event: unknown event "${event}" (${families()}; docs/webhooks.md lists them)`,
    );
  }
}

/** The event meant by a typo: near as a whole, and within a typo of its last word (`exploded` is no `failed`). */
function nearest(event: string): { name: string } | undefined {
  const hit = closest(event, EVENT_TYPES);
  const action = event.slice(event.lastIndexOf('.') + 1);
  return hit && hit.distance <= Math.max(1, Math.floor(action.length / 3)) ? hit : undefined;
}

/** `pull_request.*, test_case.*, …, webhook.test`: the kinds of event, in a few words (a prefix that several share, as `.*`). */
function families(): string {
  const prefix = (e: string) => e.slice(0, e.lastIndexOf('.') + 1);
  const shared = (e: string) => EVENT_TYPES.filter((o) => prefix(o) === prefix(e)).length > 1;
  return [...new Set(EVENT_TYPES.map((e) => (shared(e) ? `${prefix(e)}*` : e)))].join(', ');
}

/**
 * A delivery's error as a person reads it: its first line without the OpenSSL location, and what
 * it means when it is a known TLS mismatch (an https:// URL answered in plain HTTP).
 */
export function deliveryErrorText(error: string): string {
  if (
    /wrong version number|ssl3_get_record|packet length too long|http request/i.test(error) &&
    /ssl|tls|EPROTO/i.test(error)
  ) {
    return 'TLS failed: the receiver answered in plain HTTP (give an http:// URL, or serve HTTPS)';
  }
  const first = error.replace(/\\n/g, '\n').split('\n')[0]!.trim();
  return first.replace(/:[^:\s]*\.c:\d+:?$/, '');
}

/**
 * `pending (next 17:40:03, in 2 minutes)`: the time of day while the attempt is less than a day
 * ahead (past midnight too: "in 1 hour" says which day), the date with it beyond; a next attempt
 * that is already past reads `due now`.
 */
export function pendingText(nextAttemptAt: string, now = Date.now()): string {
  const at = Date.parse(nextAttemptAt);
  if (Number.isNaN(at)) return 'pending';
  if (at <= now) return 'pending (next attempt due now)';
  const local = localTime(nextAttemptAt);
  const withinADay = at - now < 86_400_000;
  return `pending (next ${withinADay ? local.slice(11) : local}, ${ago(nextAttemptAt, now)})`;
}
