/** `railyard migrate`: bring the database schema up to date, then exit. */
import { Command, Flags } from '@oclif/core';
import { DATABASE_URL_WARNING, databaseUrlFlags, resolveDatabaseUrl } from '../cli/database-url.js';

export default class Migrate extends Command {
  static override summary = 'Bring the database schema up to date, then exit';

  static override description =
    'Applies the migrations the database lacks (the server does this on start too). Run it once before a rolling ' +
    'upgrade of several replicas on PostgreSQL, so no replica starts on an older schema than the newest one expects. ' +
    'Safe to run again: nothing is applied twice.';

  static override examples = [
    {
      description: 'PostgreSQL, from the environment',
      command: 'RAILYARD_DATABASE_URL=postgres://railyard@db/railyard <%= config.bin %> migrate',
    },
    {
      description: 'The embedded SQLite of a data directory',
      command: '<%= config.bin %> migrate --data-dir ./.railyard',
    },
  ];

  static override flags = {
    'data-dir': Flags.string({
      description: 'Directory of the embedded database (SQLite)',
      default: './.railyard',
    }),
    ...databaseUrlFlags,
  };

  /** A mistyped flag names the one meant (src/cli/did-you-mean.ts). */
  protected override async catch(error: Error): Promise<unknown> {
    (await import('../cli/did-you-mean.js')).withFlagHint(error);
    return super.catch(error);
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(Migrate);
    const { openDatabase, redactUrl } = await import('../store/index.js');
    let store: Awaited<ReturnType<typeof openDatabase>>;
    let databaseUrl: string | undefined;
    try {
      const given = await resolveDatabaseUrl(flags);
      if (given.warn) this.logToStderr(DATABASE_URL_WARNING);
      databaseUrl = given.url;
      store = await openDatabase(flags['data-dir'], databaseUrl);
    } catch (error) {
      process.stderr.write(`railyard migrate: ${error instanceof Error ? error.message : String(error)}\n`);
      this.exit(2);
    }
    const where = databaseUrl ? redactUrl(databaseUrl) : `${flags['data-dir']} (SQLite)`;
    await store.close();
    if (store.migrated.length)
      this.log(`Applied ${store.migrated.length} migration(s) to ${where}: ${store.migrated.join(', ')}`);
    else this.log(`The schema of ${where} is up to date.`);
  }
}
