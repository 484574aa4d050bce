/** Cleanups registered by tests and helpers, run after each test (last registered first). */
import { afterAll, afterEach, beforeAll, describe } from 'vitest';
import { skipWithoutPostgres, startPostgres, type PostgresCluster } from './postgres.js';
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
 * A throwaway PostgreSQL cluster for the tests of one file: started before them, removed after
 * them; none when `skip` (PostgreSQL tests skipped here). Call once at the top level of the file.
 */
export function postgresForFile(skip: boolean): () => PostgresCluster {
  let cluster: PostgresCluster | undefined;
  beforeAll(async () => {
    if (!skip) cluster = await startPostgres();
  });
  afterAll(async () => {
    await cluster?.close();
  });
  return () => {
    if (!cluster) throw new Error('no PostgreSQL cluster: the tests that need it must be skipped');
    return cluster;
  };
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

/**
 * Declares `suite` twice: 'on SQLite', and 'on PostgreSQL' on a throwaway cluster (skipped, saying
 * why, on a machine without PostgreSQL; with CI set it must run). Call once at the top level of a
 * test file: `const database = eachDatabase(suite);`. A server started in the suite takes
 * `await database()`: nothing on SQLite; on PostgreSQL the running test's own database, made on
 * first use and shared by every server the test starts (a restart finds what it stored).
 */
export function eachDatabase(suite: () => void): () => Promise<Pick<TestServerOptions, 'databaseUrl'>> {
  let newDatabase: (() => Promise<string>) | null = null;
  let current: Promise<string> | undefined;
  afterEach(() => {
    current = undefined;
  });
  describe('on SQLite', suite);
  describe.skipIf(skipWithoutPostgres())('on PostgreSQL', () => {
    let cluster: PostgresCluster | undefined;
    beforeAll(async () => {
      cluster = await startPostgres();
      newDatabase = () => cluster!.createDatabase();
    });
    afterAll(async () => {
      newDatabase = null;
      await cluster?.close();
    });
    suite();
  });
  return async () => {
    if (!newDatabase) return {};
    current ??= newDatabase();
    return { databaseUrl: await current };
  };
}
