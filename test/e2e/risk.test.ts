/**
 * The server computes `riskEstimate` from the queue's own stored history (issue 22): real bare
 * repositories, the real server running the checks. An author whose changes to one area kept
 * failing gets a higher estimate for the next change there than an author whose changes to
 * another area passed; the estimate survives a restart (the model is fitted again from the
 * database, giving the same number).
 */
import { expect, it } from 'vitest';
import { createRepo } from '../forge/fixture.js';
import { cleanupsAfterEach, eachDatabase, type TestDatabase } from '../support/hooks.js';
import { tempDir } from '../support/tmp.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { ok } from '../server/helpers.js';

const LOCATION = { host: 'github.com', owner: 'acme', name: 'risk' };
const Q = { repo: LOCATION, targetBranch: 'main' };

async function settle(server: TestServer, n: number) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const pr = await ok(server, 'getSubmittedPullRequest', { ...Q, pr: { number: n } });
    if (['merged', 'failed', 'cancelled'].includes(pr.state)) return pr;
    if (Date.now() > deadline) throw new Error(`#${n} is still ${pr.state}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function riskSuite(database: TestDatabase): void {
  const cleanup = cleanupsAfterEach();
  it('rises for an author and area whose changes failed, and is the same after a restart', async () => {
    const repo = await createRepo({ location: LOCATION, checks: { test: '! test -f fail.txt' }, files: { 'README.md': 'risk\n' } });
    cleanup(() => repo.cleanup());
    const dataDir = await tempDir('railyard-risk-');
    const db = await database();
    let server = await startTestServer({ gitRoot: repo.root, dataDir, ...db });
    cleanup(() => server.close());
    await ok(server, 'createQueue', Q);

    // Ada's changes to src/engine fail their tests; Bo's changes to docs pass.
    for (let i = 1; i <= 8; i++) {
      const ada = i % 2 === 1;
      repo.openPr(
        i,
        ada ? { [`src/engine/change${i}.ts`]: `export const x${i} = ${i};\n`, 'fail.txt': 'yes\n' } : { [`docs/note${i}.md`]: `note ${i}\n` },
        { title: `change ${i}`, author: ada ? 'Ada' : 'Bo' },
      );
      await ok(server, 'submitPullRequest', { ...Q, pr: { number: i } });
      expect((await settle(server, i)).state).toBe(ada ? 'failed' : 'merged');
    }
    const first = (await ok(server, 'getSubmittedPullRequest', { ...Q, pr: { number: 1 } })).riskEstimate;
    expect(first).toBeGreaterThan(0);

    // The next ones wait in a paused queue: their estimates are what the history says.
    await ok(server, 'updateQueue', { ...Q, state: 'paused' });
    repo.openPr(9, { 'src/engine/next.ts': 'export const next = 9;\n' }, { title: 'Ada again', author: 'Ada' });
    repo.openPr(10, { 'docs/next.md': 'next\n' }, { title: 'Bo again', author: 'Bo' });
    await ok(server, 'submitPullRequest', { ...Q, pr: { number: 9 } });
    await ok(server, 'submitPullRequest', { ...Q, pr: { number: 10 } });
    const ada = (await ok(server, 'getSubmittedPullRequest', { ...Q, pr: { number: 9 } })).riskEstimate;
    const bo = (await ok(server, 'getSubmittedPullRequest', { ...Q, pr: { number: 10 } })).riskEstimate;
    expect(ada).toBeGreaterThan(0.3);
    expect(bo).toBeLessThan(0.15);
    expect(ada).toBeGreaterThan(first);

    // A restart fits the model again from the database: the same facts get the same estimate.
    await server.close();
    server = await startTestServer({ gitRoot: repo.root, dataDir, ...db });
    cleanup(() => server.close());
    repo.openPr(11, { 'src/engine/next.ts': 'export const next = 9;\n' }, { title: 'Ada, same change', author: 'Ada' });
    await ok(server, 'submitPullRequest', { ...Q, pr: { number: 11 } });
    expect((await ok(server, 'getSubmittedPullRequest', { ...Q, pr: { number: 11 } })).riskEstimate).toBe(ada);
  }, 90_000);
}

// SQLite and PostgreSQL side by side: each mostly waits for its checks and its queue's ticks.
eachDatabase(riskSuite, { sideBySide: true });
