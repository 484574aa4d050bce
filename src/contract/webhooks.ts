/** The outgoing webhooks' schemas (an extension): endpoints, deliveries, replays, and the events sent. */
import { z } from 'zod';
import { Repo } from './common.js';

// Railyard extension (not in Trunk's v1 contract, where webhooks are configured in Trunk's web
// app): the outgoing webhook endpoints of the token's organisation and their delivery log.
// docs/webhooks.md.

export const WEBHOOK_KINDS = ['standard', 'slack'] as const;

export const WebhookIdRequest = z.object({
  /** The endpoint id (`ep_…`) createWebhook answered. */
  id: z.string().min(1).max(100),
});

export const CreateWebhookRequest = z.object({
  /** Where events are POSTed: https:// (http:// only when the server allows it). */
  url: z.string().min(1).max(2048),
  /** standard (signed JSON, Trunk's payloads) or slack (a Slack incoming-webhook URL). */
  kind: z.enum(WEBHOOK_KINDS).optional(),
  /** Event types to send (default: every event; for slack, the PR outcomes and flaky-test changes). */
  events: z.array(z.string().min(1).max(100)).max(100).optional(),
  /** Only events of these repositories (default: every repository). */
  repos: z.array(Repo).max(100).optional(),
  description: z.string().max(500).optional(),
});
export type CreateWebhookRequest = z.infer<typeof CreateWebhookRequest>;

export const WebhookEndpoint = z.object({
  id: z.string(),
  url: z.string(),
  kind: z.enum(WEBHOOK_KINDS),
  description: z.string().nullable(),
  /** null: every event. */
  events: z.array(z.string()).nullable(),
  /** `host/owner/name`; null: every repository. */
  repos: z.array(z.string()).nullable(),
  /** disabled by `webhook disable`, or by the server after failing for days (disabledReason says which). */
  state: z.enum(['enabled', 'disabled']),
  disabledReason: z.string().nullable(),
  /** Since when every attempt failed (null while deliveries succeed). */
  failingSince: z.string().nullable(),
  createdAt: z.string(),
});
export type WebhookEndpoint = z.infer<typeof WebhookEndpoint>;

export const CreateWebhookResponse = z.object({
  endpoint: WebhookEndpoint,
  /** The signing secret (`whsec_…`): shown in this answer only. */
  secret: z.string(),
});

export const ListWebhooksRequest = z.object({});
export const ListWebhooksResponse = z.object({ endpoints: z.array(WebhookEndpoint), eventTypes: z.array(z.string()) });
export const WebhookEndpointResponse = z.object({ endpoint: WebhookEndpoint });

export const TestWebhookResponse = z.object({
  /** The `webhook-id` of the test event. */
  webhookId: z.string(),
});

export const RotateWebhookSecretRequest = WebhookIdRequest.extend({
  /** How long the old secret keeps signing beside the new one (hours, 0..168; default 24). */
  overlapHours: z.number().min(0).max(168).optional(),
});
export const RotateWebhookSecretResponse = z.object({
  secret: z.string(),
  previousSecretValidUntil: z.string(),
});

export const ListWebhookDeliveriesRequest = WebhookIdRequest.extend({
  limit: z.number().int().min(1).max(500).optional(),
  /** Only deliveries older than this delivery id (paging). */
  before: z.number().int().min(1).optional(),
});

export const WebhookAttempt = z.object({
  attempt: z.number().int(),
  at: z.string(),
  /** HTTP status, null when no answer came (the error says why). */
  status: z.number().int().nullable(),
  latencyMs: z.number(),
  error: z.string().nullable(),
  /** The start of the answer's body (at most 1 KiB). */
  response: z.string().nullable(),
});

export const WebhookDelivery = z.object({
  id: z.number().int(),
  /** The `webhook-id` header: the same on every attempt and replay. */
  webhookId: z.string(),
  type: z.string(),
  state: z.enum(['pending', 'succeeded', 'failed']),
  attempts: z.number().int(),
  nextAttemptAt: z.string().nullable(),
  lastStatus: z.number().int().nullable(),
  lastError: z.string().nullable(),
  createdAt: z.string(),
  finishedAt: z.string().nullable(),
  payload: z.unknown(),
  log: z.array(WebhookAttempt),
});
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;

export const ListWebhookDeliveriesResponse = z.object({ deliveries: z.array(WebhookDelivery) });

export const ReplayWebhookDeliveryRequest = z.object({ deliveryId: z.number().int().min(1) });
export const ReplayWebhookDeliveryResponse = z.object({ deliveryId: z.number().int(), webhookId: z.string() });
