/**
 * The doctor: what keeps a queue from working that a person has to fix, one sentence each —
 * required checks that never report on the queue's test commits, a queue paused for long, PRs
 * not ready for long (and why), and what the forge's credentials may not do (the driver's doctor
 * role). Read-only; `getMergeQueueDoctor` answers it, `mq doctor` and the dashboard show it.
 */
import {
  DOCTOR_CHECK_WINDOW_DAYS,
  DOCTOR_CHECK_WINDOW_RUNS,
  DOCTOR_NOT_READY_HOURS,
  DOCTOR_PAUSED_MINUTES,
  isoTime,
  type DoctorNotice,
} from '../../contract/index.js';
import {
  activeFreeze,
  inTestingMinutes,
  readinessOf,
  testingTimeoutMs,
  type QueueModel,
  type TestRun,
} from '../../engine/index.js';
import { holdPhrases } from '../../watch/notices.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** `45 min`, `3 h 5 min`, `2 days`: how long, for people. */
export function span(ms: number): string {
  if (ms < HOUR) return `${Math.max(1, Math.round(ms / MINUTE))} min`;
  if (ms < 2 * DAY) {
    const h = Math.floor(ms / HOUR);
    const m = Math.round((ms - h * HOUR) / MINUTE);
    return m ? `${h} h ${m} min` : `${h} h`;
  }
  return `${Math.floor(ms / DAY)} days`;
}

/**
 * The finished test runs the doctor judges required checks by: those of the last 7 days, and at
 * least the last 10 (a quiet queue), newest first. Only runs that tell something count: a check
 * reported on them, or they failed waiting (timeout) or for a required check the repository lacks.
 */
function judgedRuns(runs: readonly TestRun[], now: number): TestRun[] {
  const finished = runs.filter((r) => r.status !== 'in_progress').sort((a, b) => b.startedAt - a.startedAt);
  const recent = finished.filter((r) => r.startedAt >= now - DOCTOR_CHECK_WINDOW_DAYS * DAY).length;
  return finished.slice(0, Math.max(recent, DOCTOR_CHECK_WINDOW_RUNS));
}

function telling(run: TestRun): boolean {
  return (
    Object.keys(run.checks).length > 0 ||
    run.failureReason === 'TEST_RUN_TIMEOUT' ||
    run.failureReason === 'START_TEST_RUN_CONFIG_MISSING_REQUIRED_STATUSES'
  );
}

/** Required checks (queue setting requiredStatuses) that no judged run saw reported. */
function silentChecks(model: QueueModel, now: number): DoctorNotice[] {
  const required = model.config.requiredStatuses;
  if (!required?.length) return [];
  const runs = judgedRuns(model.runs, now);
  const evidence = runs.filter(telling);
  if (!evidence.length) return [];
  const oldest = runs[runs.length - 1];
  const timeout = inTestingMinutes(testingTimeoutMs(model.config));
  const timeoutName =
    model.config.testingTimeoutMinutes === 'auto'
      ? 'testingTimeoutMinutes ("auto", now '
      : 'testingTimeoutMinutes (';
  return [...new Set(required)]
    .filter((name) => runs.every((r) => r.checks[name] === undefined))
    .map((check) => ({
      kind: 'required_check_never_reported' as const,
      check,
      text:
        `Required check "${check}" never reported on the queue's test commits (${evidence.length} test run${evidence.length === 1 ? '' : 's'} since ${isoTime(oldest.startedAt)}), ` +
        `so every run waits for it${timeout > 0 ? ` up to ${timeoutName}${timeout} min)` : ''} and fails: ` +
        `make your CI run "${check}" on the queue's test branches, or remove it from the queue's requiredStatuses (railyard mq queue update --required-statuses).`,
    }));
}

/** A queue paused for longer than an hour (`since`: when it entered its state; null: unknown). */
function pausedLong(model: QueueModel, since: number | null, now: number): DoctorNotice[] {
  if (model.config.state !== 'paused' || since === null || now - since <= DOCTOR_PAUSED_MINUTES * MINUTE)
    return [];
  const waiting = model.entries.filter(
    (e) => e.state === 'pending' || e.state === 'not_ready' || e.state === 'testing',
  ).length;
  return [
    {
      kind: 'queue_paused',
      text:
        `The queue has been paused for ${span(now - since)} (since ${isoTime(since)}) and tests and merges nothing meanwhile` +
        `${waiting ? ` (${waiting} PR${waiting === 1 ? '' : 's'} waiting)` : ''}: resume it (railyard mq queue resume) once what it was paused for is fixed.`,
    },
  ];
}

/**
 * A freeze that holds PRs for long: one in force for more than an hour from now while PRs wait
 * behind it (a short release freeze is what freezes are for; a long one is worth a look).
 */
function frozenLong(model: QueueModel, now: number): DoctorNotice[] {
  const freeze = activeFreeze(model.config.freezes, now);
  if (!freeze || freeze.until - now <= DOCTOR_PAUSED_MINUTES * MINUTE) return [];
  const waiting = model.entries.filter(
    (e) => e.state === 'pending' || e.state === 'not_ready' || e.state === 'testing',
  ).length;
  if (!waiting) return [];
  return [
    {
      kind: 'queue_frozen',
      text:
        `The queue is frozen for ${span(freeze.until - now)} more (until ${isoTime(freeze.until)}${freeze.reason ? `: ${freeze.reason}` : ''}) ` +
        `and lands nothing meanwhile (${waiting} PR${waiting === 1 ? '' : 's'} waiting): unfreeze it (railyard mq queue unfreeze) when the freeze is no longer needed.`,
    },
  ];
}

/** PRs that have waited outside the queue (not_ready) for more than a day, oldest first, with what holds them. */
function notReadyLong(model: QueueModel, now: number): DoctorNotice[] {
  return model.entries
    .filter((e) => e.state === 'not_ready' && now - e.stateChangedAt > DOCTOR_NOT_READY_HOURS * HOUR)
    .sort((a, b) => a.stateChangedAt - b.stateChangedAt)
    .map((e) => {
      const readiness = readinessOf(model, e);
      const why = holdPhrases(readiness).join('; ') || e.pr.blockedBy || 'waiting to be ready';
      return {
        kind: 'pr_not_ready' as const,
        prNumber: e.prNumber,
        text: `PR #${e.prNumber} has not been ready for ${span(now - e.stateChangedAt)} (${why}): fix that on the forge, or take it out of the queue (railyard mq cancel ${e.prNumber}).`,
      };
    });
}

/** Every notice the queue itself tells (the forge's permissions are the driver's: see the route). */
export function queueNotices(model: QueueModel, stateSince: number | null, now: number): DoctorNotice[] {
  return [
    ...silentChecks(model, now),
    ...pausedLong(model, stateSince, now),
    ...frozenLong(model, now),
    ...notReadyLong(model, now),
  ];
}
