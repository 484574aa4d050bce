/** `railyard token revoke`: revoke an API token: a server on the same data dir refuses it from its next request. */
import { Args, Command, Flags } from '@oclif/core';
import { fail, EXIT } from '../../cli/exit.js';

export default class TokenRevoke extends Command {
  static override summary =
    'Revoke an API token: a server on the same data dir refuses it from its next request';

  static override description =
    'Takes the token id shown by `token list` (or a longer start of its SHA-256), or the token itself.';

  static override examples = ['<%= config.bin %> token revoke 3f9a1c0b7d2e --data-dir /var/lib/railyard'];

  static override args = {
    token: Args.string({ description: 'Token id (from token list) or the token itself', required: true }),
  };

  static override flags = {
    'data-dir': Flags.string({ description: 'Directory of the database', default: './.railyard' }),
    org: Flags.string({ description: 'Only revoke a token of this organisation' }),
  };

  /** A mistyped flag names the one meant (src/cli/did-you-mean.ts). */
  protected override async catch(error: Error): Promise<unknown> {
    (await import('../../cli/did-you-mean.js')).withFlagHint(error);
    return super.catch(error);
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(TokenRevoke);
    const [{ openStore, hashToken }, { TOKEN_PREFIX, tokenDatabase }] = await Promise.all([
      import('../../store/index.js'),
      import('../../cli/tokens.js'),
    ]);
    const given = args.token.trim();
    const id = given.startsWith(TOKEN_PREFIX) ? hashToken(given) : given.toLowerCase();
    if (!/^[0-9a-f]{6,64}$/.test(id)) {
      fail(
        this,
        `token: expected a token id of at least 6 hex digits (see token list) or a token starting ${TOKEN_PREFIX}, got "${given}"`,
        2,
      );
    }
    const database = await tokenDatabase(flags['data-dir'], false).catch((error: Error) =>
      fail(this, error.message, EXIT.usage),
    );
    const store = await openStore({ dataDir: database.dataDir });
    let matched;
    try {
      matched = await store.accounts.revokeToken(id, flags.org);
    } finally {
      await store.close();
    }
    if (matched.length === 0)
      fail(
        this,
        `no token ${given}${flags.org ? ` in organisation "${flags.org}"` : ''} in ${database.file}: see token list`,
        1,
      );
    if (matched.length > 1) {
      fail(
        this,
        `"${given}" names ${matched.length} tokens (${matched.map((t) => t.id).join(', ')}): give more of the id; nothing revoked`,
        1,
      );
    }
    this.log(`Revoked token ${matched[0].id} of organisation "${matched[0].org}".`);
  }
}
