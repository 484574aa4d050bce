/**
 * Flag values that `serve` and the forges' settings parsers (`src/forge/<name>/description.ts`) read
 * alike: secrets from a file or the environment, an instance's URL and the host it serves, a number
 * of seconds. Here, at the root, because the forge may not import `src/cli/` and the CLI may not
 * import `src/forge/`.
 * Errors are one line naming the flag; a secret's path appears in them, never the secret.
 */
import { readFile } from 'node:fs/promises';

/** Reads a secret from a file (trimmed); refuses a file it cannot read or an empty one. */
export async function secretFile(flag: string, path: string): Promise<string> {
  let text: string;
  try {
    text = (await readFile(path, 'utf8')).trim();
  } catch (error) {
    throw new Error(`--${flag}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (text === '') throw new Error(`--${flag}: ${path} is empty`);
  return text;
}

/**
 * Takes secrets out of the environment: their values, each deleted from `env` at once. Call it
 * before anything that can throw, so that a secret never outlives a refused start in the
 * environment (children started later inherit it; error output may print it).
 */
export function takeSecrets<Name extends string>(env: NodeJS.ProcessEnv, names: readonly Name[]): Record<Name, string | undefined> {
  const taken = {} as Record<Name, string | undefined>;
  for (const name of names) {
    taken[name] = env[name];
    delete env[name];
  }
  return taken;
}

/**
 * A secret from `--flag FILE` when given (secretFile), else from the value taken out of the
 * environment (trimmed; blank counts as absent), else null.
 */
export async function secretOf(flag: string, file: string | undefined, fromEnv: string | undefined): Promise<string | null> {
  if (file) return secretFile(flag, file);
  return fromEnv?.trim() || null;
}

/** An instance's http(s) URL (`example` says what one looks like); credentials in it are refused. */
export function instanceUrl(flag: string, text: string, example: string, credentialsFlag: string): URL {
  let url: URL;
  try {
    url = new URL(text);
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error('not http(s)');
  } catch {
    throw new Error(`--${flag}: expected an http(s) URL such as ${example}, got "${text}"`);
  }
  if (url.username || url.password) throw new Error(`--${flag}: must not carry credentials (use --${credentialsFlag})`);
  return url;
}

/** The `repo.host` a forge serves, lowercased: a host name with an optional port. */
export function hostName(flag: string, text: string): string {
  const host = text.trim().toLowerCase();
  if (!/^[a-z0-9][a-z0-9.:-]*$/.test(host)) throw new Error(`--${flag}: "${text}" is not a host name`);
  return host;
}

/** A number of seconds at least `min` (fractions allowed); anything else, blank included, is refused. */
export function seconds(flag: string, text: string, min: number): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n) || n < min)
    throw new Error(`--${flag}: expected a number of seconds >= ${min}, got "${text}"`);
  return n;
}
