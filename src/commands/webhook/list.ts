/** `railyard webhook list`: list the outgoing webhook endpoints of the token's organisation (never their secrets). */
import { BaseCommand, formatFlag, formatOf } from '../../cli/base-command.js';
import type { WebhookEndpoint } from '../../contract/index.js';

export default class WebhookList extends BaseCommand {
  static override summary =
    "List the outgoing webhook endpoints of the token's organisation (never their secrets)";
  static override examples = ['<%= config.bin %> webhook list', '<%= config.bin %> webhook list --json'];
  static override flags = { ...formatFlag };

  async run() {
    const { flags } = await this.parse(WebhookList);
    const client = await this.client(flags);
    const answer = await client.call('listWebhooks', {});
    const { renderRows, ago } = await import('../../cli/render.js');
    const format = formatOf(flags);
    if (format === 'json' || this.jsonEnabled()) {
      if (!this.jsonEnabled()) this.out(JSON.stringify(answer, null, 2) + '\n');
      return answer;
    }
    this.out(
      renderRows<WebhookEndpoint>(
        answer.endpoints,
        [
          { header: 'Id', get: (e) => e.id },
          { header: 'Kind', get: (e) => e.kind, drop: 3 },
          {
            header: 'State',
            get: (e) =>
              e.state === 'disabled' && e.disabledReason
                ? `disabled: ${e.disabledReason}`
                : e.failingSince
                  ? `failing since ${ago(e.failingSince)}`
                  : e.state,
            shrink: 'first',
            plain: (e) =>
              e.state === 'disabled' && e.disabledReason
                ? `disabled: ${e.disabledReason}`
                : e.failingSince
                  ? `failing since ${e.failingSince}`
                  : e.state,
          },
          { header: 'URL', get: (e) => e.url, shrink: true },
          { header: 'Events', get: (e) => e.events?.join(' ') ?? 'all', shrink: true, drop: 1 },
          { header: 'Repositories', get: (e) => e.repos?.join(' ') ?? 'all', shrink: true, drop: 2 },
          { header: 'Description', get: (e) => e.description ?? '', shrink: 'first' },
        ],
        format,
        this.view(flags),
      ),
    );
    return answer;
  }
}
