/** `railyard webhook delete`: delete an endpoint and its delivery log. */
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';

export default class WebhookDelete extends BaseCommand {
  static override summary = 'Delete an endpoint and its delivery log (asks first; --yes for scripts)';
  static override description =
    'On a terminal it shows the endpoint and asks before deleting; elsewhere it needs --yes. `webhook disable` stops deliveries and keeps the log.';
  static override examples = [
    '<%= config.bin %> webhook delete ep_0123456789abcdef01234567',
    '<%= config.bin %> webhook delete ep_0123456789abcdef01234567 --yes',
  ];
  static override args = {
    id: Args.string({ description: 'endpoint id (ep_…), as webhook list shows it', required: true }),
  };
  static override flags = {
    yes: Flags.boolean({ char: 'y', description: 'Delete without asking (scripts)', default: false }),
  };

  async run() {
    const { args, flags } = await this.parse(WebhookDelete);
    const client = await this.client(flags);
    if (!flags.yes) {
      // An id that names no endpoint is said first, before asking for anything.
      const { endpoints } = await client.call('listWebhooks', {});
      const endpoint = endpoints.find((e) => e.id === args.id);
      if (!endpoint)
        throw new Error(
          `id: no webhook endpoint ${args.id} (\`${this.config.bin} webhook list\` shows them)`,
        );
      const { confirmed } = await import('../../cli/confirm.js');
      const { printable } = await import('../../cli/escape.js');
      const about = endpoint.description ? ` "${endpoint.description}"` : '';
      const question =
        printable(
          `This deletes webhook endpoint ${endpoint.id}${about} (${endpoint.url}) and its delivery log.`,
        ) + '\nDelete it? [y/N] ';
      if (!(await confirmed(question, `delete webhook endpoint ${args.id}`, this.jsonEnabled()))) {
        this.notice('Nothing deleted.');
        this.exit(1);
      }
    }
    const answer = await client.call('deleteWebhook', { id: args.id });
    this.out(`Deleted webhook endpoint ${args.id}\n`);
    return answer;
  }
}
