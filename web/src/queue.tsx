import { useRef, useState } from 'preact/hooks';
import {
  api,
  postText,
  type GetQueueResponse,
  type QueueListItem,
  type Repo,
  type TestingDetailsResponse,
} from './api.js';
import { boardRows, formatRange, type EtaRange } from '../../src/watch/board.js';
import { enc, repoPath, since } from './format.js';
import { layout, type RunBox } from './model.js';
import { useNow, usePoll } from './poll.js';
import { DoctorNotices, RecentOutcomes } from './queue-health.js';
import { QueueSettings } from './settings.js';
import { ErrorBox, State } from './ui.js';

/** How often the queue is read: getQueue is served from a cached answer per queue version. */
export const QUEUE_POLL_MS = 1000;
/** How often the queue's recent test durations (listQueues) are read for the ETAs: they change once per finished run. */
export const SUMMARY_POLL_MS = 10_000;
/** How often the PRs waiting outside the queue are read (one request each, so less often than the queue). */
export const NOT_READY_POLL_MS = 3000;

export function QueuePage({ repo, branch }: { repo: Repo; branch: string }) {
  /** Testing details per run, with the states of its PRs when they were read. */
  const details = useRef(new Map<string, { key: string; d: TestingDetailsResponse | null }>());
  const last = useRef<{ text: string; queue: GetQueueResponse; wanted: Map<string, string> } | null>(null);
  const fetching = useRef(false);
  const [, setDetailsRead] = useState(0);
  // Durations tick every 5 s: re-rendering 1,000 rows every second would cost more than it shows.
  const now = useNow(5000);
  const { data, error } = usePoll(
    async () => {
      const text = await postText('getQueue', { repo, targetBranch: branch });
      if (last.current?.text !== text) {
        const queue: GetQueueResponse = JSON.parse(text);
        // The details of a run (its base, status, checks) are read again only when the states
        // of its PRs change.
        const wanted = new Map<string, string>();
        for (const p of queue.enqueuedPullRequests) {
          if (!p.testRunId || p.state === 'pending' || p.state === 'not_ready') continue;
          wanted.set(p.testRunId, (wanted.get(p.testRunId) ?? '') + `${p.prNumber}:${p.state},`);
        }
        last.current = { text, queue, wanted };
      }
      // Read after the queue is drawn: never holding up the first picture.
      const stale = [...last.current.wanted].filter(([id, key]) => details.current.get(id)?.key !== key);
      if (stale.length && !fetching.current) {
        fetching.current = true;
        void Promise.all(
          stale.map(async ([id, key]) => {
            const d = await api
              .testingDetails(repo, branch, id)
              .catch(() => details.current.get(id)?.d ?? null);
            details.current.set(id, { key, d });
          }),
        ).finally(() => {
          fetching.current = false;
          setDetailsRead((n) => n + 1);
        });
      }
      // Unchanged answer: the previous object, so the page is not drawn again.
      return last.current.queue;
    },
    QUEUE_POLL_MS,
    [repo.host, repo.owner, repo.name, branch],
  );
  // The ETAs come from the queue's recent test durations, as `railyard mq watch` computes them.
  const summaries = usePoll(() => api.listQueues(), SUMMARY_POLL_MS, []);
  // The PRs waiting outside the queue (not_ready) and what holds each: read less often (one request per PR).
  const notReady = usePoll(() => api.notReady(repo, branch), NOT_READY_POLL_MS, [
    repo.host,
    repo.owner,
    repo.name,
    branch,
  ]);
  const outside = notReady.data?.prs ?? [];
  const summary = summaries.data?.queues.find(
    (q) =>
      q.repo.host === repo.host &&
      q.repo.owner === repo.owner &&
      q.repo.name === repo.name &&
      q.targetBranch === branch,
  );
  const title = `${repo.owner}/${repo.name} → ${branch}`;
  if (!data) {
    return (
      <main>
        <h1>{title}</h1>
        <ErrorBox message={error} />
        {!error && <p class="muted">Reading the queue…</p>}
      </main>
    );
  }
  const prs = data.enqueuedPullRequests;
  const { lanes, bisection, waiting } = layout(prs, (id) => details.current.get(id)?.d ?? null);
  const attention = data.state === 'paused' || data.state === 'draining';
  const etas = new Map<number, EtaRange>();
  for (const row of boardRows(data, summary, now)) if (row.eta) etas.set(row.pr.prNumber, row.eta);
  const recent = summary?.recentTestSeconds;
  return (
    <main>
      <h1>{title}</h1>
      <ErrorBox message={error} />
      <p class={`summary ${attention ? 'attention' : ''}`}>
        <State state={data.state} /> · {data.mode} mode · {data.concurrency} test slot
        {data.concurrency === 1 ? '' : 's'}
        {data.batch ? ` · batches of up to ${data.batchingMinSize}` : ''} ·{' '}
        <strong data-testid="depth">{prs.length}</strong> PR{prs.length === 1 ? '' : 's'} in the queue
        <span class="muted small"> · live, read every {QUEUE_POLL_MS / 1000} s</span>
      </p>
      {data.frozen && <FrozenBanner frozen={data.frozen} bypass={data.freezeBypassPriority} />}
      <p class="muted small" data-testid="recent-runs">
        {recent
          ? `Recent test runs took ${formatRange({ lowMs: recent.p25 * 1000, highMs: recent.p90 * 1000 })} (25th–90th percentile of ${recent.samples}); the ETAs assume the runs ahead pass.`
          : 'No ETA yet: no test run of this queue has finished recently.'}
      </p>
      <DoctorNotices repo={repo} branch={branch} />
      {prs.length === 0 && outside.length === 0 && notReady.data && <p>The queue is empty.</p>}
      {outside.length > 0 && (
        <section aria-labelledby="not-ready-h" class="card" data-testid="not-ready">
          <h2 id="not-ready-h">
            Waiting outside the queue, not ready ({outside.length + (notReady.data?.more ?? 0)})
          </h2>
          <ul>
            {outside.map((p) => (
              <li key={p.prNumber} data-pr={p.prNumber}>
                <a href={`#/pr/${repoPath(repo)}/${enc(branch)}/${p.prNumber}`}>#{p.prNumber}</a> {p.prTitle}{' '}
                <span class="muted small">({p.prAuthor})</span>: {p.why}
              </li>
            ))}
          </ul>
        </section>
      )}
      {lanes.length > 0 && (
        <section aria-label="Test runs" class="lanes">
          {lanes.map((lane, i) => (
            <div class="lane" key={i} role="group" aria-label={`Lane ${i + 1}`}>
              <h2 class="small muted">Lane {i + 1}</h2>
              {lane.map((run, j) => (
                <Run
                  key={run.id}
                  run={run}
                  repo={repo}
                  branch={branch}
                  now={now}
                  stacked={j > 0}
                  etas={etas}
                />
              ))}
            </div>
          ))}
        </section>
      )}
      {bisection.length > 0 && (
        <section aria-labelledby="bisect-h" class="bisection">
          <h2 id="bisect-h">Bisection (off the main line)</h2>
          <div class="lanes">
            {bisection.map((run) => (
              <div class="lane" key={run.id}>
                <Run run={run} repo={repo} branch={branch} now={now} stacked={false} etas={etas} />
              </div>
            ))}
          </div>
        </section>
      )}
      {waiting.length > 0 && (
        <section aria-labelledby="waiting-h" class="card">
          <h2 id="waiting-h">Waiting ({waiting.length})</h2>
          <PrList prs={waiting} repo={repo} branch={branch} now={now} etas={etas} />
        </section>
      )}
      <RecentOutcomes repo={repo} branch={branch} />
      <QueueSettings repo={repo} branch={branch} queue={data} />
    </main>
  );
}

/** While a freeze holds the queue: until when (UTC), why, and what still lands. */
function FrozenBanner({ frozen, bypass }: { frozen: { until: string; reason?: string }; bypass: number }) {
  const until = new Date(frozen.until).toISOString().slice(0, 16).replace('T', ' ');
  return (
    <p class="banner frozen" role="status" data-testid="frozen">
      <strong>Frozen until {until} UTC</strong>
      {frozen.reason ? ` — ${frozen.reason}` : ''}. Pull requests are tested; only those of priority {bypass}{' '}
      or lower land until then.
    </p>
  );
}

function Run({
  run,
  repo,
  branch,
  now,
  stacked,
  etas,
}: {
  run: RunBox;
  repo: Repo;
  branch: string;
  now: number;
  stacked: boolean;
  etas: Map<number, EtaRange>;
}) {
  const d = run.details;
  const base = d?.dependentPrs ?? [];
  return (
    <>
      {stacked && (
        <div class="stack-link" aria-hidden="true">
          ▲
        </div>
      )}
      <article
        class={`run r-${d?.status ?? 'unknown'}`}
        aria-label={`Test run of ${run.prs.map((p) => '#' + p.prNumber).join(', ')}`}
      >
        <header>
          <State state={d?.status ?? 'in_progress'} />{' '}
          <span class="muted small">{run.prs.length > 1 ? `batch of ${run.prs.length}` : 'single PR'}</span>
          <div class="muted small" title={base.length ? base.map((n) => `#${n}`).join(' ') : undefined}>
            built on{' '}
            {base.length === 0
              ? branch
              : base.length <= 6
                ? base.map((n) => `#${n}`).join(' ')
                : `${base.length} PRs ahead (#${base[0]} … #${base[base.length - 1]})`}
          </div>
        </header>
        <PrList prs={run.prs} repo={repo} branch={branch} now={now} etas={etas} />
      </article>
    </>
  );
}

function PrList({
  prs,
  repo,
  branch,
  now,
  etas,
}: {
  prs: QueueListItem[];
  repo: Repo;
  branch: string;
  now: number;
  etas: Map<number, EtaRange>;
}) {
  return (
    <ol class="prs">
      {prs.map((p) => (
        <li key={p.prNumber} class={`pr p-${p.state}`} data-pr={p.prNumber}>
          <a href={`#/pr/${repoPath(repo)}/${enc(branch)}/${p.prNumber}`}>
            <span class="prn">#{p.prNumber}</span> <span class="title">{p.prTitle}</span>
          </a>
          <span class="meta">
            <State state={p.state} />
            <span class={`prio prio-${p.priorityName}`} title={`priority ${p.priorityValue}`}>
              {p.skipTheLine ? '⚡ ' : ''}
              {p.priorityName}
            </span>
            {p.direct && (
              <span
                class="tag direct"
                title="Submitted direct: past the forge's pull-request requirements; still tested"
              >
                direct
              </span>
            )}
            <span class="muted small" title={`in this state since ${p.stateChangedAt}`}>
              {since(p.stateChangedAt, now)}
            </span>
            {etas.has(p.prNumber) && (
              <span class="eta small" title="Expected to merge in (if the runs ahead pass)" data-testid="eta">
                ETA {formatRange(etas.get(p.prNumber)!)}
              </span>
            )}
          </span>
        </li>
      ))}
    </ol>
  );
}
