/**
 * Where `serve` and `migrate` get the PostgreSQL URL: --database-url-file (preferred),
 * RAILYARD_DATABASE_URL, or --database-url, which shows its password to every user of the
 * machine (ps, shell history) and therefore warns, as `serve --token` does.
 */
import { Flags } from '@oclif/core';
import { takeSecrets } from '../flag-values.js';

export const databaseUrlFlags = {
  'database-url': Flags.string({
    description:
      'Use PostgreSQL instead of the embedded SQLite (postgres://USER:PASSWORD@HOST:PORT/DB). On the command line its password shows in ps: prefer --database-url-file or RAILYARD_DATABASE_URL',
    helpValue: 'URL',
    exclusive: ['database-url-file'],
  }),
  'database-url-file': Flags.string({
    description: 'A file holding the PostgreSQL URL (first line); or set RAILYARD_DATABASE_URL',
    helpValue: 'FILE',
  }),
};

export const DATABASE_URL_WARNING =
  'warning: a database URL on the command line shows its password to every user of this machine (ps, shell history): use --database-url-file FILE or RAILYARD_DATABASE_URL';

/**
 * The URL to use (undefined: SQLite) and whether to warn. The environment variable is removed once
 * read, so that nothing the server starts inherits it.
 */
export async function resolveDatabaseUrl(flags: {
  'database-url'?: string;
  'database-url-file'?: string;
}): Promise<{
  url: string | undefined;
  warn: boolean;
}> {
  const fromEnv = takeSecrets(process.env, ['RAILYARD_DATABASE_URL']).RAILYARD_DATABASE_URL?.trim() || undefined;
  if (flags['database-url'] !== undefined) return { url: flags['database-url'], warn: true };
  const path = flags['database-url-file'];
  if (path !== undefined) {
    const { readFile } = await import('node:fs/promises');
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      throw new Error(
        `--database-url-file: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
    const url = text
      .split('\n')
      .find((line) => line.trim() && !line.trim().startsWith('#'))
      ?.trim();
    if (!url) throw new Error(`--database-url-file: ${path} holds no URL`);
    return { url, warn: false };
  }
  return { url: fromEnv, warn: false };
}
