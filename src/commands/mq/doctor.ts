/** `railyard mq doctor`: what keeps a merge queue from working that someone has to fix, one sentence each (exit 1 when there is any). */
import { BaseCommand, queueFlags } from '../../cli/base-command.js';
import { EXIT } from '../../cli/exit.js';

export default class Doctor extends BaseCommand {
  static override summary =
    'Tell what keeps a merge queue from working and what to do about it (exit 0 healthy, 1 with notices)';
  static override description = `Names, one sentence each with what to do:
- every required check (the queue's requiredStatuses) that never reported on a test commit in the last 7 days (at least the last 10 runs);
- a queue paused for more than an hour;
- pull requests not ready for more than a day, and what holds them;
- what the server's forge credentials may not do (GitHub: push, set statuses, read branch rules).
Exit code 0 when nothing is wrong, 1 when there are notices (or on an error), so it can run in CI or cron.`;
  static override examples = [
    '<%= config.bin %> mq doctor --repo acme/web',
    '<%= config.bin %> mq doctor --branch release --json',
  ];
  static override flags = { ...queueFlags };

  async run() {
    const { flags } = await this.parse(Doctor);
    const client = await this.client(flags);
    const repo = await this.repo(flags.repo);
    const answer = await client.call('getMergeQueueDoctor', { repo, targetBranch: flags.branch });
    const where = `${repo.owner}/${repo.name} ${flags.branch}`;
    if (!answer.notices.length) {
      this.out(`The ${where} queue looks healthy: nothing to fix.\n`);
      return answer;
    }
    const n = answer.notices.length;
    this.out(
      `${n} thing${n === 1 ? '' : 's'} to fix in the ${where} queue:\n${answer.notices.map((x) => `- ${x.text}\n`).join('')}`,
    );
    if (this.jsonEnabled()) this.logJson(answer);
    this.exit(EXIT.error);
  }
}
