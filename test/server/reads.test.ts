// The merge queue's reads never write (issue 23): asking for a queue, its PRs, a PR and its
// history leaves every queue row in the database as it was.
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { SQLITE_FILE } from '../../src/store/index.js';
import { serversPerTest } from '../support/hooks.js';
import { ok, Q } from './helpers.js';

const startServer = serversPerTest();

/** Every row of the queue tables, as one string (tokens' last use is auth's, not the queue's). */
function queueRows(dataDir: string): string {
  const db = new Database(join(dataDir, SQLITE_FILE), { readonly: true });
  try {
    const rows = (table: string, order: string) => db.prepare(`SELECT * FROM ${table} ORDER BY ${order}`).all();
    return JSON.stringify({
      queues: rows('queues', 'id'),
      pullRequests: rows('pull_requests', 'id'),
      testRuns: rows('test_runs', 'id'),
      transitions: rows('pr_transitions', 'seq'),
      impactedTargets: rows('impacted_targets', 'queue_id, pr_number, head_sha'),
    });
  } finally {
    db.close();
  }
}

describe('reads of the merge queue', () => {
  it('leave the database unchanged: getQueue, listPullRequests, getSubmittedPullRequest, history', async () => {
    const s = await startServer();
    await ok(s, 'createQueue', Q);
    // Paused: the PRs wait, so nothing but these requests could write.
    await ok(s, 'updateQueue', { ...Q, state: 'paused' });
    await ok(s, 'submitPullRequest', { ...Q, pr: { number: 1 } });
    await ok(s, 'submitPullRequest', { ...Q, pr: { number: 2 } });
    const before = queueRows(s.dataDir);
    for (let i = 0; i < 3; i++) {
      await ok(s, 'getQueue', Q);
      await ok(s, 'listPullRequests', Q);
      expect(await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: 1 } })).toMatchObject({ state: 'pending' });
      await ok(s, 'getPullRequestHistory', { ...Q, pr: { number: 2 } });
      await ok(s, 'listQueues', {});
    }
    expect(queueRows(s.dataDir)).toBe(before);
  });
});
