/**
 * Outgoing webhooks in the database, part 1: the endpoints of each organisation (URL, kind,
 * filters, state and why it is off) and their signing secrets (with the rotation overlap). The
 * outbox, deliveries and attempts are in webhooks.ts, whose WebhookStore holds these as `endpoints`.
 */
import { randomBytes } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import type { Kysely, Transaction } from 'kysely';
import type { SchemaTables } from './schema.js';

type Db = Kysely<SchemaTables> | Transaction<SchemaTables>;

/** `ticket`: a repository's ticket line (src/store/tickets.ts), never listed among the webhooks. */
export type EndpointKind = 'standard' | 'slack' | 'ticket';
export type EndpointState = 'enabled' | 'disabled';

export interface WebhookEndpoint {
  id: string;
  org: string;
  url: string;
  kind: EndpointKind;
  description: string | null;
  /** null: every event. */
  events: string[] | null;
  /** null: every repository. */
  repos: string[] | null;
  state: EndpointState;
  disabledReason: string | null;
  failingSince: number | null;
  createdAt: number;
  updatedAt: number;
}

/** An endpoint with what signs its deliveries. */
export interface EndpointSecrets extends WebhookEndpoint {
  secret: string;
  previousSecret: string | null;
  previousSecretUntil: number | null;
}

export interface NewEndpoint {
  org: string;
  url: string;
  kind: EndpointKind;
  description: string | null;
  events: string[] | null;
  repos: string[] | null;
  secret: string;
}

export interface EndpointRow {
  id: string;
  org_slug: string;
  url: string;
  kind: string;
  description: string | null;
  events: string | null;
  repos: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_until: number | null;
  state: string;
  disabled_reason: string | null;
  failing_since: number | null;
  created_at: number;
  updated_at: number;
}

export const numOrNull = (v: unknown) => (v === null || v === undefined ? null : Number(v));

export function endpointOf(r: EndpointRow): EndpointSecrets {
  return {
    id: r.id,
    org: r.org_slug,
    url: r.url,
    kind: r.kind as EndpointKind,
    description: r.description,
    events: r.events === null ? null : (JSON.parse(r.events) as string[]),
    repos: r.repos === null ? null : (JSON.parse(r.repos) as string[]),
    state: r.state as EndpointState,
    disabledReason: r.disabled_reason,
    failingSince: numOrNull(r.failing_since),
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
    secret: r.secret,
    previousSecret: r.previous_secret,
    previousSecretUntil: numOrNull(r.previous_secret_until),
  };
}

/** The endpoint without its secrets (what the API answers). */
export function publicEndpoint(e: EndpointSecrets | WebhookEndpoint): WebhookEndpoint {
  const {
    id,
    org,
    url,
    kind,
    description,
    events,
    repos,
    state,
    disabledReason,
    failingSince,
    createdAt,
    updatedAt,
  } = e;
  return {
    id,
    org,
    url,
    kind,
    description,
    events,
    repos,
    state,
    disabledReason,
    failingSince,
    createdAt,
    updatedAt,
  };
}

/** Whether an endpoint wants an event. */
export function endpointWants(
  e: Pick<WebhookEndpoint, 'events' | 'repos'>,
  type: string,
  repoKey: string | null,
): boolean {
  if (e.events !== null && !e.events.includes(type)) return false;
  if (e.repos !== null && repoKey !== null && !e.repos.includes(repoKey)) return false;
  return true;
}

export const ENDPOINT_COLUMNS = [
  'id',
  'org_slug',
  'url',
  'kind',
  'description',
  'events',
  'repos',
  'secret',
  'previous_secret',
  'previous_secret_until',
  'state',
  'disabled_reason',
  'failing_since',
  'created_at',
  'updated_at',
] as const;

/** The enabled endpoints of `org` with their filters (the outbox writes one delivery per wanting endpoint). */
export async function enabledEndpoints(
  trx: Db,
  org: string,
): Promise<Pick<WebhookEndpoint, 'id' | 'kind' | 'events' | 'repos'>[]> {
  const rows = await trx
    .selectFrom('webhook_endpoints')
    .select(['id', 'kind', 'events', 'repos'])
    .where('org_slug', '=', org)
    .where('state', '=', 'enabled')
    .orderBy('id')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    kind: r.kind as EndpointKind,
    events: r.events === null ? null : (JSON.parse(r.events) as string[]),
    repos: r.repos === null ? null : (JSON.parse(r.repos) as string[]),
  }));
}

/** Endpoint management (create, list, enable/disable, rotate, delete): `store.webhooks.endpoints`. */
export class WebhookEndpoints {
  constructor(
    private readonly db: Kysely<SchemaTables>,
    /** Emits `written` when deliveries became due (the deliverers of this process look at once). */
    private readonly signals: EventEmitter,
  ) {}

  async createEndpoint(e: NewEndpoint): Promise<EndpointSecrets> {
    const now = Date.now();
    const row: EndpointRow = {
      id: `ep_${randomBytes(12).toString('hex')}`,
      org_slug: e.org,
      url: e.url,
      kind: e.kind,
      description: e.description,
      events: e.events === null ? null : JSON.stringify(e.events),
      repos: e.repos === null ? null : JSON.stringify(e.repos),
      secret: e.secret,
      previous_secret: null,
      previous_secret_until: null,
      state: 'enabled',
      disabled_reason: null,
      failing_since: null,
      created_at: now,
      updated_at: now,
    };
    await this.db.transaction().execute(async (trx) => {
      const org = await trx
        .selectFrom('organisations')
        .select('slug')
        .where('slug', '=', e.org)
        .executeTakeFirst();
      if (!org) await trx.insertInto('organisations').values({ slug: e.org, created_at: now }).execute();
      await trx.insertInto('webhook_endpoints').values(row).execute();
    });
    return endpointOf(row);
  }

  async listEndpoints(org: string): Promise<WebhookEndpoint[]> {
    const rows = await this.db
      .selectFrom('webhook_endpoints')
      .select(ENDPOINT_COLUMNS)
      .where('org_slug', '=', org)
      .where('kind', '<>', 'ticket')
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map((r) => publicEndpoint(endpointOf(r as EndpointRow)));
  }

  async findEndpoint(org: string, id: string): Promise<EndpointSecrets | undefined> {
    const row = await this.db
      .selectFrom('webhook_endpoints')
      .select(ENDPOINT_COLUMNS)
      .where('org_slug', '=', org)
      .where('id', '=', id)
      .where('kind', '<>', 'ticket')
      .executeTakeFirst();
    return row && endpointOf(row as EndpointRow);
  }

  /** Enables or disables an endpoint; false when there is no such endpoint. */
  async setEndpointState(
    org: string,
    id: string,
    state: EndpointState,
    reason: string | null,
  ): Promise<boolean> {
    const result = await this.db
      .updateTable('webhook_endpoints')
      .set({
        state,
        disabled_reason: state === 'disabled' ? reason : null,
        failing_since: null,
        updated_at: Date.now(),
      })
      .where('org_slug', '=', org)
      .where('id', '=', id)
      .executeTakeFirst();
    if (state === 'enabled') {
      // What waited while it was off goes out now.
      await this.db
        .updateTable('webhook_deliveries')
        .set({ next_at: Date.now() })
        .where('endpoint_id', '=', id)
        .where('state', '=', 'pending')
        .execute();
      this.signals.emit('written');
    }
    return Number(result.numUpdatedRows) > 0;
  }

  /** New secret; the old one keeps signing (a second signature) until `until`. */
  async rotateSecret(org: string, id: string, secret: string, until: number): Promise<boolean> {
    const result = await this.db
      .updateTable('webhook_endpoints')
      .set((eb) => ({
        previous_secret: eb.ref('secret'),
        previous_secret_until: until,
        secret,
        updated_at: Date.now(),
      }))
      .where('org_slug', '=', org)
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async deleteEndpoint(org: string, id: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const found = await trx
        .selectFrom('webhook_endpoints')
        .select('id')
        .where('org_slug', '=', org)
        .where('id', '=', id)
        .where('kind', '<>', 'ticket')
        .executeTakeFirst();
      if (!found) return false;
      const ids = trx.selectFrom('webhook_deliveries').select('id').where('endpoint_id', '=', id);
      await trx.deleteFrom('webhook_attempts').where('delivery_id', 'in', ids).execute();
      await trx.deleteFrom('webhook_deliveries').where('endpoint_id', '=', id).execute();
      await trx.deleteFrom('webhook_endpoints').where('id', '=', id).execute();
      return true;
    });
  }
}
