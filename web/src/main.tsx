import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import {
  ApiError,
  api,
  clearToken,
  getToken,
  handleUnauthorized,
  setToken,
  tryToken,
  type Repo,
} from './api.js';
import { FlakyPage } from './flaky.js';
import { PrPage } from './pr.js';
import { QueuePage } from './queue.js';
import { QueuesPage } from './queues.js';
import { useRoute } from './router.js';
import { ThroughputPage } from './throughput.js';
import { ErrorBox } from './ui.js';
import { WebhooksPage } from './webhooks.js';
import './style.css';
import './charts.css';
import './pages.css';

interface Session {
  org: string;
  repos: Repo[];
}

function uniqueRepos(queues: { repo: Repo }[]): Repo[] {
  const seen = new Map<string, Repo>();
  for (const q of queues) seen.set(`${q.repo.host}/${q.repo.owner}/${q.repo.name}`, q.repo);
  return [...seen.values()];
}

function App() {
  // With a token from earlier in this tab, the page is drawn at once; the organisation follows.
  const [session, setSession] = useState<Session | null>(() => (getToken() ? { org: '', repos: [] } : null));
  const [problem, setProblem] = useState<string | null>(null);

  useEffect(() => {
    handleUnauthorized((message) => {
      clearToken();
      setSession(null);
      setProblem(message);
    });
    if (!getToken()) return;
    api
      .listQueues()
      .then((r) => setSession({ org: r.org, repos: uniqueRepos(r.queues) }))
      .catch((e: unknown) => setProblem(e instanceof ApiError ? e.message : String(e)));
  }, []);

  if (!session) {
    return (
      <Login
        problem={problem}
        onToken={async (token) => {
          try {
            const r = await tryToken(token);
            setToken(token);
            setProblem(null);
            setSession({ org: r.org, repos: uniqueRepos(r.queues) });
          } catch (e) {
            setProblem(e instanceof ApiError ? e.message : String(e));
          }
        }}
      />
    );
  }
  return (
    <Shell
      session={session}
      onSignOut={() => {
        clearToken();
        setSession(null);
        setProblem(null);
      }}
    />
  );
}

function Login({ problem, onToken }: { problem: string | null; onToken: (token: string) => Promise<void> }) {
  const [token, setTokenText] = useState('');
  const [busy, setBusy] = useState(false);
  return (
    <main class="login">
      <h1>Railyard</h1>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          if (!token.trim()) return;
          setBusy(true);
          await onToken(token.trim());
          setBusy(false);
        }}
      >
        <label for="token">API token</label>
        <input
          id="token"
          name="token"
          type="password"
          autocomplete="off"
          autoFocus
          value={token}
          onInput={(e) => setTokenText(e.currentTarget.value)}
        />
        <button type="submit" disabled={busy}>
          Open the dashboard
        </button>
        <p class="muted small">
          The token stays in this browser tab only (session storage) and is sent in the x-api-token header,
          never in a URL.
        </p>
        <ErrorBox message={problem} />
      </form>
    </main>
  );
}

function Shell({ session, onSignOut }: { session: Session; onSignOut: () => void }) {
  const route = useRoute();
  const current = (page: string) =>
    route.page === page || (page === 'queues' && (route.page === 'queue' || route.page === 'pr'))
      ? 'page'
      : undefined;
  return (
    <>
      <a
        class="skip"
        href="#main"
        onClick={(e) => {
          e.preventDefault();
          document.getElementById('main')?.focus();
        }}
      >
        Skip to content
      </a>
      <header class="top">
        <strong class="brand">Railyard</strong>
        <nav aria-label="Pages">
          <a href="#/" aria-current={current('queues')}>
            Queues
          </a>
          <a href="#/flaky" aria-current={current('flaky')}>
            Flaky tests
          </a>
          <a href="#/throughput" aria-current={current('throughput')}>
            Throughput
          </a>
          <a href="#/webhooks" aria-current={current('webhooks')}>
            Webhooks
          </a>
        </nav>
        <span class="muted small">org {session.org}</span>
        <button class="link" onClick={onSignOut}>
          Forget token
        </button>
      </header>
      <div id="main" tabIndex={-1}>
        <Page session={session} route={route} />
      </div>
    </>
  );
}

function Page({ session, route }: { session: Session; route: ReturnType<typeof useRoute> }) {
  switch (route.page) {
    case 'queues':
      return <QueuesPage />;
    case 'queue':
      return (
        <QueuePage
          key={`${route.repo.host}/${route.repo.owner}/${route.repo.name}/${route.branch}`}
          repo={route.repo}
          branch={route.branch}
        />
      );
    case 'pr':
      return (
        <PrPage
          key={`${route.repo.host}/${route.repo.owner}/${route.repo.name}/${route.branch}/${route.number}`}
          repo={route.repo}
          branch={route.branch}
          number={route.number}
        />
      );
    case 'flaky':
      if (!session.org) return <p class="loading">Reading the organisation…</p>;
      return <FlakyPage repo={route.repo} testId={route.testId} org={session.org} repos={session.repos} />;
    case 'throughput':
      return <ThroughputPage />;
    case 'webhooks':
      return <WebhooksPage key={route.endpoint ?? ''} endpoint={route.endpoint} org={session.org} />;
    default:
      return (
        <main>
          <h1>No such page</h1>
          <p>
            Nothing lives at {route.path}. <a href="#/">Back to the queues</a>.
          </p>
        </main>
      );
  }
}

const root = document.getElementById('app')!;
root.textContent = '';
render(<App />, root);
