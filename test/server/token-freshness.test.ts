// A running server remembers the tokens it was just shown (no hash per request) and asks SQLite
// whether anything changed through the wal-index header (no read transaction per request), both
// once per turn of its event loop. None of that may let a token outlive its revocation: a token
// revoked, or a permission taken away, by ANOTHER process (`railyard token revoke`'s position)
// counts from the server's very next request, on v1 and v2, however hot the token was.
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hashToken, openStore, SQLITE_FILE } from '../../src/store/index.js';
import { isolatedEnv } from '../support/cli.js';
import { cleanupsAfterEach } from '../support/hooks.js';
import { spawnServe } from '../support/serve.js';
import { tempDirSync } from '../support/tmp.js';

const cleanup = cleanupsAfterEach();
const ROUNDS = 25;

/** A server in a process of its own on a fresh data dir, and this process's connection to its database. */
async function serverAndStore() {
  const dir = tempDirSync();
  const store = await openStore({ dataDir: dir });
  cleanup(() => store.close());
  await store.accounts.addToken('team-a', 'keeper-token');
  const server = await spawnServe(['--data-dir', dir, '--sandbox', '--org', 'team-a'], isolatedEnv());
  cleanup(() => server.kill());
  const base = server.url.replace(/\/v1$/, '');
  const v1 = async (token: string) =>
    (await fetch(`${server.url}/getMergeQueueMetrics`, { headers: { 'x-api-token': token } })).status;
  const v2 = async (token: string, method = 'GET', path = '/merge-queues') =>
    (await fetch(`${base}/v2${path}`, { method, headers: { authorization: `Bearer ${token}` } })).status;
  return { dir, store, v1, v2 };
}

describe('token changes made by another process while the server runs', () => {
  it('a revoked token gets 401 on the next request, however often it was just used, round after round', async () => {
    const { store, v1, v2 } = await serverAndStore();
    for (let round = 0; round < ROUNDS; round++) {
      const token = `ry_round${round}_${randomBytes(16).toString('hex')}`;
      await store.accounts.addToken('team-a', token);
      // In use, also several requests at a time (read in one turn of the server's loop).
      expect(await Promise.all([v1(token), v2(token), v1(token), v2(token), v2(token)])).toEqual([
        200, 200, 200, 200, 200,
      ]);
      expect(await v2(token)).toBe(200);
      const revoked = await store.accounts.revokeToken(hashToken(token));
      expect(revoked).toHaveLength(1);
      expect(await v2(token), `round ${round}: v2 right after the revoke`).toBe(401);
      expect(await v1(token), `round ${round}: v1 right after the revoke`).toBe(401);
      // The other tokens are untouched.
      expect(await v2('keeper-token')).toBe(200);
    }
  });

  it('a permission taken away is refused on the next request (403), and given back, allowed again', async () => {
    const { dir, v2 } = await serverAndStore();
    const db = new Database(join(dir, SQLITE_FILE));
    cleanup(() => db.close());
    const setPermissions = db.prepare('UPDATE api_tokens SET permissions = ? WHERE token_hash = ?');
    const hash = hashToken('keeper-token');
    // Pausing a queue that does not exist: 404 once past the permission check, 403 before it.
    const pause = () =>
      v2('keeper-token', 'POST', '/merge-queues/00000000-0000-4000-8000-000000000000/pause');
    for (let round = 0; round < ROUNDS; round++) {
      expect(await Promise.all([pause(), pause(), pause()])).toEqual([404, 404, 404]);
      expect(setPermissions.run('merge', hash).changes).toBe(1);
      expect(await pause(), `round ${round}: right after "settings" was taken away`).toBe(403);
      expect(await v2('keeper-token')).toBe(200);
      expect(setPermissions.run('merge,settings', hash).changes).toBe(1);
      expect(await pause(), `round ${round}: right after "settings" was given back`).toBe(404);
    }
  });
});
