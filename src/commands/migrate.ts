import { Command, Flags } from '@oclif/core';

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
    'database-url': Flags.string({
      description: 'PostgreSQL URL (postgres://USER:PASSWORD@HOST:PORT/DB) instead of the embedded SQLite',
      env: 'RAILYARD_DATABASE_URL',
      helpValue: 'URL',
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Migrate);
    const { openDatabase, redactUrl } = await import('../store/index.js');
    let store: Awaited<ReturnType<typeof openDatabase>>;
    try {
      store = await openDatabase(flags['data-dir'], flags['database-url']);
    } catch (error) {
      process.stderr.write(`railyard migrate: ${error instanceof Error ? error.message : String(error)}\n`);
      this.exit(2);
    }
    const where = flags['database-url'] ? redactUrl(flags['database-url']) : `${flags['data-dir']} (SQLite)`;
    await store.close();
    if (store.migrated.length) this.log(`Applied ${store.migrated.length} migration(s) to ${where}: ${store.migrated.join(', ')}`);
    else this.log(`The schema of ${where} is up to date.`);
  }
}
