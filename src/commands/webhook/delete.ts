/** `railyard webhook delete`: delete an endpoint and its delivery log. */
import { Args } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';

export default class WebhookDelete extends BaseCommand {
  static override summary = 'Delete an endpoint and its delivery log';
  static override examples = ['<%= config.bin %> webhook delete ep_0123456789abcdef01234567'];
  static override args = { id: Args.string({ description: 'endpoint id (ep_…), as webhook list shows it', required: true }) };

  async run() {
    const { args, flags } = await this.parse(WebhookDelete);
    const client = await this.client(flags);
    const answer = await client.call('deleteWebhook', { id: args.id });
    this.out(`Deleted webhook endpoint ${args.id}\n`);
    return answer;
  }
}
