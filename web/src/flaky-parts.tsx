/** Parts of the flaky-test pages: a test's quarantine override, and the uploads excluded from detection. */
import type { GetTestFailureHistoryResponse, QuarantineOverrideInfo } from './api.js';
import { percent, timeLeft } from './format.js';
import { Section } from './ui.js';

/** A test's own quarantine setting: who set it, why, and how long it has left (or that it lapsed). */
export function OverrideLine({ o }: { o: QuarantineOverrideInfo }) {
  const what = o.setting === 'ALWAYS_QUARANTINE' ? 'Always quarantined' : 'Never quarantined';
  const end = !o.until
    ? 'no end'
    : o.expired
      ? `lapsed ${new Date(o.until).toLocaleString()}: the repository settings decide`
      : `until ${new Date(o.until).toLocaleString()} (${timeLeft(o.seconds_left ?? 0)} left)`;
  return (
    <p class="small" data-testid="quarantine-override">
      {what}, {end}
      {o.owner ? `, set by ${o.owner}` : ''}
      {o.reason ? `: ${o.reason}` : ''}
    </p>
  );
}

/**
 * The uploads of the last 30 days with this test that infrastructure failure protection kept out of
 * detection: most of their tests failed, so none of their results counts toward a status.
 */
export function ExcludedUploads({
  history,
  threshold,
  minTests,
}: {
  history: GetTestFailureHistoryResponse;
  threshold: number | undefined;
  minTests: number | undefined;
}) {
  const rule =
    threshold !== undefined && minTests !== undefined
      ? `at least ${percent(threshold)} of at least ${minTests} tests failed`
      : 'most of their tests failed';
  const more = history.excluded_uploads_total - history.excluded_uploads.length;
  return (
    <Section title="Uploads excluded from detection" id="excluded-h">
      <p class="small">
        In these uploads {rule} (an infrastructure failure, such as a broken runner): their results do not
        count toward this test&apos;s status or failure rates.
      </p>
      <table class="grid" data-testid="excluded-uploads">
        <thead>
          <tr>
            <th scope="col">Started</th>
            <th scope="col">Branch</th>
            <th scope="col">Commit</th>
            <th scope="col">Job</th>
            <th scope="col" class="num">
              Failed
            </th>
            <th scope="col">This test</th>
          </tr>
        </thead>
        <tbody>
          {history.excluded_uploads.map((u) => (
            <tr key={u.upload_id} data-upload={u.upload_id}>
              <td>{new Date(u.started_at).toLocaleString()}</td>
              <td>
                {u.branch}
                {u.pr_number ? ` (PR #${u.pr_number})` : ''}
              </td>
              <td>
                <code>{u.sha.slice(0, 7)}</code>
              </td>
              <td>{u.job ?? '—'}</td>
              <td class="num">
                {u.failed} of {u.tests}
              </td>
              <td>{u.outcome}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {more > 0 && <p class="muted small">and {more} more in the last 30 days.</p>}
    </Section>
  );
}
