/** `railyard webhook create`: create an outgoing webhook endpoint; prints its id and signing secret (shown only this once). */
import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';

export default class WebhookCreate extends BaseCommand {
  static override summary =
    'Create an outgoing webhook endpoint; prints its id and signing secret (shown only this once)';
  static override description =
    "Events are POSTed to URL signed like Trunk's (Standard Webhooks / Svix headers), with Trunk's event names and payloads. " +
    'Without --event every event is sent (a slack endpoint gets PR outcomes and flaky-test changes). ' +
    'The server refuses plain http:// and private addresses unless started with --webhook-allow-http / --webhook-allow-private.';
  static override examples = [
    '<%= config.bin %> webhook create --url https://hooks.example.com/railyard',
    '<%= config.bin %> webhook create --url https://hooks.example.com/mq --event pull_request.merged --event pull_request.failed',
    '<%= config.bin %> webhook create --url https://hooks.slack.com/services/T/B/X --kind slack --repo acme/web',
  ];
  static override flags = {
    url: Flags.string({ description: 'Where events are POSTed (https://)', required: true }),
    event: Flags.string({
      description: 'An event type to send (repeatable; default: every event)',
      multiple: true,
    }),
    kind: Flags.string({
      description: 'standard: signed JSON; slack: a Slack incoming-webhook URL',
      options: ['standard', 'slack'],
      default: 'standard',
    }),
    repo: Flags.string({
      char: 'r',
      description: 'Only events of this repository, OWNER/NAME or HOST/OWNER/NAME (repeatable)',
      multiple: true,
    }),
    description: Flags.string({ description: 'What the endpoint is for' }),
  };

  async run() {
    const { flags } = await this.parse(WebhookCreate);
    const repos = (flags.repo ?? []).map((text) => {
      const parts = text.split('/');
      if (parts.length === 2 && parts.every(Boolean))
        return { host: 'github.com', owner: parts[0], name: parts[1] };
      if (parts.length === 3 && parts.every(Boolean))
        return { host: parts[0], owner: parts[1], name: parts[2] };
      this.error(`--repo: expected OWNER/NAME or HOST/OWNER/NAME, got "${text}"`, { exit: 2 });
    });
    if (flags.event?.length) {
      const { checkEvents } = await import('../../cli/webhooks.js');
      checkEvents(flags.event);
    }
    const client = await this.client(flags);
    const answer = await client.call('createWebhook', {
      url: flags.url,
      kind: flags.kind as 'standard' | 'slack',
      ...(flags.event?.length ? { events: flags.event } : {}),
      ...(repos.length ? { repos } : {}),
      ...(flags.description ? { description: flags.description } : {}),
    });
    this.out(
      `Created webhook endpoint ${answer.endpoint.id} (${answer.endpoint.kind}) for ${answer.endpoint.url}\n` +
        `Signing secret (shown only this once; keep it where your receiver reads it):\n  ${answer.secret}\n`,
    );
    return { id: answer.endpoint.id, secret: answer.secret, endpoint: answer.endpoint };
  }
}
