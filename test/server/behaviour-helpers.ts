// What the server behaviour tests share (behaviour.test.ts, on each database, and
// behaviour-http.test.ts): servers started for a test and closed when it ends, with a queue
// (running or paused) already made.
import { serversPerTest } from '../support/hooks.js';
import type { TestServer, TestServerOptions } from '../support/server.js';
import { ok, Q } from './helpers.js';

/**
 * The servers of a test file: call once at its top level. `database` gives the running test's
 * database (`eachDatabase` in test/support/hooks.ts); without it, or between suites, SQLite.
 */
export function behaviourServers(
  database: () => Promise<Pick<TestServerOptions, 'databaseUrl'>> = async () => ({}),
) {
  const startServer = serversPerTest();

  async function server(opts?: TestServerOptions): Promise<TestServer> {
    return startServer({ ...opts, ...(await database()) });
  }

  async function withQueue(opts?: TestServerOptions): Promise<TestServer> {
    const s = await server(opts);
    await ok(s, 'createQueue', Q);
    return s;
  }

  /** A paused queue: PRs are admitted and ordered but nothing starts testing, so stored state stays put. */
  async function withPausedQueue(extra: Record<string, unknown> = {}): Promise<TestServer> {
    const s = await server();
    await ok(s, 'createQueue', { ...Q, ...extra });
    await ok(s, 'updateQueue', { ...Q, state: 'paused' });
    return s;
  }

  return { server, withQueue, withPausedQueue };
}
