/**
 * Managing the outgoing webhooks of an organisation (the API extensions under /v1 and so the CLI
 * and the dashboard): endpoints with their secrets, test events, the delivery log, replays.
 */
import { isoTime, type Repo } from '../../contract/index.js';
import type { CreateWebhookRequest, WebhookDelivery, WebhookEndpoint as EndpointAnswer } from '../../contract/webhooks.js';
import type { Store, WebhookEndpoint } from '../../store/index.js';
import { badRequest, notFound, ofTokenOrg } from '../errors.js';
import { EVENT_TYPES, repoKeyOf, testEvent } from './events.js';
import { newSecret } from './signer.js';
import { SLACK_DEFAULT_EVENTS } from './slack.js';
import { AddressRefused, checkEndpointUrl, type AddressPolicy } from './ssrf.js';

/** Endpoints one organisation may have. */
export const MAX_ENDPOINTS_PER_ORG = 50;

export function endpointAnswer(e: WebhookEndpoint): EndpointAnswer {
  return {
    id: e.id,
    url: e.url,
    // Ticket lines are never listed here (the store leaves them out).
    kind: e.kind as 'standard' | 'slack',
    description: e.description,
    events: e.events,
    repos: e.repos,
    state: e.state,
    disabledReason: e.disabledReason,
    failingSince: e.failingSince === null ? null : isoTime(e.failingSince),
    createdAt: isoTime(e.createdAt),
  };
}

export class WebhookService {
  constructor(
    private readonly store: Store,
    private readonly policy: AddressPolicy,
    private readonly now: () => number = Date.now,
  ) {}

  private async endpoint(org: string, id: string) {
    const found = await this.store.webhooks.endpoints.findEndpoint(org, id);
    if (!found) throw notFound(`id: no webhook endpoint ${id} ${ofTokenOrg(org)}`);
    return found;
  }

  async create(org: string, input: CreateWebhookRequest) {
    try {
      checkEndpointUrl(input.url, this.policy);
    } catch (error) {
      if (error instanceof AddressRefused) throw badRequest(error.message);
      throw error;
    }
    const kind = input.kind ?? 'standard';
    if (kind === 'slack' && !input.url.startsWith('https://') && !this.policy.allowHttp) throw badRequest('url: must be https://');
    const unknown = input.events?.find((e) => !EVENT_TYPES.includes(e));
    if (unknown !== undefined) throw badRequest(`events: unknown event type "${unknown}" (one of ${EVENT_TYPES.join(', ')})`);
    const events = input.events?.length ? [...new Set(input.events)] : kind === 'slack' ? SLACK_DEFAULT_EVENTS : null;
    const repos = input.repos?.length ? [...new Set(input.repos.map((r: Repo) => repoKeyOf(r)))] : null;
    if ((await this.store.webhooks.endpoints.listEndpoints(org)).length >= MAX_ENDPOINTS_PER_ORG)
      throw badRequest(`url: ${ofTokenOrg(org)} has ${MAX_ENDPOINTS_PER_ORG} webhook endpoints already (the most there may be)`);
    const secret = newSecret();
    const endpoint = await this.store.webhooks.endpoints.createEndpoint({ org, url: input.url, kind, description: input.description ?? null, events, repos, secret });
    return { endpoint: endpointAnswer(endpoint), secret };
  }

  async list(org: string) {
    return { endpoints: (await this.store.webhooks.endpoints.listEndpoints(org)).map(endpointAnswer), eventTypes: [...EVENT_TYPES] };
  }

  async test(org: string, id: string) {
    const endpoint = await this.endpoint(org, id);
    if (endpoint.state !== 'enabled') throw badRequest(`id: webhook endpoint ${id} is disabled; enable it first`);
    const db = this.store.db;
    const [webhookId] = await db.transaction().execute((trx) => this.store.webhooks.writeEvents(trx, org, [testEvent(id, this.now())], id));
    return { webhookId: webhookId! };
  }

  async setState(org: string, id: string, state: 'enabled' | 'disabled') {
    await this.endpoint(org, id);
    await this.store.webhooks.endpoints.setEndpointState(org, id, state, state === 'disabled' ? 'disabled by request' : null);
    return { endpoint: endpointAnswer(await this.endpoint(org, id)) };
  }

  async remove(org: string, id: string) {
    if (!(await this.store.webhooks.endpoints.deleteEndpoint(org, id))) throw notFound(`id: no webhook endpoint ${id} ${ofTokenOrg(org)}`);
    return {};
  }

  async rotate(org: string, id: string, overlapHours = 24) {
    await this.endpoint(org, id);
    const secret = newSecret();
    const until = this.now() + overlapHours * 3_600_000;
    await this.store.webhooks.endpoints.rotateSecret(org, id, secret, until);
    return { secret, previousSecretValidUntil: isoTime(until) };
  }

  async deliveries(org: string, id: string, limit = 50, before?: number): Promise<{ deliveries: WebhookDelivery[] }> {
    await this.endpoint(org, id);
    const rows = await this.store.webhooks.listDeliveries(id, limit, before);
    return {
      deliveries: rows.map((d) => ({
        id: d.id,
        webhookId: d.messageId,
        type: d.type,
        state: d.state,
        attempts: d.attempts,
        nextAttemptAt: d.nextAt === null ? null : isoTime(d.nextAt),
        lastStatus: d.lastStatus,
        lastError: d.lastError,
        createdAt: isoTime(d.createdAt),
        finishedAt: d.finishedAt === null ? null : isoTime(d.finishedAt),
        payload: JSON.parse(d.payload) as unknown,
        log: d.log.map((a) => ({ attempt: a.n, at: isoTime(a.at), status: a.status, latencyMs: a.latencyMs, error: a.error, response: a.response })),
      })),
    };
  }

  async replay(org: string, deliveryId: number) {
    const found = await this.store.webhooks.deliveryEndpoint(org, deliveryId);
    if (!found) throw notFound(`deliveryId: no webhook delivery ${deliveryId} ${ofTokenOrg(org)}`);
    const id = await this.store.webhooks.replay(org, deliveryId);
    return { deliveryId: id!, webhookId: found.messageId };
  }
}
