/** `railyard webhook test`: send a test event (webhook.test) to an endpoint. */
import { Args } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';

export default class WebhookTest extends BaseCommand {
  static override summary = 'Send a test event (webhook.test) to an endpoint';
  static override examples = ['<%= config.bin %> webhook test ep_0123456789abcdef01234567'];
  static override args = { id: Args.string({ description: 'endpoint id (ep_…), as webhook list shows it', required: true }) };

  async run() {
    const { args, flags } = await this.parse(WebhookTest);
    const client = await this.client(flags);
    const answer = await client.call('testWebhook', { id: args.id });
    this.out(`Sent test event ${answer.webhookId} to ${args.id}\n`);
    return answer;
  }
}
