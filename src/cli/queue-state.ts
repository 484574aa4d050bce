/** The base of `mq queue pause`, `resume` and `drain`: updateQueue with only `state`. */
import { BaseCommand, queueFlags } from './base-command.js';

/** pause / resume / drain: updateQueue with only `state`. */
export abstract class QueueStateCommand extends BaseCommand {
  static override flags = { ...queueFlags };
  protected abstract readonly target: 'running' | 'paused' | 'draining';

  async run() {
    const { flags } = await this.parse(this.constructor as typeof QueueStateCommand);
    const client = await this.client(flags);
    const repo = await this.repo(flags.repo);
    // Draining a paused queue starts its tests again: say so (a person may have meant to keep it paused).
    const before = this.target === 'draining' ? (await client.call('getQueue', { repo, targetBranch: flags.branch })).state : undefined;
    const queue = await client.call('updateQueue', { repo, targetBranch: flags.branch, state: this.target });
    if (before === 'paused') {
      this.notice(
        `The ${flags.branch} queue was paused: draining resumes testing and merging of the pull requests in it (and admits no new ones); run \`railyard mq queue pause\` to stop again`,
      );
    }
    this.out(`The ${flags.branch} queue is ${queue.state}\n`);
    return queue;
  }
}
