/** `railyard webhook deliveries`: show the delivery log of an endpoint, newest first: event, state, attempts, last status and latency. */
import { Args, Flags } from '@oclif/core';
import { BaseCommand, formatFlag, formatOf } from '../../cli/base-command.js';
import type { WebhookDelivery } from '../../contract/index.js';

export default class WebhookDeliveries extends BaseCommand {
  static override summary =
    'Show the delivery log of an endpoint, newest first: event, state, attempts, last status and latency';
  static override examples = [
    '<%= config.bin %> webhook deliveries ep_0123456789abcdef01234567',
    '<%= config.bin %> webhook deliveries ep_0123456789abcdef01234567 --json',
  ];
  static override args = { id: Args.string({ description: 'endpoint id (ep_…)', required: true }) };
  static override flags = {
    ...formatFlag,
    limit: Flags.integer({ description: 'How many deliveries', default: 50, min: 1, max: 500 }),
  };

  async run() {
    const { args, flags } = await this.parse(WebhookDeliveries);
    const client = await this.client(flags);
    const answer = await client.call('listWebhookDeliveries', { id: args.id, limit: flags.limit });
    const format = formatOf(flags);
    if (format === 'json' || this.jsonEnabled()) {
      if (!this.jsonEnabled()) this.out(JSON.stringify(answer, null, 2) + '\n');
      return answer;
    }
    const { renderRows } = await import('../../cli/render.js');
    const { deliveryErrorText, pendingText } = await import('../../cli/webhooks.js');
    const last = (d: WebhookDelivery) => d.log[d.log.length - 1];
    this.out(
      renderRows<WebhookDelivery>(
        answer.deliveries,
        [
          { header: 'Delivery', get: (d) => d.id },
          { header: 'Created', get: (d) => d.createdAt, time: true },
          { header: 'Event', get: (d) => d.type },
          { header: 'Webhook id', get: (d) => d.webhookId, drop: 2 },
          {
            header: 'State',
            get: (d) => (d.state === 'pending' && d.nextAttemptAt ? pendingText(d.nextAttemptAt) : d.state),
            plain: (d) => d.state,
          },
          { header: 'Next attempt', get: (d) => d.nextAttemptAt ?? '', time: true, machineOnly: true },
          { header: 'Attempts', get: (d) => d.attempts },
          {
            header: 'Status',
            get: (d) => last(d)?.status ?? (last(d)?.error ? deliveryErrorText(last(d)!.error!) : ''),
            plain: (d) => last(d)?.status ?? last(d)?.error ?? '',
            shrink: 'first',
          },
          { header: 'Latency ms', get: (d) => (last(d) ? Math.round(last(d)!.latencyMs) : ''), drop: 1 },
        ],
        format,
        this.view(flags),
      ),
    );
    return answer;
  }
}
