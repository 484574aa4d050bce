import { useState } from 'preact/hooks';
import { api, ApiError, type DetailedTestCase, type Repo, type UnhealthyTestCase } from './api.js';
import { ExcludedUploads, OverrideLine } from './flaky-parts.js';
import { percent, repoPath, enc, safeHref, stateGlyph, timeLeft } from './format.js';
import { usePoll } from './poll.js';
import { BarChart, DailyRateChart, ErrorBox, Section, State } from './ui.js';

type Tab = 'unhealthy' | 'flaky' | 'broken' | 'failing24' | 'failing7d';
const TABS: [Tab, string][] = [
  ['unhealthy', 'Flaky and broken'],
  ['flaky', 'Flaky'],
  ['broken', 'Broken'],
  ['failing24', 'Failing, last 24 h'],
  ['failing7d', 'Failing, last 7 days'],
];

export function FlakyPage({
  repo,
  testId,
  org,
  repos,
}: {
  repo: Repo | null;
  testId: string | null;
  org: string;
  repos: Repo[];
}) {
  const chosen = repo ?? repos[0] ?? null;
  return (
    <main>
      <h1>Flaky tests</h1>
      <RepoPicker repo={chosen} repos={repos} />
      {!chosen && <p>Name a repository above (host/owner/name) to see its tests.</p>}
      {chosen && !testId && <TestList repo={chosen} org={org} />}
      {chosen && testId && <TestDetail repo={chosen} org={org} testId={testId} />}
    </main>
  );
}

function RepoPicker({ repo, repos }: { repo: Repo | null; repos: Repo[] }) {
  const [text, setText] = useState(repo ? `${repo.host}/${repo.owner}/${repo.name}` : '');
  const [problem, setProblem] = useState<string | null>(null);
  const go = (value: string) => {
    const parts = value.trim().split('/').filter(Boolean);
    if (parts.length !== 3) return setProblem('repository: write host/owner/name, e.g. github.com/acme/web');
    setProblem(null);
    location.hash = `#/flaky/${parts.map(enc).join('/')}`;
  };
  return (
    <form
      class="picker"
      onSubmit={(e) => {
        e.preventDefault();
        go(text);
      }}
    >
      <label for="repo-input">Repository</label>
      <input
        id="repo-input"
        list="repo-list"
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
        placeholder="github.com/owner/name"
      />
      <datalist id="repo-list">
        {repos.map((r) => (
          <option key={repoPath(r)} value={`${r.host}/${r.owner}/${r.name}`} />
        ))}
      </datalist>
      <button type="submit">Show</button>
      <ErrorBox message={problem} />
    </form>
  );
}

/**
 * A test's status as the views say it: the server's verdict label (`not enough runs yet (3 of 10)`
 * for a failing test the failure-rate monitor cannot judge yet, `flaky: passed on retry`), else the
 * wire status.
 */
function TestState({ t }: { t: UnhealthyTestCase }) {
  const v = t.verdict;
  if (!v) return <State state={t.status.value} title={t.status.reason} />;
  const state = v.kind === 'not_enough_runs' ? 'not_enough_runs' : t.status.value;
  return (
    <span class={`state s-${state}`} title={verdictReason(t) ?? t.status.reason} data-verdict={v.kind}>
      <span aria-hidden="true" class="glyph">
        {stateGlyph(state)}
      </span>{' '}
      {v.label}
    </span>
  );
}

/** Why a test has no verdict yet, in the monitor's figures (null: the status reason says it). */
function verdictReason(t: UnhealthyTestCase): string | null {
  const v = t.verdict;
  if (v?.kind !== 'not_enough_runs') return null;
  const seen = v.runs ? `${v.failures} of ${v.runs} runs failed` : 'no runs';
  return `${seen} on stable branches in the last ${v.window_hours} h: the failure-rate monitor decides from ${v.min_runs} runs`;
}

function TestList({ repo, org }: { repo: Repo; org: string }) {
  const [tab, setTab] = useState<Tab>('unhealthy');
  const [filter, setFilter] = useState('');
  const [onlyQuarantined, setOnlyQuarantined] = useState(false);
  const { data, error } = usePoll<(UnhealthyTestCase | DetailedTestCase)[]>(
    async () => {
      if (tab === 'unhealthy') {
        // Both, as `railyard flaky list-unhealthy` lists them: flaky first.
        const [flaky, broken] = await Promise.all([
          api.listUnhealthy(repo, org, 'FLAKY'),
          api.listUnhealthy(repo, org, 'BROKEN'),
        ]);
        return [...flaky.tests, ...broken.tests];
      }
      if (tab === 'flaky' || tab === 'broken')
        return (await api.listUnhealthy(repo, org, tab === 'flaky' ? 'FLAKY' : 'BROKEN')).tests;
      return (await api.listFailing(repo, org, tab === 'failing24' ? 24 : 168)).tests;
    },
    10_000,
    [repo.host, repo.owner, repo.name, org, tab],
  );
  const needle = filter.trim().toLowerCase();
  const shown = (data ?? []).filter(
    (t) =>
      (!onlyQuarantined || t.quarantined) &&
      (!needle ||
        [t.name, t.parent, t.classname, t.file_path, ...t.codeowners].some((s) =>
          s?.toLowerCase().includes(needle),
        )),
  );
  const failing = tab === 'failing24' || tab === 'failing7d';
  return (
    <>
      <div role="tablist" aria-label="Which tests" class="tabs">
        {TABS.map(([id, label]) => (
          <button
            key={id}
            role="tab"
            aria-selected={tab === id}
            class={tab === id ? 'on' : ''}
            onClick={() => setTab(id)}
          >
            {label}
          </button>
        ))}
      </div>
      <div class="filters">
        <label>
          Filter{' '}
          <input
            type="search"
            value={filter}
            onInput={(e) => setFilter(e.currentTarget.value)}
            placeholder="name, file, owner"
          />
        </label>
        <label>
          <input
            type="checkbox"
            checked={onlyQuarantined}
            onChange={(e) => setOnlyQuarantined(e.currentTarget.checked)}
          />{' '}
          quarantined only
        </label>
      </div>
      <ErrorBox message={error} />
      {data && shown.length === 0 && (
        <p>No test here{needle || onlyQuarantined ? ' matches the filters' : ''}.</p>
      )}
      {shown.length > 0 && (
        <table class="grid tests">
          <caption class="sr">{TABS.find(([id]) => id === tab)?.[1]} tests</caption>
          <thead>
            <tr>
              <th scope="col">Test</th>
              <th scope="col">Status</th>
              <th scope="col">Quarantine</th>
              {failing && (
                <th scope="col" class="num">
                  Failure rate 24 h
                </th>
              )}
              {failing && (
                <th scope="col" class="num">
                  7 days
                </th>
              )}
              {failing && (
                <th scope="col" class="num">
                  Passed on retry (7 d)
                </th>
              )}
              <th scope="col" class="num">
                PRs hit (7 d)
              </th>
              <th scope="col">Owners</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((t) => (
              <tr key={t.id} data-test={t.name}>
                <th scope="row">
                  <a href={`#/flaky/${repoPath(repo)}/test/${enc(t.id)}`}>{t.name}</a>
                  <div class="muted small">{t.parent ?? t.classname ?? t.file_path ?? ''}</div>
                </th>
                <td>
                  <TestState t={t} />
                </td>
                <td>
                  {t.quarantined ? <strong>⊘ quarantined</strong> : 'no'}
                  {t.quarantined && t.quarantine_override?.setting === 'ALWAYS_QUARANTINE' && (
                    <div class="muted small">
                      {t.quarantine_override.owner ?? ''}
                      {t.quarantine_override.seconds_left !== null
                        ? ` · ${timeLeft(t.quarantine_override.seconds_left)} left`
                        : ''}
                    </div>
                  )}
                </td>
                {failing && <td class="num">{percent((t as DetailedTestCase).failure_rate_last_24h)}</td>}
                {failing && <td class="num">{percent((t as DetailedTestCase).failure_rate_last_7d)}</td>}
                {failing && <td class="num">{t.verdict?.failures_passed_on_retry_last_7d ?? '—'}</td>}
                <td class="num">{t.pull_requests_impacted_last_7d}</td>
                <td class="small">{t.codeowners.join(', ') || '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

function TestDetail({ repo, org, testId }: { repo: Repo; org: string; testId: string }) {
  const { data, error, reload } = usePoll(() => api.testDetails(repo, org, testId), 0, [
    repo.host,
    repo.owner,
    repo.name,
    org,
    testId,
  ]);
  const settings = usePoll(() => api.settings(repo, org), 0, [repo.host, repo.owner, repo.name, org]);
  const history = usePoll(() => api.failureHistory(repo, org, testId, 30), 0, [
    repo.host,
    repo.owner,
    repo.name,
    org,
    testId,
  ]);
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState<string | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [ticket, setTicket] = useState('');
  const [forDays, setForDays] = useState('');
  const [reason, setReason] = useState('');
  const [warning, setWarning] = useState<string | null>(null);
  const act = async (what: () => Promise<unknown>, done: string) => {
    setBusy(true);
    setProblem(null);
    setMessage(null);
    setWarning(null);
    try {
      const answer = await what();
      // setTestQuarantine says so when the override does nothing yet (quarantining is off): then
      // the warning, not a success that did not happen.
      const warned = (answer as { warning?: string } | undefined)?.warning;
      if (warned) setWarning(warned);
      else setMessage(done);
      reload();
    } catch (e) {
      setProblem(e instanceof ApiError ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };
  const t = data?.test;
  /** The end and reason the form gives an Always or Never override. */
  const about = () => ({
    ...(forDays ? { until: new Date(Date.now() + Number(forDays) * 86_400_000).toISOString() } : {}),
    ...(reason.trim() ? { reason: reason.trim() } : {}),
  });
  return (
    <>
      <p class="crumbs">
        <a href={`#/flaky/${repoPath(repo)}`}>
          ← all tests of {repo.owner}/{repo.name}
        </a>
      </p>
      <ErrorBox message={error} />
      {t && (
        <>
          <h2>{t.name}</h2>
          <p class="summary">
            <TestState t={t} /> — {verdictReason(t) ?? t.status.reason} · {t.parent ?? t.classname ?? ''}{' '}
            {t.file_path ? `· ${t.file_path}` : ''} · owners {t.codeowners.join(', ') || 'none'}
          </p>
          {t.verdict && t.verdict.failures_passed_on_retry_last_7d > 0 && (
            <p class="small" data-testid="passed-on-retry">
              {t.verdict.failures_passed_on_retry_last_7d} of its failures in the last 7 days passed on retry
              on the same commit.
            </p>
          )}
          <div class="cols">
            <Section title="Failure rate over time" id="rate-h">
              <BarChart
                label="Share of runs that failed"
                unit="%"
                bars={[
                  { label: '7 days', value: Math.round(t.failure_rate_last_7d * 1000) / 10, kind: 'fail' },
                  { label: '24 h', value: Math.round(t.failure_rate_last_24h * 1000) / 10, kind: 'fail' },
                ]}
              />
              <ErrorBox message={history.error} />
              {history.data && (
                <DailyRateChart label="Failure rate per day, last 30 days" days={history.data.days} />
              )}
            </Section>
            <Section title="Quarantine and ticket" id="q-h">
              <p data-testid="quarantine-state">
                {t.quarantined ? (
                  <strong>⊘ Quarantined: its failures do not block merges.</strong>
                ) : (
                  'Not quarantined: its failures count.'
                )}
              </p>
              {t.quarantine_override && <OverrideLine o={t.quarantine_override} />}
              {settings.data && !settings.data.quarantining_enabled && (
                <p class="muted small" data-testid="quarantining-off">
                  Quarantining is off for this repository: an override is kept and takes effect once it is
                  turned on (railyard flaky settings --quarantining on).
                </p>
              )}
              <div class="filters">
                <label>
                  For{' '}
                  <select value={forDays} onChange={(e) => setForDays(e.currentTarget.value)}>
                    <option value="">no end</option>
                    <option value="1">1 day</option>
                    <option value="7">7 days</option>
                    <option value="30">30 days</option>
                  </select>
                </label>
                <label>
                  Reason{' '}
                  <input
                    value={reason}
                    maxLength={1024}
                    onInput={(e) => setReason(e.currentTarget.value)}
                    placeholder="KAN-123: times out on ARM"
                  />
                </label>
              </div>
              <div class="actions" role="group" aria-label="Quarantine">
                <button
                  disabled={busy}
                  onClick={() =>
                    act(
                      () => api.setQuarantine(repo, org, testId, 'ALWAYS_QUARANTINE', about()),
                      'Quarantined.',
                    )
                  }
                >
                  Always quarantine
                </button>
                <button
                  disabled={busy}
                  onClick={() =>
                    act(
                      () => api.setQuarantine(repo, org, testId, 'NEVER_QUARANTINE', about()),
                      'Never quarantined.',
                    )
                  }
                >
                  Never quarantine
                </button>
                <button
                  disabled={busy}
                  onClick={() =>
                    act(
                      () => api.setQuarantine(repo, org, testId, 'AUTO'),
                      'The repository settings decide again.',
                    )
                  }
                >
                  Automatic
                </button>
              </div>
              <p>
                Ticket:{' '}
                {t.ticket ? (
                  safeHref(t.ticket.html_url) ? (
                    <a href={safeHref(t.ticket.html_url)!} rel="noreferrer noopener">
                      {t.ticket.html_url}
                    </a>
                  ) : (
                    <span title="not an http(s) link: fix the ticket URL template in the repository settings">
                      {t.ticket.html_url}
                    </span>
                  )
                ) : (
                  'none'
                )}
              </p>
              <form
                class="picker"
                onSubmit={(e) => {
                  e.preventDefault();
                  if (ticket.trim())
                    void act(() => api.linkTicket(repo, testId, ticket.trim()), `Linked ${ticket.trim()}.`);
                }}
              >
                <label for="ticket">Link a ticket</label>
                <input
                  id="ticket"
                  value={ticket}
                  onInput={(e) => setTicket(e.currentTarget.value)}
                  placeholder="KAN-123"
                />
                <button type="submit" disabled={busy}>
                  Link
                </button>
              </form>
              {message && (
                <p role="status" class="ok">
                  ✔ {message}
                </p>
              )}
              {warning && (
                <p role="alert" class="summary attention" data-testid="quarantine-warning">
                  ⚠ {warning}
                </p>
              )}
              <ErrorBox message={problem} />
            </Section>
          </div>
          {history.data && history.data.excluded_uploads_total > 0 && (
            <ExcludedUploads
              history={history.data}
              threshold={settings.data?.infra_failure_threshold}
              minTests={settings.data?.infra_failure_min_tests}
            />
          )}
          <Section title="Most common failures" id="fail-h">
            {t.most_common_failures.length === 0 && <p class="muted">No failure recorded.</p>}
            <ol class="failures">
              {t.most_common_failures.map((f, i) => (
                <li key={i}>
                  <strong>{f.occurrence_count}×</strong>{' '}
                  {f.last_occurrence ? (
                    <span class="muted small">last {new Date(f.last_occurrence).toLocaleString()}</span>
                  ) : null}
                  <pre>{f.summary}</pre>
                </li>
              ))}
            </ol>
          </Section>
        </>
      )}
    </>
  );
}
