/** `railyard mq queue resume`: resume a paused or draining merge queue. */
import { QueueStateCommand } from '../../../cli/queue-state.js';

export default class QueueResume extends QueueStateCommand {
  static override summary = 'Resume a paused or draining merge queue';
  static override examples = ['<%= config.bin %> mq queue resume --repo acme/web'];
  protected readonly target = 'running' as const;
}
