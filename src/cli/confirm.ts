/** Asking before a destructive command: on a terminal a [y/N] question, elsewhere `--yes` is required. */
import { ConfigError } from './config.js';

/**
 * Whether the person said yes to `question` on the terminal. Without a terminal to ask on (a
 * script, CI, --json) it refuses with a usage error naming --yes, never waiting for an answer.
 */
export async function confirmed(question: string, what: string, json: boolean): Promise<boolean> {
  if (!(process.stdin.isTTY && process.stderr.isTTY) || json) {
    throw new ConfigError(`--yes: required to ${what} without a terminal to ask on`);
  }
  const { createInterface } = await import('node:readline/promises');
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  const answer = await rl.question(question).finally(() => rl.close());
  return /^y(es)?$/i.test(answer.trim());
}
