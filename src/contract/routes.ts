/** The v1 API's route table (every operation, in order) and the request and response types of each. */
import { z } from 'zod';
import { EmptyResponse } from './common.js';
import { at, route } from './route-def.js';
import { flakyRoutes } from './routes-flaky.js';
import { mqRoutes } from './routes-mq.js';
import * as wh from './webhooks.js';

export { API_PREFIX, type RouteDef } from './route-def.js';

export const StatusResponse = z.object({
  overallStatus: z.object({
    type: z.enum(['up', 'impacted']),
    color: z.enum(['green', 'yellow', 'red']),
    overallStatusDescription: z.string(),
    impactedStatuses: z
      .array(
        z.object({
          name: z.string(),
          color: z.enum(['green', 'yellow', 'red']),
          statusDescription: z.string(),
        }),
      )
      .optional(),
  }),
  statuses: z.array(
    z.object({ name: z.string(), color: z.enum(['green', 'yellow', 'red']), statusDescription: z.string() }),
  ),
});
export type StatusResponse = z.infer<typeof StatusResponse>;

/**
 * THE route table: every operation's schemas and documentation; its name, method and path come
 * from ROUTE_PATHS. The merge-queue and flaky-test operations are in routes-mq.ts and
 * routes-flaky.ts; the webhook and service operations follow here, in the table's order.
 */
export const routes = {
  ...mqRoutes,
  ...flakyRoutes,
  createWebhook: route({
    ...at('createWebhook'),
    summary:
      "Create an outgoing webhook endpoint of the token's organisation; the answer holds its signing secret, shown only there",
    tag: 'webhooks',
    auth: true,
    retrySafe: false,
    permission: 'settings',
    request: wh.CreateWebhookRequest,
    response: wh.CreateWebhookResponse,
    extension: true,
  }),
  listWebhooks: route({
    ...at('listWebhooks'),
    summary:
      "The outgoing webhook endpoints of the token's organisation (never their secrets) and the event types there are",
    tag: 'webhooks',
    auth: true,
    retrySafe: true,
    permission: null,
    request: wh.ListWebhooksRequest,
    response: wh.ListWebhooksResponse,
    extension: true,
  }),
  testWebhook: route({
    ...at('testWebhook'),
    summary: 'Send a test event (webhook.test) to one endpoint',
    tag: 'webhooks',
    auth: true,
    retrySafe: false,
    permission: 'settings',
    request: wh.WebhookIdRequest,
    response: wh.TestWebhookResponse,
    extension: true,
  }),
  disableWebhook: route({
    ...at('disableWebhook'),
    summary: 'Stop delivering to an endpoint (events wait until it is enabled again)',
    tag: 'webhooks',
    auth: true,
    retrySafe: false,
    permission: 'settings',
    request: wh.WebhookIdRequest,
    response: wh.WebhookEndpointResponse,
    extension: true,
  }),
  enableWebhook: route({
    ...at('enableWebhook'),
    summary: 'Deliver to an endpoint again (also one the server disabled after it failed for days)',
    tag: 'webhooks',
    auth: true,
    retrySafe: false,
    permission: 'settings',
    request: wh.WebhookIdRequest,
    response: wh.WebhookEndpointResponse,
    extension: true,
  }),
  deleteWebhook: route({
    ...at('deleteWebhook'),
    summary: 'Delete an endpoint and its delivery log',
    tag: 'webhooks',
    auth: true,
    retrySafe: false,
    permission: 'settings',
    request: wh.WebhookIdRequest,
    response: EmptyResponse,
    extension: true,
  }),
  rotateWebhookSecret: route({
    ...at('rotateWebhookSecret'),
    summary: 'A new signing secret; the old one signs too (a second signature) for overlapHours',
    tag: 'webhooks',
    auth: true,
    retrySafe: false,
    permission: 'settings',
    request: wh.RotateWebhookSecretRequest,
    response: wh.RotateWebhookSecretResponse,
    extension: true,
  }),
  listWebhookDeliveries: route({
    ...at('listWebhookDeliveries'),
    summary: 'The delivery log of an endpoint, newest first: each event with its attempts (status, latency, the start of the answer)',
    tag: 'webhooks',
    auth: true,
    retrySafe: true,
    permission: null,
    request: wh.ListWebhookDeliveriesRequest,
    response: wh.ListWebhookDeliveriesResponse,
    extension: true,
  }),
  replayWebhookDelivery: route({
    ...at('replayWebhookDelivery'),
    summary: 'Send a delivered or failed event again (same webhook-id)',
    tag: 'webhooks',
    auth: true,
    retrySafe: false,
    permission: 'settings',
    request: wh.ReplayWebhookDeliveryRequest,
    response: wh.ReplayWebhookDeliveryResponse,
    extension: true,
  }),
  status: route({
    ...at('status'),
    summary: 'Service status (no token needed)',
    tag: 'service',
    auth: false,
    retrySafe: true,
    permission: null,
    request: null,
    response: StatusResponse,
  }),
} as const;

export type Routes = typeof routes;
export type OperationName = keyof Routes;

type RequestOf<R> = R extends { request: infer Q } ? (Q extends z.ZodType ? z.input<Q> : undefined) : never;
type ResponseOf<R> = R extends { response: infer S } ? (S extends z.ZodType ? z.output<S> : string) : never;

/** What a caller sends for an operation (before server-side coercion). */
export type RequestBody<Op extends OperationName> = RequestOf<Routes[Op]>;
/** What the server answers with for an operation. */
export type ResponseBody<Op extends OperationName> = ResponseOf<Routes[Op]>;
