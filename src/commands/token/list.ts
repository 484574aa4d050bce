/** `railyard token list`: list the API tokens of the database (ids, organisations, when each was last used). */
import { Command, Flags } from '@oclif/core';
import { fail, EXIT } from '../../cli/exit.js';

export default class TokenList extends Command {
  static override summary =
    'List the API tokens of the database (ids, organisations, when each was last used)';

  static override description =
    'Tokens themselves are never shown: only their id (the start of their SHA-256), which `token revoke` takes. ' +
    'Last use is recorded to the minute.';

  static override examples = ['<%= config.bin %> token list --data-dir /var/lib/railyard --org team-a'];

  static override flags = {
    'data-dir': Flags.string({ description: 'Directory of the database', default: './.railyard' }),
    org: Flags.string({ description: 'Only the tokens of this organisation' }),
    json: Flags.boolean({ description: 'Print JSON', default: false }),
  };

  /** A mistyped flag names the one meant (src/cli/did-you-mean.ts). */
  protected override async catch(error: Error): Promise<unknown> {
    (await import('../../cli/did-you-mean.js')).withFlagHint(error);
    return super.catch(error);
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(TokenList);
    const [{ openStore }, { formatTime, tokenDatabase }] = await Promise.all([
      import('../../store/index.js'),
      import('../../cli/tokens.js'),
    ]);
    const database = await tokenDatabase(flags['data-dir'], false).catch((error: Error) =>
      fail(this, error.message, EXIT.usage),
    );
    const store = await openStore({ dataDir: database.dataDir });
    try {
      const tokens = await store.describeTokens(flags.org);
      if (flags.json) {
        this.log(JSON.stringify(tokens, null, 2));
        return;
      }
      if (!tokens.length) {
        this.log(
          flags.org
            ? `No tokens for organisation "${flags.org}" in ${database.file}.`
            : `No tokens in ${database.file}.`,
        );
        return;
      }
      const rows = [
        ['ID', 'ORGANISATION', 'CREATED (UTC)', 'LAST USED (UTC)', 'LABEL'],
        ...tokens.map((t) => [t.id, t.org, formatTime(t.createdAt), formatTime(t.lastUsedAt), t.label ?? '']),
      ];
      const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
      for (const r of rows)
        this.log(
          r
            .map((cell, i) => cell.padEnd(widths[i]))
            .join('  ')
            .trimEnd(),
        );
    } finally {
      await store.close();
    }
  }
}
