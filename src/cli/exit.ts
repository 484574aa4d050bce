/** Documented exit codes of the CLI. */
export const EXIT = {
  ok: 0,
  error: 1,
  usage: 2,
  /** A waited-for PR waits on something only its author can fix (a conflict with its base). */
  blocked: 3,
  auth: 4,
} as const;

/**
 * Ends a command with one line on stderr in the style of every CLI error (`Error: …`, unwrapped,
 * whatever the terminal's width) and an exit code from EXIT.
 */
export function fail(
  command: { exit(code?: number): never },
  message: string,
  code: number = EXIT.error,
): never {
  process.stderr.write(`Error: ${message}\n`);
  return command.exit(code);
}
