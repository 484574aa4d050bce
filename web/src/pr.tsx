import { useEffect, useRef, useState } from 'preact/hooks';
import { explainReason } from '../../src/contract/reasons.js';
import { holdPhrases } from '../../src/watch/notices.js';
import { failingTestNote } from '../../src/watch/failing-tests.js';
import { api, type Repo, type SubmittedPullRequest, type TestingDetailsResponse } from './api.js';
import { enc, repoPath, since } from './format.js';
import { useNow, usePoll } from './poll.js';
import { lastLines, transitionsOf, type Transition } from './model.js';
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
  // What holds it: the queue's state, its impacted targets, or the sentence naming a conflict.
  const holds = holdPhrases(pr.readiness);
  return (
    <>
      <p class="summary">
        <State state={pr.state} /> · priority {pr.priorityName} ({pr.priorityValue}) · by {pr.prAuthor} · head{' '}
        <code>{pr.prSha.slice(0, 12)}</code> · in this state for {since(pr.stateChangedAt, now)}
        {pr.isCurrentlySubmittedToQueue ? '' : ' · no longer in the queue'}
        {pr.direct && (
          <span
            class="direct"
            data-testid="direct"
            title="Submitted past the forge's pull-request requirements; still tested"
          >
            {' '}
            · direct
          </span>
        )}
        {typeof pr.riskEstimate === 'number' && (
          <span
            data-testid="risk"
            title="Estimated probability that this PR fails its queue test (from the queue's history)"
          >
            {' '}
            · risk {(pr.riskEstimate * 100).toFixed(0)} %
          </span>
        )}
      </p>
      {pr.stack && (
        <p class="reason" data-testid="stack">
          Part of a {pr.stack.description}: tested and landed as one unit, bottom first.
        </p>
      )}
      {sentence && (
        <p class={`reason ${pr.state === 'failed' ? 'failed' : ''}`} data-testid="reason">
          {sentence} <span class="muted small">({pr.stateReason})</span>
        </p>
      )}
      {pr.isCurrentlySubmittedToQueue && holds.length ? (
        <p class="reason" data-testid="waiting-for">
          {holds.map((h) => h.charAt(0).toUpperCase() + h.slice(1)).join('. ')}.
        </p>
      ) : null}
      {data.history !== null && <Timeline history={data.history} prNumber={pr.prNumber} />}
      <Section title="Test run" id="run-h">
        {!run && (
          <p class="muted">
            {pr.testRunId
              ? 'The test run is no longer known to the server.'
              : pr.readiness?.conflict
                ? `Not tested: it ${pr.readiness.conflict.message}.`
                : 'Not tested yet.'}
          </p>
        )}
        {run && <RunDetails run={run} pr={pr} repo={repo} branch={branch} />}
      </Section>
    </>
  );
}

/** "PR #5 failed because its check failed." for the states a reason explains. */
export function reasonSentence(
  pr: Pick<SubmittedPullRequest, 'prNumber' | 'state' | 'stateReason'>,
): string | null {
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
      {run.pendingChecks?.length ? (
        <p>
          Waiting for{' '}
          {run.pendingChecks.map((c, i) => (
            <>
              {i ? ', ' : ''}
              <code>{c.name}</code> ({c.state === 'running' ? 'running' : 'not reported yet'})
            </>
          ))}
          .
        </p>
      ) : null}
      <table class="grid">
        <caption class="sr">Checks of the test run</caption>
        <thead>
          <tr>
            <th scope="col">Check</th>
            <th scope="col">Status</th>
            <th scope="col">Required</th>
            <th scope="col">Output</th>
          </tr>
        </thead>
        <tbody>
          {run.statusChecks.length === 0 && (
            <tr>
              <td colSpan={4} class="muted">
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
              <td>
                <CheckLog
                  repo={repo}
                  branch={branch}
                  testRunId={pr.testRunId!}
                  check={c.context}
                  // A failed check's output is what people come for: open from the start.
                  open={c.state === 'FAILURE' || c.state === 'ERROR'}
                  finished={c.state !== undefined && c.state !== 'PENDING'}
                />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {run.failingTests?.length ? <FailingTests tests={run.failingTests} retryOf={run.retryOf} /> : null}
    </>
  );
}

/** The run's failing tests from the results uploaded for its commit, with what the flaky-test data said of each. */
function FailingTests({
  tests,
  retryOf,
}: {
  tests: NonNullable<TestingDetailsResponse['failingTests']>;
  retryOf?: string;
}) {
  return (
    <table class="grid" data-testid="failing-tests">
      <caption>
        Failing tests ({tests.length}){retryOf ? ` · this run retries ${retryOf.slice(0, 8)}` : ''}
      </caption>
      <thead>
        <tr>
          <th scope="col">Test</th>
          <th scope="col">Known as</th>
        </tr>
      </thead>
      <tbody>
        {tests.map((t) => (
          <tr key={t.name} class={t.ignored ? 'muted' : undefined}>
            <th scope="row">{t.name}</th>
            <td>{failingTestNote(t) || 'a real failure as far as the flaky-test data knows'}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Lines of a check's output shown before "show all": its end, where a failure usually is. */
const LOG_TAIL_LINES = 40;

/**
 * One check's output: read from getCheckRunLog (the token in the header) when opened, shown as
 * text in a <pre>, its last lines first; a clear line when the server keeps none (sandbox).
 */
function CheckLog(props: {
  repo: Repo;
  branch: string;
  testRunId: string;
  check: string;
  open: boolean;
  finished: boolean;
}) {
  const { repo, branch, testRunId, check, finished } = props;
  const [open, setOpen] = useState(props.open);
  const [all, setAll] = useState(false);
  const [log, setLog] = useState<{ text?: string; missing?: string; error?: string } | null>(null);
  const pre = useRef<HTMLPreElement>(null);
  // The end is where a failure usually is: scrolled to the last line.
  useEffect(() => {
    if (pre.current) pre.current.scrollTop = pre.current.scrollHeight;
  }, [log, all]);
  useEffect(() => {
    if (!open) return;
    let stopped = false;
    setLog(null);
    api
      .checkLog(repo, branch, testRunId, check)
      .then((r) => !stopped && setLog(r))
      .catch((e: unknown) => !stopped && setLog({ error: e instanceof Error ? e.message : String(e) }));
    return () => {
      stopped = true;
    };
    // Read again when the check finishes (a running check's output grows).
  }, [open, repo.host, repo.owner, repo.name, branch, testRunId, check, finished]);
  if (!open)
    return (
      <button
        type="button"
        class="link"
        onClick={() => setOpen(true)}
        aria-label={`Show the output of ${check}`}
      >
        show
      </button>
    );
  const body =
    log?.text === undefined
      ? null
      : all
        ? { shown: log.text, hidden: 0 }
        : lastLines(log.text, LOG_TAIL_LINES);
  return (
    <div class="checklog" data-testid={`log-${check}`}>
      <button type="button" class="link" onClick={() => setOpen(false)}>
        hide
      </button>
      {!log && <p class="muted small">Reading the output…</p>}
      {log?.missing !== undefined && (
        <p class="muted small" data-testid="log-missing">
          No output: {log.missing}.
        </p>
      )}
      {log?.error !== undefined && <ErrorBox message={log.error} />}
      {body && (
        <>
          {body.hidden > 0 && (
            <button type="button" class="link small" onClick={() => setAll(true)}>
              show the {body.hidden} line{body.hidden === 1 ? '' : 's'} before
            </button>
          )}
          <pre ref={pre} aria-label={`Output of ${check}`}>
            {body.shown || '(empty)'}
          </pre>
        </>
      )}
    </div>
  );
}

function Timeline({ history, prNumber }: { history: unknown; prNumber: number }) {
  const items = transitionsOf(history);
  if (!items.length) return null;
  return (
    <Section title="Timeline" id="timeline-h">
      <ol class="timeline" data-testid="timeline">
        {items.map((t, i) => (
          <TimelineItem
            key={i}
            t={t}
            prNumber={prNumber}
            resubmitted={i > 0 && t.queueEntryId !== items[i - 1].queueEntryId}
          />
        ))}
      </ol>
    </Section>
  );
}

function TimelineItem({
  t,
  prNumber,
  resubmitted,
}: {
  t: Transition;
  prNumber: number;
  resubmitted: boolean;
}) {
  const sentence = reasonSentence({
    prNumber,
    state: t.state as SubmittedPullRequest['state'],
    stateReason: t.reason ?? undefined,
  });
  return (
    <li class={resubmitted ? 'resubmitted' : undefined}>
      <time dateTime={t.at ?? undefined} title={t.at ?? undefined}>
        {t.at ? new Date(t.at).toLocaleString() : '—'}
      </time>{' '}
      {t.previousState && <span class="muted small">{t.previousState.replaceAll('_', ' ')} → </span>}
      <State state={t.state} />
      {sentence ? (
        <span> — {sentence}</span>
      ) : (
        t.reason && t.reason !== 'API_REQUESTED' && <span> — {explainReason(t.reason)}</span>
      )}
      {t.testRunId && <span class="muted small"> (test run {t.testRunId.slice(0, 8)})</span>}
      {resubmitted && <span class="muted small"> · submitted again</span>}
      {t.detail && <pre class="detail">{t.detail}</pre>}
    </li>
  );
}
