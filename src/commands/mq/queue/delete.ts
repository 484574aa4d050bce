import { BaseCommand, queueFlags } from '../../../cli/base-command.js';

export default class QueueDelete extends BaseCommand {
  static override summary = 'Delete an empty merge queue';
  static override description = 'A queue that still holds pull requests is refused: drain it or cancel them first.';
  static override examples = ['<%= config.bin %> mq queue delete --repo acme/web --branch release'];
  static override flags = { ...queueFlags };

  async run() {
    const { flags } = await this.parse(QueueDelete);
    const repo = await this.repo(flags.repo);
    const client = await this.client(flags);
    await client.call('deleteQueue', { repo, targetBranch: flags.branch });
    this.out(`Deleted the ${flags.branch} queue of ${repo.host}/${repo.owner}/${repo.name}\n`);
    return {};
  }
}
