/** `railyard flaky link-ticket`: link an external ticket (e.g. KAN-123) to a test. */
import { Args } from '@oclif/core';
import { BaseCommand, repoFlag } from '../../cli/base-command.js';

export default class LinkTicket extends BaseCommand {
  static override summary = 'Link an external ticket (e.g. KAN-123) to a test';
  static override examples = ['<%= config.bin %> flaky link-ticket 3f0e8a52-6b1c-5d7e-9f00-112233445566 KAN-123 --repo acme/web'];
  static override args = {
    testId: Args.string({ description: 'test id (UUID)', required: true }),
    ticket: Args.string({ description: 'ticket id, e.g. KAN-123', required: true }),
  };
  static override flags = {
    repo: repoFlag(),
  };

  async run() {
    const { args, flags } = await this.parse(LinkTicket);
    const client = await this.client(flags);
    await client.call('linkTicketToTestCase', {
      repo: await this.repo(flags.repo),
      test_case_id: args.testId,
      external_ticket_id: args.ticket,
    });
    this.out(`Linked ${args.ticket} to test ${args.testId}\n`);
    return {};
  }
}
