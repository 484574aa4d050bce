/** `railyard webhook rotate`: give an endpoint a new signing secret; the old one keeps signing beside it for --overlap-hours. */
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';

export default class WebhookRotate extends BaseCommand {
  static override summary = "Give an endpoint a new signing secret; the old one keeps signing beside it for --overlap-hours";
  static override examples = ['<%= config.bin %> webhook rotate ep_0123456789abcdef01234567 --overlap-hours 48'];
  static override args = { id: Args.string({ description: 'endpoint id (ep_…)', required: true }) };
  static override flags = { 'overlap-hours': Flags.integer({ description: 'Hours the old secret still signs', default: 24, min: 0, max: 168 }) };

  async run() {
    const { args, flags } = await this.parse(WebhookRotate);
    const client = await this.client(flags);
    const answer = await client.call('rotateWebhookSecret', { id: args.id, overlapHours: flags['overlap-hours'] });
    this.out(`New signing secret of ${args.id} (shown only this once; the old one signs too until ${answer.previousSecretValidUntil}):\n  ${answer.secret}\n`);
    return answer;
  }
}
