import { BaseCommand, queueFlags } from './base-command.js';

/** pause / resume / drain: updateQueue with only `state`. */
export abstract class QueueStateCommand extends BaseCommand {
  static override flags = { ...queueFlags };
  protected abstract readonly target: 'running' | 'paused' | 'draining';

  async run() {
    const { flags } = await this.parse(this.constructor as typeof QueueStateCommand);
    const client = await this.client(flags);
    const queue = await client.call('updateQueue', {
      repo: await this.repo(flags.repo),
      targetBranch: flags.branch,
      state: this.target,
    });
    this.out(`The ${flags.branch} queue is ${queue.state}\n`);
    return queue;
  }
}
