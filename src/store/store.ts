/**
 * The store: openStore opens the database (connect.ts) and applies the migrations; Store is that
 * one database handle and the parts that work over it, each a class of its own file — accounts,
 * queues, webhooks, flaky tests, the risk model's history and forge events. No part calls back
 * into the server: what only the server knows (a queue step's webhook events) comes with the call.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Kysely, Migrator, PostgresDialect, sql, type Dialect } from 'kysely';
import { AccountStore, type StoredToken } from './accounts.js';
import {
  dataVersions,
  tokenReaders,
  pauseBetweenStatements,
  postgresDialect,
  sqliteDialect,
  SQLITE_FILE,
  type Db,
  type StoreKind,
  type StoreOptions,
} from './connect.js';
import { FlakyStore } from './flaky.js';
import { ForgeEventsStore } from './forge-events.js';
import { migrations } from './migrations/index.js';
import { QueueStore } from './queues.js';
import { RiskStore } from './risk.js';
import type { SchemaTables } from './schema.js';
import { WebhookStore } from './webhooks.js';

/** Opens the store and applies pending migrations. */
export async function openStore(options: StoreOptions): Promise<Store> {
  let dialect: Dialect;
  let kind: StoreKind = 'sqlite';
  let file: string | null = null;
  let stop: (() => Promise<void>) | undefined;
  if ('dialect' in options) {
    dialect = options.dialect;
    if (options.dialect instanceof PostgresDialect) kind = 'postgres';
  } else if ('databaseUrl' in options) {
    dialect = await postgresDialect(options);
    kind = 'postgres';
  } else {
    // The data directory holds token hashes and run logs: the owner's alone (a new one is 0700).
    if ('dataDir' in options) mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
    file = 'dataDir' in options ? join(options.dataDir, SQLITE_FILE) : options.sqlitePath;
    ({ dialect, stop } = sqliteDialect(file));
  }
  const db = new Kysely<SchemaTables>({ dialect });
  // Numbers are reserved per feature and land in any order: a database that already has 011 still
  // gets 009 when it arrives (each migration touches only its own tables).
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    allowUnorderedMigrations: true,
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    await stop?.();
    await db.destroy();
    const failed = results?.find((r) => r.status === 'Error')?.migrationName;
    throw new Error(
      `database migration ${failed ?? ''} failed: ${error instanceof Error ? error.message : String(error)}`,
      {
        cause: error,
      },
    );
  }
  const pause =
    kind === 'sqlite'
      ? pauseBetweenStatements(file && file !== ':memory:' ? `${file}-wal` : null)
      : undefined;
  return new Store(db, kind, {
    dataVersion: dataVersions.get(dialect),
    pause,
    beforeClose: stop,
    migrated: (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName),
    sqliteFile: file && file !== ':memory:' ? file : null,
    listTokensNow: tokenReaders.get(dialect),
  });
}

/** What openStore found out about the database, beside its handle. */
export interface StoreExtras {
  /**
   * SQLite only: changes whenever another connection (another process: `railyard token revoke`)
   * commits, so a server can re-read tokens the moment they change. Undefined for other dialects.
   */
  dataVersion?: () => number;
  /** Awaited between the statements of a long transaction (the default just yields). */
  pause?: () => Promise<void>;
  /** Stops what runs beside the database (the SQLite checkpointer) before it is closed. */
  beforeClose?: () => Promise<void>;
  /** The migrations this open applied. */
  migrated?: string[];
  /** The SQLite database file, for connections of other threads. */
  sqliteFile?: string | null;
  /** SQLite: the stored token hashes, read at once (AccountStore.listTokensNow). */
  listTokensNow?: () => StoredToken[];
}

/** The database handle and the parts of the store over it: `store.queues.loadQueues()`, `store.accounts.addToken()`, … */
export class Store {
  readonly accounts: AccountStore;
  readonly queues: QueueStore;
  /** Outgoing webhooks: endpoints, the outbox each queue step writes to, deliveries (webhooks.ts). */
  readonly webhooks: WebhookStore;
  readonly flaky: FlakyStore;
  /** The risk model's history: each submission's facts and how it ended. */
  readonly risk: RiskStore;
  /** What forge drivers have acted on (webhook deliveries, command comments). */
  readonly forgeEvents: ForgeEventsStore;

  /** The migrations this open applied (empty when the schema was already current). */
  readonly migrated: readonly string[];
  /** The SQLite database file (null: PostgreSQL, another dialect, or `:memory:`), for connections of other threads. */
  readonly sqliteFile: string | null;
  /** See StoreExtras.dataVersion. */
  readonly dataVersion?: () => number;
  /** Awaited between the statements of a long transaction. */
  readonly pause: () => Promise<void>;
  private readonly beforeClose?: () => Promise<void>;

  constructor(
    readonly db: Db,
    readonly kind: StoreKind = 'sqlite',
    extras: StoreExtras = {},
  ) {
    this.dataVersion = extras.dataVersion;
    this.pause = extras.pause ?? (() => new Promise<void>((resume) => setImmediate(resume)));
    this.beforeClose = extras.beforeClose;
    this.migrated = extras.migrated ?? [];
    this.sqliteFile = extras.sqliteFile ?? null;
    this.accounts = new AccountStore(db, extras.listTokensNow);
    this.queues = new QueueStore(db, kind);
    this.webhooks = new WebhookStore(db, kind);
    this.flaky = new FlakyStore(db, { pause: this.pause });
    this.risk = new RiskStore(db);
    this.forgeEvents = new ForgeEventsStore(db);
  }

  async close(): Promise<void> {
    await this.beforeClose?.();
    await this.db.destroy();
  }

  /**
   * One trivial query: resolves when the database answers (`/v1/status`'s health probe). The
   * embedded SQLite file lives in this process and cannot be unreachable while it answers; its one
   * connection runs statements in turn, so a probe queued behind a long upload's transaction would
   * time out and report a busy server as down (503): there is nothing to probe.
   */
  async ping(): Promise<void> {
    if (this.kind === 'sqlite') return;
    await sql`select 1`.execute(this.db);
  }
}
