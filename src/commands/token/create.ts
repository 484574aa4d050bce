import { Command, Flags } from '@oclif/core';

export default class TokenCreate extends Command {
  static override summary = 'Create an API token for an organisation (printed once; only its hash is stored)';

  static override description =
    'Writes a new token into the database of --data-dir and prints it on stdout, once: the database keeps only ' +
    'its SHA-256. A server running on the same data dir accepts it from its next request. The token is `ry_` and ' +
    '32 random bytes.';

  static override examples = [
    '<%= config.bin %> token create --data-dir /var/lib/railyard --org team-a --label "CI of web"',
  ];

  static override flags = {
    'data-dir': Flags.string({ description: 'Directory of the database', default: './.railyard' }),
    org: Flags.string({ description: 'Organisation the token belongs to', default: 'local' }),
    label: Flags.string({ description: 'What the token is for (shown by token list)' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(TokenCreate);
    const [{ openStore, hashToken, TOKEN_ID_LENGTH }, { newToken }] = await Promise.all([
      import('../../store/index.js'),
      import('../../cli/tokens.js'),
    ]);
    const store = await openStore({ dataDir: flags['data-dir'] });
    try {
      const token = newToken();
      await store.addToken(flags.org, token, flags.label);
      this.logToStderr(
        `Created token ${hashToken(token).slice(0, TOKEN_ID_LENGTH)} for organisation "${flags.org}". It is shown only this once:`,
      );
      this.log(token);
    } finally {
      await store.close();
    }
  }
}
