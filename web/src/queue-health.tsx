// The queue page's health sections, apart from the queue itself: what the doctor says needs
// fixing (getMergeQueueDoctor, as `railyard mq doctor` prints it) and what concluded in the last
// hour (merged, failed, cancelled, with the reason), so an emptied queue still tells what happened.
import { explainReason } from '../../src/contract/reasons.js';
import type { DoctorResponse, QueueListItem } from '../../src/contract/index.js';
import { ApiError, post, type Repo } from './api.js';
import { enc, repoPath, since, stateGlyph } from './format.js';
import { useNow, usePoll } from './poll.js';

/** How often the doctor is asked: its notices change over hours, and it may ask the forge. */
export const DOCTOR_POLL_MS = 30_000;
/** How often the last hour's outcomes are read. */
export const OUTCOMES_POLL_MS = 5000;
/** The window of recent outcomes. */
export const OUTCOMES_WINDOW_MS = 3_600_000;

/** The doctor's notices, or null from a server without the extension. */
async function readDoctor(repo: Repo, branch: string): Promise<DoctorResponse | null> {
  try {
    return await post('getMergeQueueDoctor', { repo, targetBranch: branch });
  } catch (error) {
    if (error instanceof ApiError && error.status === 404 && /no such endpoint/.test(error.message))
      return null;
    throw error;
  }
}

/** "Needs attention": one sentence per thing to fix, with what to do; nothing when the queue is healthy. */
export function DoctorNotices({ repo, branch }: { repo: Repo; branch: string }) {
  const { data } = usePoll(() => readDoctor(repo, branch), DOCTOR_POLL_MS, [
    repo.host,
    repo.owner,
    repo.name,
    branch,
  ]);
  const notices = data?.notices ?? [];
  if (!notices.length) return null;
  return (
    <section aria-labelledby="doctor-h" class="card attention" data-testid="doctor" role="status">
      <h2 id="doctor-h">Needs attention ({notices.length})</h2>
      <ul>
        {notices.map((n, i) => (
          <li key={i} data-kind={n.kind}>
            <span aria-hidden="true">⚠ </span>
            {n.text}
          </li>
        ))}
      </ul>
    </section>
  );
}

/** Why a concluded PR ended as it did, in words. */
function outcomeWhy(p: QueueListItem): string {
  if (p.state === 'merged') return 'merged';
  const reason = p.stateReason ? explainReason(p.stateReason) : '';
  return `${p.state}${reason ? `: ${reason}` : ''}`;
}

/** The PRs that merged, failed or were cancelled in the last hour, newest first, with their reasons. */
export function RecentOutcomes({ repo, branch }: { repo: Repo; branch: string }) {
  const now = useNow(5000);
  const { data } = usePoll(
    () =>
      post('listPullRequests', {
        repo,
        targetBranch: branch,
        since: new Date(Date.now() - OUTCOMES_WINDOW_MS).toISOString(),
        take: 100,
      }),
    OUTCOMES_POLL_MS,
    [repo.host, repo.owner, repo.name, branch],
  );
  if (!data) return null;
  const prs = data.pullRequests
    .filter((p) => p.state === 'merged' || p.state === 'failed' || p.state === 'cancelled')
    .sort((a, b) => Date.parse(b.stateChangedAt) - Date.parse(a.stateChangedAt));
  const count = (state: string) => prs.filter((p) => p.state === state).length;
  return (
    <section aria-labelledby="outcomes-h" class="card" data-testid="recent-outcomes">
      <h2 id="outcomes-h">In the last hour</h2>
      {prs.length === 0 ? (
        <p class="muted">No pull request merged, failed or was cancelled in the last hour.</p>
      ) : (
        <>
          <p class="muted small" data-testid="outcome-counts">
            {count('merged')} merged · {count('failed')} failed · {count('cancelled')} cancelled
            {data.nextCursor ? ' (the latest 100)' : ''}
          </p>
          <ul>
            {prs.map((p) => (
              <li key={p.id} data-outcome-pr={p.prNumber} data-state={p.state}>
                <span aria-hidden="true">{stateGlyph(p.state)} </span>
                <a href={`#/pr/${repoPath(repo)}/${enc(branch)}/${p.prNumber}`}>#{p.prNumber}</a> {p.prTitle}{' '}
                <span class="muted small">({p.prAuthor})</span> — {outcomeWhy(p)}{' '}
                <span class="muted small">{since(p.stateChangedAt, now)} ago</span>
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}
