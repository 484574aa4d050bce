/** `railyard mq queue delete`: delete an empty merge queue (asks first; --yes for scripts). */
import { Flags } from '@oclif/core';
import { BaseCommand, queueFlags } from '../../../cli/base-command.js';
import { printable } from '../../../cli/escape.js';

/** `mq queue delete`: asks first on a terminal (--yes for scripts), and says what goes and what stays. */
export default class QueueDelete extends BaseCommand {
  static override summary = 'Delete an empty merge queue (asks first; --yes for scripts)';
  static override description =
    'A queue that still holds pull requests is refused: drain it or cancel them first. Deleting removes the queue ' +
    'and its settings; the history of its pull requests stays, and comes back (with every merged PR still merged) ' +
    'when a queue is created again for the same branch. On a terminal it asks before deleting; elsewhere it needs --yes.';
  static override examples = [
    '<%= config.bin %> mq queue delete --repo acme/web --branch release',
    '<%= config.bin %> mq queue delete --repo acme/web --branch release --yes',
  ];
  static override flags = {
    ...queueFlags,
    yes: Flags.boolean({ char: 'y', description: 'Delete without asking (scripts)', default: false }),
  };

  async run() {
    const { flags } = await this.parse(QueueDelete);
    const repo = await this.repo(flags.repo);
    const client = await this.client(flags);
    const key = { repo, targetBranch: flags.branch };
    const label = `the ${flags.branch} queue of ${repo.host}/${repo.owner}/${repo.name}`;
    if (!flags.yes) {
      // A queue that does not exist is said first (a 404 naming it), before asking for anything.
      const queue = await client.call('getQueue', key);
      const { confirmed } = await import('../../../cli/confirm.js');
      const held = queue.enqueuedPullRequests.length;
      const question =
        printable(
          `This deletes ${label} (${queue.state}, ${queue.mode}, concurrency ${queue.concurrency}) and its settings` +
            (held
              ? `; it still holds ${held} pull request${held === 1 ? '' : 's'}, so the server will refuse`
              : '') +
            '. The history of its pull requests stays and comes back if the queue is created again.',
        ) + '\nDelete it? [y/N] ';
      if (!(await confirmed(question, `delete ${label}`, this.jsonEnabled()))) {
        this.notice('Nothing deleted.');
        this.exit(1);
      }
    }
    await client.call('deleteQueue', key);
    this.out(`Deleted ${label} (the history of its pull requests is kept)\n`);
    return {};
  }
}
