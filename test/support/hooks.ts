/** Cleanups registered by tests and helpers, run after each test (last registered first). */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe } from 'vitest';
import { sharedPostgres, skipWithoutPostgres, startPostgres, type PostgresCluster } from './postgres.js';
import { startTestServer, type TestServer, type TestServerOptions } from './server.js';

/**
 * Cleanups that run after each test, the last registered first. Call once at the top level of a
 * test file: `const cleanup = cleanupsAfterEach();`, then `cleanup(() => server.close())` in a test.
 */
export function cleanupsAfterEach(): (fn: () => unknown) => void {
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });
  return (fn) => {
    cleanups.push(fn);
  };
}

/**
 * The PostgreSQL cluster for the tests of one file: the run's shared one (test/support/global-postgres.ts),
 * or with `own` (a file that stops and starts its cluster) a throwaway cluster of its own, started
 * before the file's tests and removed after them; none when `skip` (PostgreSQL tests skipped here).
 * Call once at the top level of the file.
 */
export function postgresForFile(skip: boolean, options: { own?: boolean } = {}): () => PostgresCluster {
  let cluster: PostgresCluster | undefined;
  beforeAll(async () => {
    if (skip) return;
    cluster = (!options.own && sharedPostgres()) || (await startPostgres());
  });
  afterAll(async () => {
    await cluster?.close();
  });
  return () => {
    if (!cluster) throw new Error('no PostgreSQL cluster: the tests that need it must be skipped');
    return cluster;
  };
}

/** Where a store test opens its store: a data dir (SQLite) or a database (PostgreSQL). */
export type StoreLocation = { dataDir: string } | { databaseUrl: string };

/**
 * The two databases a store test runs on, for `for (const d of storeDialects(…))`: each `where()`
 * makes a new place (a data dir named `prefix…`, removed after the file's tests, or a new database
 * on the file's cluster); PostgreSQL is skipped where there is none. Call at the top level of a file.
 */
export function storeDialects(
  prefix: string,
  noPostgres: boolean,
  cluster: () => PostgresCluster,
): { name: 'sqlite' | 'postgres'; skip: boolean; where: () => Promise<StoreLocation> }[] {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });
  return [
    {
      name: 'sqlite',
      skip: false,
      where: async () => {
        const dataDir = await mkdtemp(join(tmpdir(), prefix));
        dirs.push(dataDir);
        return { dataDir };
      },
    },
    { name: 'postgres', skip: noPostgres, where: async () => ({ databaseUrl: await cluster().createDatabase() }) },
  ];
}

/**
 * Starts real servers for the tests of one file and closes each test's servers after it.
 * Call once at the top level of a test file: `const server = serversPerTest();`.
 */
export function serversPerTest(): (opts?: TestServerOptions) => Promise<TestServer> {
  const servers: TestServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });
  return async (opts) => {
    const s = await startTestServer(opts);
    servers.push(s);
    return s;
  };
}

/** A server's database for the running test of an `eachDatabase` suite (nothing on SQLite). */
export type TestDatabase = () => Promise<Pick<TestServerOptions, 'databaseUrl'>>;

/**
 * Declares `suite` twice: 'on SQLite', and 'on PostgreSQL' on the run's shared cluster (skipped,
 * saying why, on a machine without PostgreSQL; with CI set it must run). Call once at the top level
 * of a test file: `const database = eachDatabase(suite);`. A server started in the suite takes
 * `await database()`: nothing on SQLite; on PostgreSQL the running test's own database, made on
 * first use (with the store's schema already in it, as after an earlier start) and shared by every
 * server the test starts (a restart finds what it stored).
 *
 * With `sideBySide`, the two run at the same time (each one's tests still one after the other), for
 * suites that mostly wait on servers and timers. The suite then takes its copy's own `database`
 * (its argument), and registers its per-test cleanups inside itself (e.g. `serversPerTest()` in the
 * suite): a hook at the top level of the file runs after the tests of both copies.
 */
export function eachDatabase(
  suite: (database: TestDatabase) => void,
  options: { sideBySide?: boolean } = {},
): TestDatabase {
  const sqlite: TestDatabase = async () => ({});
  let cluster: PostgresCluster | undefined;
  let current: Promise<string> | undefined;
  const postgres: TestDatabase = async () => {
    if (!cluster) throw new Error('no PostgreSQL cluster: the tests that need it must be skipped');
    current ??= cluster.createDatabase(undefined, { migrated: true });
    return { databaseUrl: await current };
  };
  // What the returned function answers: the copy running now (one at a time without sideBySide).
  let running = sqlite;
  // Side by side: each copy is a concurrent suite whose tests are sequential.
  const copy = (name: string, skip: boolean, body: () => void) =>
    options.sideBySide
      ? describe.skipIf(skip)(name, { concurrent: true }, () => {
          describe.sequential('', body);
        })
      : describe.skipIf(skip)(name, body);
  copy('on SQLite', false, () => suite(sqlite));
  copy('on PostgreSQL', skipWithoutPostgres(), () => {
    beforeAll(async () => {
      cluster = sharedPostgres() ?? (await startPostgres());
      if (!options.sideBySide) running = postgres;
    });
    afterEach(() => {
      current = undefined;
    });
    afterAll(async () => {
      running = sqlite;
      await cluster?.close();
      cluster = undefined;
    });
    suite(postgres);
  });
  return () => {
    if (options.sideBySide)
      throw new Error("eachDatabase({ sideBySide }): take the suite's own database (its argument)");
    return running();
  };
}
