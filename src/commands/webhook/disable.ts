/** `railyard webhook disable`: stop delivering to an endpoint (its events wait until it is enabled again). */
import { Args } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';

export default class WebhookDisable extends BaseCommand {
  static override summary = 'Stop delivering to an endpoint (its events wait until it is enabled again)';
  static override examples = ['<%= config.bin %> webhook disable ep_0123456789abcdef01234567'];
  static override args = { id: Args.string({ description: 'endpoint id (ep_…), as webhook list shows it', required: true }) };

  async run() {
    const { args, flags } = await this.parse(WebhookDisable);
    const client = await this.client(flags);
    const answer = await client.call('disableWebhook', { id: args.id });
    this.out(`Disabled webhook endpoint ${args.id}\n`);
    return answer;
  }
}
