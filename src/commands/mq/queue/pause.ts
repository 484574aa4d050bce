/** `railyard mq queue pause`: pause a merge queue: nothing starts or merges; running tests finish. */
import { QueueStateCommand } from '../../../cli/queue-state.js';

export default class QueuePause extends QueueStateCommand {
  static override summary = 'Pause a merge queue: nothing starts or merges; running tests finish';
  static override examples = ['<%= config.bin %> mq queue pause --repo acme/web'];
  protected readonly target = 'paused' as const;
}
