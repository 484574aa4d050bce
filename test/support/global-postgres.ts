/** Vitest global setup: one PostgreSQL cluster for the whole run, shared by the test files (issue 27). */
import { postgresUnavailable, shareCluster, startPostgres } from './postgres.js';

/**
 * Starts the run's PostgreSQL cluster (one `initdb` and one server for the run instead of one per
 * test file) with the store's schema migrated into a template database, and hands its URL to the
 * test workers (`sharedPostgres()`); removes it at the end. Nothing where PostgreSQL is missing:
 * the files then skip their PostgreSQL tests (or, with CI set, fail) as before. Runs after
 * global-tmp.ts, so the cluster lives under the run's temp dir.
 */
export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  if (postgresUnavailable()) return undefined;
  const cluster = await startPostgres();
  const unshare = await shareCluster(cluster).catch(async (e: unknown) => {
    await cluster.close();
    throw e;
  });
  return async () => {
    unshare();
    await cluster.close();
  };
}
