/** `railyard token create`: create an API token for an organisation (printed once; only its hash is stored). */
import { Command, Flags } from '@oclif/core';
import { formatFlag, formatOf } from '../../cli/base-command.js';
import { fail, EXIT } from '../../cli/exit.js';

export default class TokenCreate extends Command {
  static override summary = 'Create an API token for an organisation (printed once; only its hash is stored)';

  static override description =
    'Writes a new token into the database of --data-dir and prints it on stdout, once: the database keeps only ' +
    'its SHA-256. A server running on the same data dir accepts it from its next request. The token is `ry_` and ' +
    '32 random bytes. The table format prints the token alone on stdout (the note goes to stderr), so ' +
    '`TOKEN=$(railyard token create …)` captures it; --json and --format json|csv|tsv|markdown print a record ' +
    '(id, org, label, permissions, token, database) on stdout instead. The token is never written to stderr. ' +
    'A token may change merge queues only as its permissions allow (--permission, repeatable: merge, priority, ' +
    'skip_batching, direct, settings; none for a read-only token; default: all); any token reads, and (as on Trunk) ' +
    'any token may use the flaky-test operations. A write it may not make is answered 403 INSUFFICIENT_PERMISSIONS ' +
    'and changes nothing.';

  static override examples = [
    '<%= config.bin %> token create --data-dir /var/lib/railyard --org team-a --label "CI of web"',
    '<%= config.bin %> token create --data-dir ./new-server --create-database --org local',
    '<%= config.bin %> token create --data-dir /var/lib/railyard --org team-a --format tsv',
    '<%= config.bin %> token create --data-dir /var/lib/railyard --org team-a --label "CI" --permission merge',
    '<%= config.bin %> token create --data-dir /var/lib/railyard --org team-a --label "wallboard" --permission none',
  ];

  static override flags = {
    'data-dir': Flags.string({ description: 'Directory of the database', default: './.railyard' }),
    org: Flags.string({ description: 'Organisation the token belongs to', default: 'local' }),
    label: Flags.string({ description: 'What the token is for (shown by token list)' }),
    permission: Flags.string({
      description:
        'What the token may change in merge queues (repeatable): merge (submit, cancel, restart, impacted targets), ' +
        'priority (a priority other than the default), skip_batching (noBatch), direct, settings (create, update ' +
        'and delete queues; webhooks); none: read only. Every token may use the flaky-test operations. Default: all',
      multiple: true,
    }),
    'create-database': Flags.boolean({
      description:
        'Create the database in --data-dir if there is none yet (else a missing database is an error)',
      default: false,
    }),
    format: formatFlag.format,
    json: Flags.boolean({
      description: 'Print JSON: {"id", "org", "label", "token", "database"} (the same as --format json)',
      default: false,
    }),
  };

  /** A mistyped flag names the one meant (src/cli/did-you-mean.ts). */
  protected override async catch(error: Error): Promise<unknown> {
    (await import('../../cli/did-you-mean.js')).withFlagHint(error);
    return super.catch(error);
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(TokenCreate);
    const format = flags.json ? 'json' : formatOf(flags);
    const [{ openStore, hashToken, TOKEN_ID_LENGTH }, { newToken, tokenDatabase, permissionsOfFlags, describePermissions }] =
      await Promise.all([import('../../store/index.js'), import('../../cli/tokens.js')]);
    let permissions: ReturnType<typeof permissionsOfFlags> = [];
    try {
      permissions = permissionsOfFlags(flags.permission);
    } catch (error) {
      fail(this, (error as Error).message, EXIT.usage);
    }
    const database = await tokenDatabase(flags['data-dir'], flags['create-database']).catch((error: Error) =>
      fail(this, error.message, EXIT.usage),
    );
    const store = await openStore({ dataDir: database.dataDir });
    try {
      const token = newToken();
      await store.accounts.addToken(flags.org, token, flags.label, permissions);
      const id = hashToken(token).slice(0, TOKEN_ID_LENGTH);
      if (format !== 'table') {
        const { renderJson, renderRecord } = await import('../../cli/render.js');
        const record = {
          id,
          org: flags.org,
          label: flags.label ?? null,
          permissions: format === 'json' ? permissions : describePermissions(permissions),
          token,
          database: database.file,
        };
        process.stdout.write(format === 'json' ? renderJson(record) : renderRecord(record, format));
        return;
      }
      this.logToStderr(
        `Created token ${id} for organisation "${flags.org}" (permissions: ${describePermissions(permissions)}) in ${database.file}. It is shown only this once:`,
      );
      this.log(token);
    } finally {
      await store.close();
    }
  }
}
