/**
 * The server on PostgreSQL: one server across restarts, and several replicas on one database
 * answering alike while exactly one drives each queue.
 */
import { Client } from 'pg';
import { describe, expect, it, type TestContext } from 'vitest';
import { postgresForFile } from '../support/hooks.js';
import { skipWithoutPostgres } from '../support/postgres.js';
import { startTestServer, type TestServer, type TestServerOptions } from '../support/server.js';
import { call, ok, REPO } from './helpers.js';

const noPostgres = skipWithoutPostgres();
const Q = { repo: REPO, targetBranch: 'main' };

// Its own cluster: the tests stop and start it.
const cluster = postgresForFile(noPostgres, { own: true });

/** A server on `databaseUrl`, closed when the test that started it ends (tests run side by side). */
async function server(t: TestContext, databaseUrl: string, opts: TestServerOptions = {}): Promise<TestServer> {
  const s = await startTestServer({ databaseUrl, sandbox: { testSeconds: 0.3 }, tickMs: 100, ...opts });
  t.onTestFinished(() => s.close());
  return s;
}

interface PrAnswer {
  state: string;
  stateReason?: string;
}

async function waitFor(s: TestServer, prNumber: number, done: (pr: PrAnswer) => boolean, timeoutMs = 20_000): Promise<PrAnswer> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pr = (await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: prNumber } })) as PrAnswer;
    if (done(pr)) return pr;
    if (Date.now() > deadline) throw new Error(`#${prNumber} is still ${pr.state} (${pr.stateReason ?? ''})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const merged = (pr: { state: string }) => pr.state === 'merged';

/** What the servers of a test that breaks the database on purpose reported: asserted on, not printed. */
function expectedFailures(): { log: (message: string, error?: unknown) => void; lines: string[] } {
  const lines: string[] = [];
  const log = (message: string, error?: unknown) => lines.push(`${message}: ${error instanceof Error ? error.message : String(error ?? '')}`);
  return { log, lines };
}

/**
 * A replica stopped while it drives a queue may find its lease gone mid-write (LeaseLostError,
 * logged by its workers): expected there, so collected instead of printed as a stack trace in a
 * green run; anything else it logs fails the test.
 */
function onlyLeaseLoss(failures: { lines: string[] }): void {
  const unexpected = failures.lines.filter((l) => !/this replica no longer holds its lease$/.test(l));
  expect(unexpected, unexpected.join('\n')).toEqual([]);
}

describe.skipIf(noPostgres)('on PostgreSQL', () => {
  // Side by side, each on its own database: these mostly wait for runs, leases and timeouts.
  it.concurrent('serves the same queue and pull requests after a restart, and merges them', async (t) => {
    const url = await cluster().createDatabase();
    const failures = expectedFailures();
    const a = await server(t, url, { sandbox: { testSeconds: 60 }, log: failures.log });
    await ok(a, 'createQueue', { ...Q, concurrency: 2 });
    await ok(a, 'updateQueue', { ...Q, requiredStatuses: ['build'] });
    for (const n of [1, 2, 3]) await ok(a, 'submitPullRequest', { ...Q, pr: { number: n } });
    await ok(a, 'cancelPullRequest', { ...Q, pr: { number: 3 } });
    const snapshot = async (s: TestServer) => ({
      queue: await ok(s, 'getQueue', Q),
      list: await ok(s, 'listPullRequests', Q),
    });
    const before = await snapshot(a);
    expect(before.queue.enqueuedPullRequests.map((p: { prNumber: number }) => p.prNumber)).toEqual([1, 2]);
    await a.close();

    // Runs of 6 s by b's clock, still testing when b answers (a run already over would finish at once and change the snapshot).
    const b = await server(t, url, { sandbox: { testSeconds: 6 } });
    expect(await snapshot(b)).toEqual(before);
    // The restarted server re-attaches to the runs in flight and lands them.
    await waitFor(b, 1, merged);
    await waitFor(b, 2, merged);
    onlyLeaseLoss(failures);
  });

  it.concurrent('lets any replica answer any request, with one replica driving the queue', async (t) => {
    const url = await cluster().createDatabase();
    const a = await server(t, url);
    const b = await server(t, url);
    await ok(a, 'createQueue', Q);
    // Written on one replica, visible on the other at once (no waiting for a notification).
    await ok(b, 'submitPullRequest', { ...Q, pr: { number: 1 } });
    await ok(a, 'submitPullRequest', { ...Q, pr: { number: 2 } });
    await ok(b, 'submitPullRequest', { ...Q, pr: { number: 3 }, priority: 'high' });
    const order = async (s: TestServer) => (await ok(s, 'listPullRequests', Q)).pullRequests.map((p: { prNumber: number }) => p.prNumber);
    // Queue order on both: #1 testing, then the high-priority #3 ahead of #2.
    expect(await order(a)).toEqual([1, 3, 2]);
    expect(await order(b)).toEqual([1, 3, 2]);
    expect((await call(b, 'createQueue', Q)).status).toBe(409);

    for (const n of [1, 2, 3]) await waitFor(n % 2 ? a : b, n, merged);
    const [fromA, fromB] = await Promise.all([ok(a, 'getQueue', Q), ok(b, 'getQueue', Q)]);
    expect(fromA).toEqual(fromB);
    // Each PR ran once: one replica drove the queue, so no run was started twice.
    const prs = await Promise.all([1, 2, 3].map((n) => ok(b, 'getSubmittedPullRequest', { ...Q, pr: { number: n } })));
    expect(prs.map((p) => p.state)).toEqual(['merged', 'merged', 'merged']);

    // A queue deleted on one replica is gone on the other.
    await ok(b, 'deleteQueue', Q);
    expect((await call(a, 'getQueue', Q)).status).toBe(404);
  });

  it.concurrent('answers on one replica every write the other has just acknowledged, also while its LISTEN connection is lost', async (t) => {
    const url = await cluster().createDatabase();
    const failures = expectedFailures();
    const a = await server(t, url, { sandbox: { testSeconds: 600 }, log: failures.log });
    const b = await server(t, url, { sandbox: { testSeconds: 600 }, log: failures.log });
    await ok(a, 'createQueue', Q);
    const rounds = async (from: number, to: number) => {
      for (let n = from; n <= to; n++) {
        const [writer, reader] = n % 2 ? [a, b] : [b, a];
        const where = `written on ${writer === a ? 'a' : 'b'}, read on ${reader === a ? 'a' : 'b'}`;
        await ok(writer, 'submitPullRequest', { ...Q, pr: { number: n } });
        expect((await call(reader, 'getSubmittedPullRequest', { ...Q, pr: { number: n } })).status, `#${n} ${where}`).toBe(200);
        await ok(writer, 'updateQueue', { ...Q, concurrency: n });
        expect((await ok(reader, 'getQueue', Q)).concurrency, `concurrency ${n} ${where}`).toBe(n);
        const other = { repo: REPO, targetBranch: `release-${n}` };
        await ok(writer, 'createQueue', other);
        expect((await call(reader, 'getQueue', other)).status, `queue ${other.targetBranch} ${where}`).toBe(200);
        await ok(reader, 'deleteQueue', other);
        expect((await call(writer, 'getQueue', other)).status, `queue ${other.targetBranch} deleted`).toBe(404);
      }
    };
    await rounds(1, 30);
    // Without their LISTEN connections the replicas ask the database, and listen again on the next renewal.
    const admin = new Client({ connectionString: url });
    await admin.connect();
    const listening = `SELECT pid FROM pg_stat_activity WHERE application_name = 'railyard-listen' AND datname = current_database()`;
    try {
      expect((await admin.query(`SELECT pg_terminate_backend(pid) FROM (${listening}) l`)).rowCount).toBe(2);
      await rounds(31, 40);
      await new Promise((r) => setTimeout(r, 2000));
      expect((await admin.query(listening)).rowCount).toBe(2);
    } finally {
      await admin.end();
    }
    await rounds(41, 50);
    // Each replica said once that it lost its notifications. It notices either through the connection's
    // error event ("lost", with PostgreSQL's reason) or first through a barrier query failing on it ("dropped").
    const said = failures.lines.filter((l) => /^replica notifications: connection (lost|dropped): /.test(l));
    expect(said, failures.lines.join('\n')).toHaveLength(2);
    for (const line of said) expect(line).toMatch(/terminat|Connection terminated|not queryable/i);
  });

  it.concurrent('answers 503 with Retry-After when an upload waits past the statement timeout for a test held elsewhere, and stores none of it', async (t) => {
    const url = await cluster().createDatabase();
    const s = await server(t, url, { statementTimeoutMs: 1000 });
    const report = (sha: string) => ({
      repo: REPO,
      org_url_slug: s.org,
      branch: 'main',
      sha,
      reports: [{ name: 'junit.xml', content: '<testsuite name="s"><testcase classname="c" name="held"/><testcase classname="c" name="free"/></testsuite>' }],
    });
    await ok(s, 'uploadTestResults', report('a'.repeat(40)));
    // Another writer (a ticket being linked, an upload running the test) holds the test's row.
    const holder = new Client({ connectionString: url });
    await holder.connect();
    t.onTestFinished(() => holder.end());
    await holder.query('BEGIN');
    await holder.query(`SELECT 1 FROM test_cases WHERE name = 'held' FOR UPDATE`);
    const waited = await call(s, 'uploadTestResults', report('b'.repeat(40)));
    await holder.query('ROLLBACK');
    expect(waited.status).toBe(503);
    expect(waited.headers.get('retry-after')).toBe('1');
    expect(waited.text).toMatch(/^the database gave up waiting for other writes \(.*\); nothing was changed, try again$/);
    const { rows } = await holder.query('SELECT count(*)::int AS n FROM test_uploads');
    expect(rows[0].n).toBe(1);
    // Let go, the same upload goes in.
    await ok(s, 'uploadTestResults', report('b'.repeat(40)));
  });

  it.concurrent('hands the queues of a replica that stops to another one, which finishes their runs', async (t) => {
    const url = await cluster().createDatabase();
    const failures = expectedFailures();
    const a = await server(t, url, { sandbox: { testSeconds: 1 }, leaseMs: 1000, log: failures.log });
    await ok(a, 'createQueue', { ...Q, concurrency: 3 });
    for (const n of [1, 2, 3]) await ok(a, 'submitPullRequest', { ...Q, pr: { number: n } });
    await waitFor(a, 3, (pr) => pr.state === 'testing');
    const b = await server(t, url, { sandbox: { testSeconds: 1 }, leaseMs: 1000, log: failures.log });
    await a.close();
    for (const n of [1, 2, 3]) await waitFor(b, n, merged);
    onlyLeaseLoss(failures);
  });

  // One at a time, after the others: these stop the cluster they all share.
  it('answers 503 while the database is down, loses nothing acknowledged, and recovers by itself', async (t) => {
    const url = await cluster().createDatabase();
    const failures = expectedFailures();
    const a = await server(t, url, { sandbox: { testSeconds: 0.5 }, leaseMs: 1000, log: failures.log });
    await ok(a, 'createQueue', Q);
    await ok(a, 'submitPullRequest', { ...Q, pr: { number: 1 } });
    await cluster().stop();
    try {
      const down = await call(a, 'submitPullRequest', { ...Q, pr: { number: 2 } });
      expect(down.status).toBe(503);
      expect(down.text).toMatch(/database is unavailable/);
    } finally {
      await cluster().start();
    }
    let again = await call(a, 'submitPullRequest', { ...Q, pr: { number: 2 } });
    for (let i = 0; again.status === 503 && i < 50; i++) {
      await new Promise((r) => setTimeout(r, 100));
      again = await call(a, 'submitPullRequest', { ...Q, pr: { number: 2 } });
    }
    expect(again.status).toBe(200);
    // The lease lapsed while the database was down; the replica takes it back and lands both.
    await waitFor(a, 1, merged);
    await waitFor(a, 2, merged);
    // The lost connection was reported (not printed as a stack trace among the suite's output).
    expect(failures.lines.some((l) => /^replica notifications: connection (lost|dropped)/.test(l)), failures.lines.join('\n')).toBe(true);
  });

  it('lands a PR whose run finished while the database was down, without waiting for its lease to lapse', async (t) => {
    const url = await cluster().createDatabase();
    const failures = expectedFailures();
    // A lease far longer than the outage: this replica keeps driving the queue, nothing re-attaches to the run.
    const a = await server(t, url, { sandbox: { testSeconds: 8 }, leaseMs: 120_000, renewMs: 100, log: failures.log });
    await ok(a, 'createQueue', Q);
    await ok(a, 'submitPullRequest', { ...Q, pr: { number: 1 } });
    // The run has started (its test commit is written): the database goes away before it finishes.
    const { testRunId } = (await waitFor(a, 1, (pr) => pr.state === 'testing')) as PrAnswer & { testRunId: string };
    const started = Date.now() + 20_000;
    while (!(await ok(a, 'getMergeQueueTestingDetails', { ...Q, testRunId })).testBranchSha && Date.now() < started) await new Promise((r) => setTimeout(r, 50));
    await cluster().stop();
    try {
      // The run's outcome could not be written: the server says so, once, and keeps it.
      const notYet = () => failures.lines.filter((l) => l.includes('testRunFinished not written yet'));
      const deadline = Date.now() + 30_000;
      while (!notYet().length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(notYet(), failures.lines.join('\n')).toHaveLength(1);
    } finally {
      await cluster().start();
    }
    await waitFor(a, 1, merged, 30_000);
  });
});
