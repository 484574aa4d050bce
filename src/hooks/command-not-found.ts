/**
 * oclif's `command_not_found` hook: a mistyped command names the nearest one ("did you mean"). On
 * a terminal it asks and runs it on yes; piped (a script, CI) it prints the suggestion and exits
 * 127, never waiting for an answer. (Replaces @oclif/plugin-not-found, which said nothing when piped.)
 */
import type { Hook } from '@oclif/core';

const hook: Hook.CommandNotFound = async function (opts) {
  const { closestCommand } = await import('../cli/did-you-mean.js');
  const { toConfiguredId } = await import('@oclif/core');
  const { config } = opts;
  const ids = config.commands.filter((c) => !c.hidden).flatMap((c) => [c.id, ...c.aliases]);
  const meant = closestCommand(opts.id, ids);
  const typed = toConfiguredId(opts.id, config);
  const topic = config.findTopic(opts.id.split(':')[0]!) ? ` ${opts.id.split(':')[0]}` : '';
  if (meant) {
    const readable = toConfiguredId(meant.id, config);
    const argv = [...meant.argv, ...(opts.argv ?? [])];
    if (process.stdin.isTTY && process.stderr.isTTY && (await confirm(`"${typed}" is not a ${config.bin} command. Did you mean "${readable}"? [Y/n] `)))
      return config.runCommand(meant.id, argv);
    process.stderr.write(`Error: "${typed}" is not a ${config.bin} command. Did you mean "${[config.bin, readable, ...argv].join(' ')}"?\n`);
  } else {
    process.stderr.write(`Error: "${typed}" is not a ${config.bin} command. Run "${config.bin} help${topic}" for the list.\n`);
  }
  return this.exit(127);
};

/** A yes/no question on the terminal (Enter is yes; no answer in 10 s is no). */
async function confirm(question: string): Promise<boolean> {
  const { createInterface } = await import('node:readline/promises');
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  const timeout = AbortSignal.timeout(10_000);
  try {
    const answer = await rl.question(question, { signal: timeout });
    return /^(?:y|yes)?$/i.test(answer.trim());
  } catch {
    process.stderr.write('\n');
    return false;
  } finally {
    rl.close();
  }
}

export default hook;
