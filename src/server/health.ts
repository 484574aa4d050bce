/**
 * What `GET /v1/status` says about the database: it answered "All systems
 * operational" while PostgreSQL was down and every other request got 503. The answer comes from a
 * cached probe (`select 1`), never from a query made for the status request itself: a monitor
 * asking every second costs one probe per `intervalMs` at most, and a database that hangs makes
 * the status say so after `timeoutMs` instead of making the status hang with it. Requests that
 * find the database unavailable mark it down at once (markDown); the next probe that succeeds
 * marks it up.
 */
import type { StatusResponse } from '../contract/index.js';

export interface HealthOptions {
  /** How old the last probe may be before a status request starts another (ms). */
  intervalMs: number;
  /** A probe not answered within this is a database that is down (ms). */
  timeoutMs: number;
}

export const DEFAULT_HEALTH: HealthOptions = { intervalMs: 2_000, timeoutMs: 2_000 };

const UP: StatusResponse = {
  overallStatus: { type: 'up', color: 'green', overallStatusDescription: 'All systems operational' },
  statuses: [
    { name: 'Merge queue API', color: 'green', statusDescription: 'Operational' },
    { name: 'Flaky tests API', color: 'green', statusDescription: 'Operational' },
  ],
};

export class DatabaseHealth {
  private down: string | null = null;
  private checkedAt = -Infinity;
  private probing: Promise<void> | null = null;

  constructor(
    private readonly ping: () => Promise<void>,
    private readonly now: () => number = Date.now,
    private readonly options: HealthOptions = DEFAULT_HEALTH,
  ) {}

  /** A request found the database unavailable: the status says so until a probe succeeds. */
  markDown(reason: string): void {
    this.down = reason;
    this.checkedAt = this.now();
  }

  /** The status to answer now (never waits for the database); starts a probe when the last is old. */
  status(): { httpStatus: 200 | 503; body: StatusResponse } {
    if (!this.probing && this.now() - this.checkedAt >= this.options.intervalMs) this.probe();
    if (this.down === null) return { httpStatus: 200, body: UP };
    const impacted = (name: string) => ({ name, color: 'red' as const, statusDescription: `Unavailable: ${this.down}` });
    const statuses = UP.statuses.map((s) => impacted(s.name));
    return {
      httpStatus: 503,
      body: {
        overallStatus: { type: 'impacted', color: 'red', overallStatusDescription: 'Impacted', impactedStatuses: statuses },
        statuses,
      },
    };
  }

  /** Waits for the probe in flight, if any (tests, and a clean shutdown). */
  async settled(): Promise<void> {
    await this.probing;
  }

  private probe(): void {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the database did not answer within ${this.options.timeoutMs} ms`)),
        this.options.timeoutMs,
      );
      timer.unref();
    });
    this.probing = Promise.race([this.ping(), timedOut])
      .then(
        () => {
          this.down = null;
        },
        (error: unknown) => {
          this.down = `the database is unreachable (${oneReason(error)})`;
        },
      )
      .finally(() => {
        clearTimeout(timer);
        this.checkedAt = this.now();
        this.probing = null;
      });
  }
}

/** A short reason from a driver error (the first line, without addresses' secrets: no URL is in these). */
function oneReason(error: unknown): string {
  const e = error as { code?: string; message?: string; errors?: unknown[] };
  if (e?.code) return e.code;
  if (e instanceof AggregateError && e.errors.length) return oneReason(e.errors[0]);
  return String(e?.message ?? error).split('\n')[0]!.slice(0, 200);
}
