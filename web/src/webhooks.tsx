// The webhooks page: the organisation's outgoing webhook endpoints with their state (and why an
// endpoint is off), and per endpoint the delivery log — every attempt's status code, latency and
// the start of the receiver's answer — with a replay button (the replayWebhookDelivery API).
// Everything shown is text rendered by Preact (escaped): URLs, descriptions and the receivers'
// answers come from outside and are never markup here.
import { useState } from 'preact/hooks';
import { api, ApiError, mayChange, type WebhookDelivery, type WebhookEndpoint } from './api.js';
import { enc } from './format.js';
import { usePoll } from './poll.js';
import { ErrorBox, Section, State } from './ui.js';

/** What the page shows of a receiver's answer or an error (the server keeps 1 KiB already). */
export const EXCERPT_CHARS = 1024;

function bounded(text: string | null): string | null {
  if (text === null) return null;
  return text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text;
}

/** `2026-11-26 13:05:01 UTC` from an ISO time. */
function when(iso: string | null): string {
  if (!iso) return '—';
  return `${iso.replace('T', ' ').slice(0, 19)} UTC`;
}

/** Why an endpoint is in its state, as a sentence (null: enabled and delivering). */
function stateWhy(e: WebhookEndpoint): string | null {
  if (e.state === 'disabled') return e.disabledReason ? `Disabled: ${e.disabledReason}.` : 'Disabled.';
  if (e.failingSince) return `Every attempt has failed since ${when(e.failingSince)}; retries continue.`;
  return null;
}

export function WebhooksPage({ endpoint, org }: { endpoint: string | null; org: string }) {
  const { data, error } = usePoll(() => api.listWebhooks(), 3000, [endpoint]);
  const chosen = endpoint ? data?.endpoints.find((e) => e.id === endpoint) : undefined;
  if (endpoint) {
    return (
      <main>
        <p class="crumbs">
          <a href="#/webhooks">Webhooks</a>
        </p>
        <h1>Webhook endpoint</h1>
        <ErrorBox message={error} />
        {data && !chosen && <p>No webhook endpoint {endpoint} in organisation “{org}”.</p>}
        {chosen && <EndpointFacts e={chosen} />}
        {chosen && <DeliveryLog endpoint={chosen} />}
      </main>
    );
  }
  return (
    <main>
      <h1>Webhooks</h1>
      <ErrorBox message={error} />
      {data && data.endpoints.length === 0 && (
        <p>
          No webhook endpoint yet in organisation “{org}”. Create one with <code>railyard webhook create</code>.
        </p>
      )}
      {data && data.endpoints.length > 0 && (
        <table class="grid webhooks">
          <caption class="sr">The outgoing webhook endpoints of organisation {org}</caption>
          <thead>
            <tr>
              <th scope="col">Endpoint</th>
              <th scope="col">Kind</th>
              <th scope="col">Events</th>
              <th scope="col">Repositories</th>
              <th scope="col">State</th>
            </tr>
          </thead>
          <tbody>
            {data.endpoints.map((e) => (
              <tr key={e.id} class={e.state === 'disabled' || e.failingSince ? 'attention' : ''}>
                <th scope="row">
                  <a href={`#/webhooks/${enc(e.id)}`}>{e.url}</a>
                  {e.description && <div class="small description">{e.description}</div>}
                  <div class="muted small">
                    <code>{e.id}</code>
                  </div>
                </th>
                <td>{e.kind}</td>
                <td class="small">{e.events ? e.events.join(', ') : 'every event'}</td>
                <td class="small">{e.repos ? e.repos.join(', ') : 'every repository'}</td>
                <td>
                  <State state={e.state} />
                  {stateWhy(e) && <div class="small reason-text">{stateWhy(e)}</div>}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </main>
  );
}

function EndpointFacts({ e }: { e: WebhookEndpoint }) {
  const why = stateWhy(e);
  return (
    <dl class="facts">
      <dt>URL</dt>
      <dd>
        <code>{e.url}</code>
      </dd>
      <dt>Description</dt>
      <dd class="description">{e.description ?? '—'}</dd>
      <dt>Kind</dt>
      <dd>{e.kind}</dd>
      <dt>Events</dt>
      <dd>{e.events ? e.events.join(', ') : 'every event'}</dd>
      <dt>Repositories</dt>
      <dd>{e.repos ? e.repos.join(', ') : 'every repository'}</dd>
      <dt>State</dt>
      <dd data-testid="endpoint-state">
        <State state={e.state} />
        {why && <span class="reason-text"> {why}</span>}
      </dd>
      <dt>Created</dt>
      <dd>{when(e.createdAt)}</dd>
    </dl>
  );
}

function DeliveryLog({ endpoint }: { endpoint: WebhookEndpoint }) {
  const [limit, setLimit] = useState(50);
  const [notice, setNotice] = useState<string | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState<number | null>(null);
  const { data, error, reload } = usePoll(() => api.webhookDeliveries(endpoint.id, limit), 3000, [endpoint.id, limit]);
  const replay = async (d: WebhookDelivery) => {
    setBusy(d.id);
    setProblem(null);
    try {
      const r = await api.replayWebhookDelivery(d.id);
      setNotice(`Delivery #${d.id} replayed as delivery #${r.deliveryId} (same webhook-id ${r.webhookId}).`);
      reload();
    } catch (e) {
      setProblem(e instanceof ApiError ? e.message : String(e));
    } finally {
      setBusy(null);
    }
  };
  return (
    <Section title="Delivery log" id="deliveries-h">
      <p class="muted small">
        Newest first. A replay sends the same event again with the same webhook-id, so receivers can tell it from a
        new one.
      </p>
      <p role="status" class="ok">
        {notice}
      </p>
      <ErrorBox message={problem ?? error} />
      {data && data.deliveries.length === 0 && <p>No delivery yet.</p>}
      <ol class="deliveries">
        {data?.deliveries.map((d) => (
          <li key={d.id}>
            <article class={`delivery d-${d.state}`} aria-labelledby={`delivery-${d.id}`}>
              <header>
                <h3 id={`delivery-${d.id}`}>Delivery {d.id}</h3>
                <code>{d.type}</code> <State state={d.state} />{' '}
                <span class="muted small">
                  webhook-id <code>{d.webhookId}</code> · created {when(d.createdAt)}
                  {d.nextAttemptAt && ` · next attempt ${when(d.nextAttemptAt)}`}
                </span>{' '}
                {d.state !== 'pending' && mayChange('settings') && (
                  <button
                    type="button"
                    aria-label={`Replay delivery ${d.id}`}
                    disabled={busy === d.id}
                    onClick={() => void replay(d)}
                  >
                    Replay
                  </button>
                )}
              </header>
              {d.log.length === 0 ? (
                <p class="muted small">No attempt yet.</p>
              ) : (
                <table class="grid attempts">
                  <caption class="sr">Attempts of delivery {d.id}</caption>
                  <thead>
                    <tr>
                      <th scope="col" class="num">
                        Attempt
                      </th>
                      <th scope="col">At</th>
                      <th scope="col" class="num">
                        Status
                      </th>
                      <th scope="col" class="num">
                        Latency
                      </th>
                      <th scope="col">Answer</th>
                    </tr>
                  </thead>
                  <tbody>
                    {d.log.map((a) => (
                      <tr key={a.attempt}>
                        <th scope="row" class="num">
                          {a.attempt}
                        </th>
                        <td class="small">{when(a.at)}</td>
                        <td class="num">{a.status ?? '—'}</td>
                        <td class="num">{Math.round(a.latencyMs)} ms</td>
                        <td>
                          {a.error && <div class="error-text">{bounded(a.error)}</div>}
                          {a.response ? <pre class="excerpt">{bounded(a.response)}</pre> : !a.error && '—'}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
            </article>
          </li>
        ))}
      </ol>
      {data && data.deliveries.length >= limit && limit < 500 && (
        <button type="button" onClick={() => setLimit(Math.min(500, limit + 50))}>
          Show older deliveries
        </button>
      )}
    </Section>
  );
}
