/**
 * One error style for the whole CLI: `Error: <what>` on one line, naming what is missing or wrong,
 * whatever oclif's parser or a command's `this.error` said. Used by the base command's catch and by
 * bin/run.js for the commands that do not extend it (serve, demo, sim, migrate); never loads oclif.
 */
import { printable } from './escape.js';
import { withFlagHint } from './did-you-mean.js';

interface ArgLike {
  name: string;
  description?: string;
  required?: boolean;
}

interface OclifErrorLike extends Error {
  args?: ArgLike[];
  oclif?: { exit?: number };
  parse?: { input?: { args?: Record<string, ArgLike>; context?: { id?: string } } };
  skipOclifErrorHandling?: boolean;
  code?: string;
}

// eslint-disable-next-line no-control-regex
const SGR = /\x1b\[[0-9;]*m/g;

/** `railyard mq submit <pr>`: how the command is called, its arguments as placeholders. */
function usage(bin: string, id: string | undefined, args: Record<string, ArgLike> | undefined): string {
  const words = [bin, ...(id ? id.split(':') : [])];
  for (const [name, arg] of Object.entries(args ?? {})) words.push(arg.required ? `<${name}>` : `[${name}]`);
  return words.join(' ');
}

/**
 * The one line an oclif error is shown as: `missing the pull request number: railyard mq submit
 * <pr>` for a missing argument, `--concurrency: expected an integer greater than or equal to 1 but
 * received: 0` for a flag value its parser refused, the listed reasons of a failed flag check, the
 * flag meant for a mistyped one; else the message's first line.
 */
export function errorLine(error: Error, bin: string, id?: string): string {
  const e = error as OclifErrorLike;
  const lines = e.message
    .replace(SGR, '')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && line !== 'See more help with --help');
  const [first = '', ...rest] = lines;
  const commandId = id ?? e.parse?.input?.context?.id;
  if (/^Missing \d+ required args?\b/.test(first) && Array.isArray(e.args) && e.args.length) {
    const missing = e.args.map((a) => `the ${a.description ?? a.name}`).join(', ');
    return `missing ${missing}: ${usage(bin, commandId, e.parse?.input?.args)}`;
  }
  const parsing = /^Parsing (--[\w-]+)$/.exec(first);
  if (parsing && rest.length) {
    return `${parsing[1]}: ${rest.join('; ').replace(/^[A-Z](?=[a-z])/, (c) => c.toLowerCase())}`;
  }
  if (/^The following errors? occurred:$/.test(first) && rest.length) {
    return rest.map((line) => line.replace(/^Missing required flag ([\w-]+)$/, '--$1: required')).join('; ');
  }
  const message = lines.join('\n');
  const hinted = /\(did you mean /.test(message)
    ? message
    : withFlagHint(Object.assign(new Error(message), e, { message })).message;
  return hinted.split('\n')[0]!;
}

/** Whether oclif's parser raised it (a usage error: exit 2 and a pointer to --help). */
export function isParseError(error: Error): boolean {
  const e = error as OclifErrorLike;
  return 'parse' in e || /^Parsing --[\w-]+ ?\n/.test(e.message);
}

/**
 * The last word on an error no command caught in the house style (bin/run.js): oclif's own errors
 * (a flag or an argument refused, a command's `this.error`) as `Error: …` with the exit code they
 * carry; anything else (a bug: its stack helps) to oclif's handler.
 */
export async function handleError(
  error: Error,
  bin: string,
  fallback: (error: Error) => Promise<void>,
): Promise<void> {
  const e = error as OclifErrorLike;
  if (!e || e.code === 'EEXIT' || e.skipOclifErrorHandling || !e.oclif || process.env.DEBUG)
    return fallback(error);
  const parse = isParseError(error);
  const id = e.parse?.input?.context?.id;
  process.stderr.write(
    `Error: ${printable(errorLine(error, bin))}\n` +
      (parse && id ? `See: ${bin} ${id.replaceAll(':', ' ')} --help\n` : ''),
  );
  process.exit(e.oclif.exit ?? (parse ? 2 : 1));
}
