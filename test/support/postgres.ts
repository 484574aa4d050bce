/** A throwaway PostgreSQL cluster for tests (Debian's postgresql-15 binaries). */
import { execFile } from 'node:child_process';
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
  /** A URL for a fresh, empty database in this cluster. */
  createDatabase(name?: string): Promise<string>;
  /** Stops the server abruptly (immediate mode) without removing its files; `start()` brings it back. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops the server and deletes the cluster directory. */
  close(): Promise<void>;
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
    'max_connections = 200',
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
  let n = 0;
  let closed = false;
  return {
    url,
    port,
    async createDatabase(name) {
      const db = name ?? `railyard_${process.pid}_${++n}`;
      const client = new Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE "${db}"`);
      } finally {
        await client.end();
      }
      return `postgres://postgres@127.0.0.1:${port}/${db}`;
    },
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
