/**
 * The flaky-test webhook events (reference trunk-v1-api.md §7.3): a test's status changing
 * (`test_case.status_changed` and `v2.test_case.status_changed`), a monitor turning active or
 * resolved (`test_case.monitor_status_changed`), a quarantine override set, cleared or ended
 * (`test_case.quarantining_setting_changed`). Pure: the caller writes them in the transaction that
 * stores the change (src/server/flaky/ingest.ts, queries.ts, lapses.ts). Links are the forge's pages of the
 * repository and the test's file (src/server/links.ts); each event adds `railyard.repository`.
 */
import { isoTime, type TestStatus } from '../../contract/index.js';
import type { TestIdentity } from '../../flaky/identity.js';
import type { OutboxEvent } from '../../store/index.js';
import type { KnownCase, MonitorChange } from '../../store/flaky.js';
import type { Repository } from '../flaky/repositories.js';
import type { Links } from '../links.js';
import { repoKeyOf } from './events.js';

export interface ChangedTest extends TestIdentity {
  id: string;
}

const SEVERITY: Record<TestStatus, number> = { healthy: 0, flaky: 1, broken: 2 };

/** The status a test shows: the most severe of its monitors (pass-on-retry makes it flaky while active). */
export function overall(rate: TestStatus, porUntil: number | null, at: number): TestStatus {
  const por: TestStatus = porUntil !== null && porUntil > at ? 'flaky' : 'healthy';
  return SEVERITY[rate] >= SEVERITY[por] ? rate : por;
}

function testCase(
  links: Links,
  repository: Repository,
  test: ChangedTest,
  status: { value: TestStatus; reason: string; at: number },
) {
  return {
    id: test.id,
    name: test.name,
    variant: test.variant,
    repository: { html_url: links.repository(repository.repo) },
    html_url: links.test(repository.repo, test),
    status: { value: status.value, reason: status.reason, timestamp: isoTime(status.at) },
    codeowners: repository.codeowners?.ownersOf(test.file) ?? [],
    ...(test.file ? { file_path: test.file } : {}),
    ...(test.parent ? { parent: test.parent } : {}),
    ...(test.classname ? { classname: test.classname } : {}),
    test_suite: test.parent ?? '',
  };
}

/**
 * Railyard's addition to a flaky-test event: the repository by name (Trunk's payload names it only
 * by its web address, which on a self-managed GitLab carries the instance's path prefix).
 */
const railyardOf = (repository: Repository) => ({ repository: repository.repo });

/** The events of what one upload's detection changed. */
export function monitorEvents(
  links: Links,
  repository: Repository,
  changes: ReadonlyArray<{ test: ChangedTest; before: KnownCase; change: MonitorChange; at: number }>,
): OutboxEvent[] {
  const out: OutboxEvent[] = [];
  const repoKey = repoKeyOf(repository.repo);
  for (const { test, before, change, at } of changes) {
    const orderKey = `test:${repository.id}:${test.id}`;
    const rateAfter = change.rateStatus ?? before.rate_status;
    const porAfter = change.porUntil ?? before.por_until;
    const was = overall(before.rate_status, before.por_until, at);
    const now = overall(rateAfter, porAfter, at);
    const reason = change.rateReason ?? change.porReason ?? '';
    const monitor = (type: 'failure_rate' | 'pass_on_retry', active: boolean) => ({
      type: 'test_case.monitor_status_changed',
      orderKey,
      repoKey,
      payload: {
        type: 'test_case.monitor_status_changed',
        monitor: { id: `${repository.id}:${type}`, type, status: active ? 'active' : 'resolved' },
        evidence: { reason, timestamp: isoTime(at) },
        repository: { id: repository.id, html_url: links.repository(repository.repo) },
        test_case: { id: test.id, name: test.name, variant: test.variant },
        railyard: railyardOf(repository),
      },
    });
    if (
      change.rateStatus !== undefined &&
      (change.rateStatus === 'healthy') !== (before.rate_status === 'healthy')
    )
      out.push(monitor('failure_rate', change.rateStatus !== 'healthy'));
    const porWas = before.por_until !== null && before.por_until > at;
    const porNow = porAfter !== null && porAfter > at;
    if (change.porUntil !== undefined && porWas !== porNow) out.push(monitor('pass_on_retry', porNow));
    if (was === now) continue;
    const tc = testCase(links, repository, test, { value: now, reason, at });
    out.push({
      type: 'test_case.status_changed',
      orderKey,
      repoKey,
      payload: {
        type: 'test_case.status_changed',
        test_case: tc,
        status_change: {
          previous_status: was,
          current_status: { value: now, reason, timestamp: isoTime(at) },
        },
        railyard: railyardOf(repository),
      },
    });
    out.push({
      type: 'v2.test_case.status_changed',
      orderKey,
      repoKey,
      payload: {
        type: 'v2.test_case.status_changed',
        test_case: tc,
        previous_status: was,
        new_status: now,
        triggered_by: {
          monitor_id: `${repository.id}:${change.rateStatus !== undefined ? 'failure_rate' : 'pass_on_retry'}`,
          monitor_type: change.rateStatus !== undefined ? 'failure_rate' : 'pass_on_retry',
          monitor_status: now === 'healthy' ? 'resolved' : 'active',
        },
        timestamp: isoTime(at),
        railyard: railyardOf(repository),
      },
    });
  }
  return out;
}

type Setting = 'ALWAYS_QUARANTINE' | 'NEVER_QUARANTINE' | 'UNSPECIFIED';

/** `test_case.quarantining_setting_changed` of an override set through the API, or ended (lapses.ts). */
export function quarantineEvent(
  links: Links,
  repository: Repository,
  test: ChangedTest,
  status: { value: TestStatus; reason: string; at: number },
  previous: Setting,
  updated: Setting,
  at: number,
  by: { actor: string; reason: string | null } = { actor: 'API token', reason: null },
): OutboxEvent {
  return {
    type: 'test_case.quarantining_setting_changed',
    orderKey: `test:${repository.id}:${test.id}`,
    repoKey: repoKeyOf(repository.repo),
    payload: {
      type: 'test_case.quarantining_setting_changed',
      test_case: testCase(links, repository, test, status),
      quarantine_setting_changed: {
        actor: { full_name: by.actor || 'API token', email: '' },
        reason: by.reason,
        timestamp: isoTime(at),
        previous_quarantining_setting: previous,
        updated_quarantining_setting: updated,
      },
      railyard: railyardOf(repository),
    },
  };
}
