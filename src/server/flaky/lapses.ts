/**
 * Quarantine overrides that end: an override set `--until` a time lapses by itself at that time
 * (every read goes by overrideAt, src/flaky/quarantine.ts), and this announces it. LapseSweeper
 * looks every 30 s (by default) for overrides whose end has come and were not announced, and for
 * each writes the `test_case.quarantining_setting_changed` event (the lapsed setting →
 * UNSPECIFIED) and marks it announced, in one transaction with a conditional mark
 * (src/store/flaky-lapses.ts): on replicas sharing a database each end is announced by one of
 * them, and after a restart it is neither announced again nor lost. Setting an override over one
 * that lapsed unannounced announces the lapse first, in the same transaction (queries.ts).
 */
import { isoTime } from '../../contract/index.js';
import type { CaseRow, FlakyStore } from '../../store/flaky.js';
import type { OutboxEvent } from '../../store/index.js';
import type { Links } from '../links.js';
import { quarantineEvent } from '../webhooks/flaky-events.js';
import { statusOf } from './present.js';
import { toRepository, type Repository } from './repositories.js';

/** How often the server looks for overrides whose end has come (ms). */
export const DEFAULT_LAPSE_SWEEP_MS = 30_000;
/** Who the event says changed the setting. */
export const LAPSE_ACTOR = 'Railyard (override ended)';
/** Lapses announced per transaction. */
const BATCH = 200;

/** Whether `row`'s override has ended by `now` and its end was not announced. */
export function lapsedUnannounced(row: CaseRow, now: number): boolean {
  return (
    row.override !== null &&
    row.override_until !== null &&
    row.override_until <= now &&
    row.override_lapse_sent === null
  );
}

/** The event of `test`'s override ending: from the setting it had to UNSPECIFIED, at its end. */
function lapseEvent(links: Links, repository: Repository, test: CaseRow, now: number): OutboxEvent {
  const until = test.override_until!;
  const status = statusOf(test, now);
  // What it was set for, as the person said it: "(set by alice: KAN-9)", "(set by alice)", "(KAN-9)".
  const owner = test.override_owner ? `set by ${test.override_owner}` : '';
  const about = [owner, test.override_reason].filter(Boolean).join(': ');
  return quarantineEvent(
    links,
    repository,
    test,
    { value: status.value, reason: status.reason, at: status.since },
    test.override!,
    'UNSPECIFIED',
    until,
    { actor: LAPSE_ACTOR, reason: `the override ended at ${isoTime(until)}${about ? ` (${about})` : ''}` },
  );
}

/**
 * In the transaction of `tx`: marks each test's lapse announced unless it is already (or the
 * override changed meanwhile), and writes the event of each one this marked. Returns how many.
 */
export async function announceLapses(
  tx: FlakyStore,
  links: Links,
  lapses: ReadonlyArray<{ test: CaseRow; repository: Repository }>,
  now: number,
): Promise<number> {
  const byOrg = new Map<string, OutboxEvent[]>();
  for (const { test, repository } of lapses) {
    if (test.override === null || test.override_until === null) continue;
    if (!(await tx.lapses.claim(test.id, test.override, test.override_until))) continue;
    const events = byOrg.get(repository.org) ?? [];
    events.push(lapseEvent(links, repository, test, now));
    byOrg.set(repository.org, events);
  }
  let count = 0;
  for (const [org, events] of byOrg) {
    await tx.writeWebhookEvents(org, events);
    count += events.length;
  }
  return count;
}

/** Announces lapsed overrides every `intervalMs`, from `start` (a first look at once) until `close`. */
export class LapseSweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;

  constructor(
    private readonly store: FlakyStore,
    private readonly now: () => number,
    private readonly links: Links,
    private readonly intervalMs: number = DEFAULT_LAPSE_SWEEP_MS,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {}

  /** Starts sweeping: at once (ends that came while no server ran), then every interval. */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  /** Stops sweeping; resolves once a sweep in progress has ended (no timer is left). */
  async close(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** Announces every lapse due now; returns how many this sweep announced. */
  async sweep(): Promise<number> {
    let total = 0;
    for (;;) {
      const now = this.now();
      const due = await this.store.lapses.due(now, BATCH);
      if (due.length === 0) return total;
      const repositories = new Map<string, Repository>();
      const lapses = due.map(({ test, repository }) => {
        let found = repositories.get(repository.id);
        if (!found) repositories.set(repository.id, (found = toRepository(repository)));
        return { test, repository: found };
      });
      const announced = await this.store.transaction((tx) => announceLapses(tx, this.links, lapses, now));
      total += announced;
      // A short batch was the last; a batch of which nothing was announced was taken by another server.
      if (due.length < BATCH || announced === 0) return total;
    }
  }

  private schedule(delayMs: number): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.sweep()
        .then(
          () => undefined,
          (error: unknown) => this.onError(error),
        )
        .finally(() => {
          this.running = undefined;
          if (!this.stopped) this.schedule(this.intervalMs);
        });
    }, delayMs);
    this.timer.unref();
  }
}
