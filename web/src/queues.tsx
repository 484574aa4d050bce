import { api, type QueueSummary } from './api.js';
import { duration, percent, repoPath, enc } from './format.js';
import { usePoll } from './poll.js';
import { ErrorBox, State } from './ui.js';

export function QueuesPage() {
  const { data, error } = usePoll(() => api.listQueues(), 3000, []);
  return (
    <main>
      <h1>Merge queues</h1>
      <ErrorBox message={error} />
      {data && data.queues.length === 0 && (
        <p>
          No merge queue yet in organisation “{data.org}”. Create one with{' '}
          <code>railyard mq queue create</code>.
        </p>
      )}
      {data && data.queues.length > 0 && (
        <table class="grid queues">
          <caption class="sr">Every merge queue of organisation {data.org}</caption>
          <thead>
            <tr>
              <th scope="col">Queue</th>
              <th scope="col">State</th>
              <th scope="col" class="num">
                Depth
              </th>
              <th scope="col" class="num">
                Testing
              </th>
              <th scope="col" class="num">
                Merged 1 h
              </th>
              <th scope="col" class="num">
                Merged 24 h
              </th>
              <th scope="col" class="num">
                Failure rate 24 h
              </th>
              <th scope="col" class="num">
                Median time in queue
              </th>
            </tr>
          </thead>
          <tbody>
            {data.queues.map((q) => (
              <QueueRow key={`${repoPath(q.repo)}:${q.targetBranch}`} q={q} />
            ))}
          </tbody>
        </table>
      )}
    </main>
  );
}

function QueueRow({ q }: { q: QueueSummary }) {
  const attention = q.state === 'paused' || q.state === 'draining';
  return (
    <tr class={attention ? `attention q-${q.state}` : ''}>
      <th scope="row">
        <a href={`#/queue/${repoPath(q.repo)}/${enc(q.targetBranch)}`}>
          {q.repo.owner}/{q.repo.name} <span class="muted">→</span> {q.targetBranch}
        </a>
        <div class="muted small">
          {q.repo.host} · {q.mode} · {q.concurrency} slot{q.concurrency === 1 ? '' : 's'}
        </div>
      </th>
      <td>
        <State state={q.state} />
        {attention && (
          <strong class="badge">{q.state === 'paused' ? 'not testing' : 'takes no new PRs'}</strong>
        )}
      </td>
      <td class="num">
        {q.depth}
        {q.notReady ? <span class="muted small"> +{q.notReady} not ready</span> : null}
      </td>
      <td class="num">{q.testing}</td>
      <td class="num">{q.mergedLastHour}</td>
      <td class="num">{q.mergedLastDay}</td>
      <td class="num">
        {percent(q.failureRateLastDay)}
        {q.failedLastDay ? <span class="muted small"> ({q.failedLastDay} failed)</span> : null}
      </td>
      <td class="num">{duration(q.medianSecondsInQueueLastDay)}</td>
    </tr>
  );
}
