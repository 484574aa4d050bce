/** The outgoing-webhook operations (Railyard extensions under /v1) over the webhook service. */
import type { WebhookService } from '../webhooks/service.js';
import type { Handlers, OpsOfTag } from './types.js';

export type WebhookHandlers = Pick<Handlers, OpsOfTag<'webhooks'>>;

export function webhookHandlers(webhooks: WebhookService): WebhookHandlers {
  return {
    createWebhook: (input, ctx) => webhooks.create(ctx.org, input),
    listWebhooks: (_input, ctx) => webhooks.list(ctx.org),
    testWebhook: (input, ctx) => webhooks.test(ctx.org, input.id),
    disableWebhook: (input, ctx) => webhooks.setState(ctx.org, input.id, 'disabled'),
    enableWebhook: (input, ctx) => webhooks.setState(ctx.org, input.id, 'enabled'),
    deleteWebhook: (input, ctx) => webhooks.remove(ctx.org, input.id),
    rotateWebhookSecret: (input, ctx) => webhooks.rotate(ctx.org, input.id, input.overlapHours),
    listWebhookDeliveries: (input, ctx) => webhooks.deliveries(ctx.org, input.id, input.limit, input.before),
    replayWebhookDelivery: (input, ctx) => webhooks.replay(ctx.org, input.deliveryId),
  };
}
