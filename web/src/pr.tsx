import { explainReason } from '../../src/contract/reasons.js';
import { api, type Repo, type SubmittedPullRequest, type TestingDetailsResponse } from './api.js';
import { enc, repoPath, since } from './format.js';
import { useNow, usePoll } from './poll.js';
import { transitionsOf } from './model.js';
import { ErrorBox, Section, State } from './ui.js';

interface PrData {
  pr: SubmittedPullRequest;
  run: TestingDetailsResponse | null;
  history: unknown | null;
}

export function PrPage({ repo, branch, number }: { repo: Repo; branch: string; number: number }) {
  const now = useNow(1000);
  const { data, error } = usePoll<PrData>(
    async () => {
      const pr = await api.getPullRequest(repo, branch, number);
      const [run, history] = await Promise.all([
        pr.testRunId ? api.testingDetails(repo, branch, pr.testRunId).catch(() => null) : null,
        api.history(repo, branch, number).catch(() => null),
      ]);
      return { pr, run, history };
    },
    2000,
    [repo.host, repo.owner, repo.name, branch, number],
  );
  const queueLink = `#/queue/${repoPath(repo)}/${enc(branch)}`;
  return (
    <main>
      <p class="crumbs">
        <a href={queueLink}>
          ← {repo.owner}/{repo.name} → {branch}
        </a>
      </p>
      <h1>
        PR #{number}
        {data && <span class="title"> {data.pr.prTitle}</span>}
      </h1>
      <ErrorBox message={error} />
      {data && <PrBody data={data} repo={repo} branch={branch} now={now} />}
    </main>
  );
}

function PrBody({ data, repo, branch, now }: { data: PrData; repo: Repo; branch: string; now: number }) {
  const { pr, run } = data;
  const sentence = reasonSentence(pr);
  return (
    <>
      <p class="summary">
        <State state={pr.state} /> · priority {pr.priorityName} ({pr.priorityValue}) · by {pr.prAuthor} · head{' '}
        <code>{pr.prSha.slice(0, 12)}</code> · in this state for {since(pr.stateChangedAt, now)}
        {pr.isCurrentlySubmittedToQueue ? '' : ' · no longer in the queue'}
      </p>
      {sentence && (
        <p class={`reason ${pr.state === 'failed' ? 'failed' : ''}`} data-testid="reason">
          {sentence} <span class="muted small">({pr.stateReason})</span>
        </p>
      )}
      {data.history !== null && <Timeline history={data.history} />}
      <Section title="Test run" id="run-h">
        {!run && (
          <p class="muted">
            {pr.testRunId ? 'The test run is no longer known to the server.' : 'Not tested yet.'}
          </p>
        )}
        {run && <RunDetails run={run} pr={pr} repo={repo} branch={branch} />}
      </Section>
    </>
  );
}

/** "PR #5 failed because its check failed." for the states a reason explains. */
export function reasonSentence(pr: SubmittedPullRequest): string | null {
  const code = pr.stateReason;
  if (!code || (code === 'API_REQUESTED' && pr.state !== 'cancelled')) return null;
  const why = explainReason(code);
  switch (pr.state) {
    case 'failed':
      return `PR #${pr.prNumber} failed because ${why}.`;
    case 'cancelled':
      return `PR #${pr.prNumber} was cancelled because ${why}.`;
    case 'merged':
      return `PR #${pr.prNumber} merged: ${why}.`;
    default:
      return `PR #${pr.prNumber} is ${pr.state?.replaceAll('_', ' ')}: ${why}.`;
  }
}

function RunDetails({
  run,
  pr,
  repo,
  branch,
}: {
  run: TestingDetailsResponse;
  pr: SubmittedPullRequest;
  repo: Repo;
  branch: string;
}) {
  const others = run.testedPullRequests.filter((p) => p.prNumber !== pr.prNumber);
  const base = run.dependentPrs ?? [];
  const link = (n: number) => <a href={`#/pr/${repoPath(repo)}/${enc(branch)}/${n}`}>#{n}</a>;
  return (
    <>
      <p>
        <State state={run.status} /> · started{' '}
        {run.createdAt ? new Date(run.createdAt).toLocaleString() : '—'} · test branch{' '}
        <code>{run.testBranch || '—'}</code>
        {run.testBranchSha && (
          <>
            {' '}
            at <code>{run.testBranchSha.slice(0, 12)}</code>
          </>
        )}
      </p>
      <p data-testid="tested-with">
        Tested{' '}
        {others.length ? (
          <>
            together with{' '}
            {others.map((p, i) => (
              <>
                {i ? ', ' : ''}
                {link(p.prNumber)} {p.title}
              </>
            ))}
          </>
        ) : (
          'alone'
        )}
        , on top of{' '}
        {base.length ? (
          <>
            {base.map((n, i) => (
              <>
                {i ? ', ' : ''}
                {link(n)}
              </>
            ))}{' '}
            (ahead in the queue, not merged yet) and{' '}
          </>
        ) : (
          ''
        )}
        <code>{branch}</code>.
      </p>
      <table class="grid">
        <caption class="sr">Checks of the test run</caption>
        <thead>
          <tr>
            <th scope="col">Check</th>
            <th scope="col">Status</th>
            <th scope="col">Required</th>
          </tr>
        </thead>
        <tbody>
          {run.statusChecks.length === 0 && (
            <tr>
              <td colSpan={3} class="muted">
                No check has reported yet.
              </td>
            </tr>
          )}
          {run.statusChecks.map((c) => (
            <tr key={c.context}>
              <th scope="row">{c.context}</th>
              <td>
                <State state={c.state} />
              </td>
              <td>{run.requiredStatuses.includes(c.context) ? 'yes' : 'no'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

function Timeline({ history }: { history: unknown }) {
  const items = transitionsOf(history);
  if (!items.length) return null;
  return (
    <Section title="Timeline" id="timeline-h">
      <ol class="timeline">
        {items.map((t, i) => (
          <li key={i}>
            <time dateTime={t.at ?? undefined}>{t.at ? new Date(t.at).toLocaleTimeString() : '—'}</time>{' '}
            <State state={t.state} />
            {t.reason && <span> — {explainReason(t.reason)}</span>}
            {t.testRunId && <span class="muted small"> (test run {t.testRunId.slice(0, 8)})</span>}
          </li>
        ))}
      </ol>
    </Section>
  );
}
