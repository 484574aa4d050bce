/** A throwaway PostgreSQL cluster for tests (Debian's postgresql-15 binaries). */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';

const run = promisify(execFile);

/** Where Debian's postgresql-15 package puts the server binaries (overridable for other layouts). */
export const PG_BIN = process.env.RAILYARD_PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** Why PostgreSQL tests cannot run here, or null when they can. With `CI` set, a missing server is an error, not a skip. */
export function postgresUnavailable(): string | null {
  if (!existsSync(join(PG_BIN, 'initdb')) || !existsSync(join(PG_BIN, 'pg_ctl'))) {
    return `PostgreSQL server binaries not found in ${PG_BIN} (apt-get install postgresql, or set RAILYARD_PG_BIN)`;
  }
  return null;
}

/** Fails the run on CI when PostgreSQL is missing (CI must run these tests); elsewhere says why they are skipped. */
export function skipWithoutPostgres(): boolean {
  const why = postgresUnavailable();
  if (!why) return false;
  if (process.env.CI) throw new Error(`CI is set but PostgreSQL tests cannot run: ${why}`);
  console.warn(`skipping PostgreSQL tests: ${why}`);
  return true;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface PostgresCluster {
  /** `postgres://postgres@127.0.0.1:PORT/postgres` */
  url: string;
  port: number;
  /**
   * A URL for a fresh, empty database in this cluster; with `migrated`, one that already holds the
   * store's schema (a copy of a template database the store migrated once in this cluster), as a
   * database the server ran on before: a server started on it finds nothing to migrate, as on a
   * restart. Tests of the migrations themselves take an empty one.
   */
  createDatabase(name?: string, options?: { migrated?: boolean }): Promise<string>;
  /** Stops the server abruptly (immediate mode) without removing its files; `start()` brings it back. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops the server and deletes the cluster directory. */
  close(): Promise<void>;
}

/** The store's schema, migrated once per cluster: `CREATE DATABASE … TEMPLATE` copies it (issue 27). */
const MIGRATED_TEMPLATE = 'railyard_migrated_template';

/** createDatabase for the cluster at `url`: empty databases, or copies of the migrated template. */
function databasesOf(url: string, port: number, templateMade = false): Pick<PostgresCluster, 'url' | 'port' | 'createDatabase'> {
  let n = 0;
  let template: Promise<void> | undefined = templateMade ? Promise.resolve() : undefined;
  const query = (sql: string) => adminQuery(url, sql);
  const at = (db: string) => `postgres://postgres@127.0.0.1:${port}/${db}`;
  return {
    url,
    port,
    async createDatabase(name, options) {
      const db = name ?? `railyard_${process.pid}_${++n}_${randomBytes(3).toString('hex')}`;
      if (options?.migrated) {
        // A file's own cluster: made at the first ask. The run's shared cluster: made by the global
        // setup before any worker starts (a copy must not start while the store is migrating it).
        template ??= makeTemplate(url);
        await template;
        await query(`CREATE DATABASE "${db}" TEMPLATE "${MIGRATED_TEMPLATE}"`);
      } else {
        await query(`CREATE DATABASE "${db}"`);
      }
      return at(db);
    },
  };
}

/** One statement on the cluster's `postgres` database. */
async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Creates the template database and lets the store migrate it (then closes: a copy needs the template unconnected). */
async function makeTemplate(url: string): Promise<void> {
  await adminQuery(url, `CREATE DATABASE "${MIGRATED_TEMPLATE}"`);
  const templateUrl = new URL(url);
  templateUrl.pathname = `/${MIGRATED_TEMPLATE}`;
  const { openStore } = await import('../../src/store/index.js');
  const store = await openStore({ databaseUrl: templateUrl.href, poolSize: 1 });
  await store.close();
}

/** Where the run's shared cluster is (set by test/support/global-postgres.ts for the test workers). */
const SHARED_CLUSTER_ENV = 'RAILYARD_TEST_POSTGRES_URL';

/**
 * The run's shared PostgreSQL cluster (started once by test/support/global-postgres.ts), or null
 * when the run has none (PostgreSQL missing here). Tests create their own databases in it; it
 * cannot be stopped, started or closed from a test file: a file that stops its cluster starts its
 * own (`postgresForFile(skip, { own: true })`).
 */
export function sharedPostgres(): PostgresCluster | null {
  const url = process.env[SHARED_CLUSTER_ENV];
  if (!url) return null;
  const port = Number(new URL(url).port);
  const refuse = (what: string) => async () => {
    throw new Error(`the run's shared PostgreSQL cluster cannot be ${what} by a test: use postgresForFile(skip, { own: true })`);
  };
  return { ...databasesOf(url, port, true), stop: refuse('stopped'), start: refuse('started'), close: async () => undefined };
}

/** For the global setup: migrates the template in `cluster` and makes it the run's shared one (the workers inherit the variable). */
export async function shareCluster(cluster: PostgresCluster): Promise<() => void> {
  await makeTemplate(cluster.url);
  process.env[SHARED_CLUSTER_ENV] = cluster.url;
  return () => {
    delete process.env[SHARED_CLUSTER_ENV];
  };
}

/**
 * A throwaway PostgreSQL cluster in a temporary directory on a free port on 127.0.0.1, trusting
 * local connections. `initdb` refuses to run as root, so as root the cluster belongs to the
 * `postgres` user and its commands run as that user.
 */
export async function startPostgres(): Promise<PostgresCluster> {
  const why = postgresUnavailable();
  if (why) throw new Error(why);
  const root = await mkdtemp(join(tmpdir(), 'railyard-pg-'));
  const dataDir = join(root, 'data');
  const asRoot = process.getuid?.() === 0;
  let uid = 0;
  let gid = 0;
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    uid = Number(stdout.trim());
    gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim());
    await chown(root, uid, gid);
  }
  await chmod(root, 0o700);
  const pg = async (bin: string, args: string[]) => {
    const options = { cwd: root, env: { ...process.env, LC_ALL: 'C' }, ...(asRoot ? { uid, gid } : {}) };
    return run(join(PG_BIN, bin), args, options);
  };
  await pg('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--no-sync']).catch(async (e) => {
    await rm(root, { recursive: true, force: true });
    throw e;
  });
  const port = await freePort();
  const conf = [
    `port = ${port}`,
    `listen_addresses = '127.0.0.1'`,
    `unix_socket_directories = '${root}'`,
    'fsync = off',
    'full_page_writes = off',
    'max_connections = 300',
    'shared_buffers = 128MB',
  ].join('\n');
  await writeFile(join(dataDir, 'postgresql.auto.conf'), conf + '\n');
  if (asRoot) await chown(join(dataDir, 'postgresql.auto.conf'), uid, gid);
  const start = async () => {
    await pg('pg_ctl', ['-D', dataDir, '-l', join(root, 'server.log'), '-w', '-t', '30', 'start']);
  };
  const stop = async () => {
    await pg('pg_ctl', ['-D', dataDir, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
  };
  await start();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let closed = false;
  return {
    ...databasesOf(url, port),
    stop,
    start,
    async close() {
      if (closed) return;
      closed = true;
      await stop();
      await rm(root, { recursive: true, force: true });
    },
  };
}
