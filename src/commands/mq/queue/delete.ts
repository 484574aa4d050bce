/** `railyard mq queue delete`: delete an empty merge queue (asks first; --yes for scripts). */
import { Flags } from '@oclif/core';
import { BaseCommand, queueFlags } from '../../../cli/base-command.js';
import { ConfigError } from '../../../cli/config.js';
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
      const interactive = Boolean(process.stdin.isTTY && process.stderr.isTTY) && !this.jsonEnabled();
      if (!interactive) {
        throw new ConfigError(`--yes: required to delete ${label} without a terminal to ask on`);
      }
      const queue = await client.call('getQueue', key);
      const held = queue.enqueuedPullRequests.length;
      process.stderr.write(
        printable(
          `This deletes ${label} (${queue.state}, ${queue.mode}, concurrency ${queue.concurrency}) and its settings` +
            (held ? `; it still holds ${held} pull request${held === 1 ? '' : 's'}, so the server will refuse` : '') +
            '. The history of its pull requests stays and comes back if the queue is created again.',
        ) + '\n',
      );
      const { createInterface } = await import('node:readline/promises');
      const rl = createInterface({ input: process.stdin, output: process.stderr });
      const answer = await rl.question('Delete it? [y/N] ').finally(() => rl.close());
      if (!/^y(es)?$/i.test(answer.trim())) {
        this.notice('Nothing deleted.');
        this.exit(1);
      }
    }
    await client.call('deleteQueue', key);
    this.out(`Deleted ${label} (the history of its pull requests is kept)\n`);
    return {};
  }
}
