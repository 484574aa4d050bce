/** `railyard webhook enable`: deliver to an endpoint again (also one the server disabled after failing for days). */
import { Args } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';

export default class WebhookEnable extends BaseCommand {
  static override summary = 'Deliver to an endpoint again (also one the server disabled after failing for days)';
  static override examples = ['<%= config.bin %> webhook enable ep_0123456789abcdef01234567'];
  static override args = { id: Args.string({ description: 'endpoint id (ep_…), as webhook list shows it', required: true }) };

  async run() {
    const { args, flags } = await this.parse(WebhookEnable);
    const client = await this.client(flags);
    const answer = await client.call('enableWebhook', { id: args.id });
    this.out(`Enabled webhook endpoint ${args.id}\n`);
    return answer;
  }
}
