/** `railyard mq queue drain`: drain a merge queue: finish what is queued, admit nothing new. */
import { QueueStateCommand } from '../../../cli/queue-state.js';

export default class QueueDrain extends QueueStateCommand {
  static override summary = 'Drain a merge queue: finish what is queued, admit nothing new';
  static override examples = ['<%= config.bin %> mq queue drain --repo acme/web'];
  protected readonly target = 'draining' as const;
}
