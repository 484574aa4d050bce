/** `railyard token list`: list the API tokens of the database (ids, organisations, when each was last used). */
import { Command, Flags } from '@oclif/core';
import { formatFlag, formatOf } from '../../cli/base-command.js';
import { fail, EXIT } from '../../cli/exit.js';

export default class TokenList extends Command {
  static override summary =
    'List the API tokens of the database (ids, organisations, permissions, when each was last used)';

  static override description =
    'Tokens themselves are never shown: only their id (the start of their SHA-256), which `token revoke` takes. ' +
    'Permissions are `all`, `read only` or the names (token create --permission); tokens made before permissions existed have all. ' +
    'Last use is recorded to the minute. Times are relative in the table, ISO 8601 UTC in CSV and TSV; ' +
    '--json (or --format json) prints the list with times in epoch milliseconds.';

  static override examples = [
    '<%= config.bin %> token list --data-dir /var/lib/railyard --org team-a',
    '<%= config.bin %> token list --data-dir /var/lib/railyard --format csv > tokens.csv',
  ];

  static override flags = {
    'data-dir': Flags.string({ description: 'Directory of the database', default: './.railyard' }),
    org: Flags.string({ description: 'Only the tokens of this organisation' }),
    ...formatFlag,
    json: Flags.boolean({ description: 'Print JSON (the same as --format json)', default: false }),
  };

  /** A mistyped flag names the one meant (src/cli/did-you-mean.ts). */
  protected override async catch(error: Error): Promise<unknown> {
    (await import('../../cli/did-you-mean.js')).withFlagHint(error);
    return super.catch(error);
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(TokenList);
    const format = flags.json ? 'json' : formatOf(flags);
    const [{ openStore }, { tokenDatabase, tokenColumns }, { renderJson, renderRows }, { useColor }] = await Promise.all([
      import('../../store/index.js'),
      import('../../cli/tokens.js'),
      import('../../cli/render.js'),
      import('../../cli/color.js'),
    ]);
    const database = await tokenDatabase(flags['data-dir'], false).catch((error: Error) =>
      fail(this, error.message, EXIT.usage),
    );
    const store = await openStore({ dataDir: database.dataDir });
    try {
      const tokens = await store.accounts.describeTokens(flags.org);
      if (format === 'json') {
        process.stdout.write(renderJson(tokens));
        return;
      }
      if (format === 'table' && !tokens.length) {
        this.log(
          flags.org
            ? `No tokens for organisation "${flags.org}" in ${database.file}.`
            : `No tokens in ${database.file}.`,
        );
        return;
      }
      const width = process.stdout.isTTY && !flags.wide ? process.stdout.columns : undefined;
      process.stdout.write(
        renderRows(tokens, tokenColumns, format, { color: useColor(process.stdout), ...(width ? { width } : {}) }),
      );
    } finally {
      await store.close();
    }
  }
}
