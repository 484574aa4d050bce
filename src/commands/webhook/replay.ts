/** `railyard webhook replay`: send a delivered or failed event again, with the same webhook-id. */
import { Args } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';

export default class WebhookReplay extends BaseCommand {
  static override summary = 'Send a delivered or failed event again, with the same webhook-id';
  static override examples = ['<%= config.bin %> webhook replay 1234'];
  static override args = { delivery: Args.string({ description: 'delivery id, as webhook deliveries shows it', required: true }) };

  async run() {
    const { args, flags } = await this.parse(WebhookReplay);
    if (!/^[1-9]\d{0,15}$/.test(args.delivery)) this.error(`DELIVERY_ID: expected a delivery number, got "${args.delivery}"`, { exit: 2 });
    const client = await this.client(flags);
    const answer = await client.call('replayWebhookDelivery', { deliveryId: Number(args.delivery) });
    this.out(`Queued event ${answer.webhookId} again as delivery ${answer.deliveryId}\n`);
    return answer;
  }
}
