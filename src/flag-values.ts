/**
 * Flag values that `serve` and the forge drivers read alike (the CLI's serve options and
 * `src/forge/gitlab/settings.ts`): a secret from a file, a number of seconds. Here, at the root,
 * because the forge may not import `src/cli/` and the CLI may not import `src/forge/`.
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

/** A number of seconds at least `min` (fractions allowed); anything else, blank included, is refused. */
export function seconds(flag: string, text: string, min: number): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n) || n < min)
    throw new Error(`--${flag}: expected a number of seconds >= ${min}, got "${text}"`);
  return n;
}
