/**
 * A problem with what the user gave (a flag, an input, a report file): its message is one line
 * naming it. The CLI exits 2 on it; the Action fails the step with it.
 */
export class ConfigError extends Error {
  override name = 'ConfigError';
}
