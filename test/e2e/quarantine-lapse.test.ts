/**
 * A quarantine override set `--until` a time is announced when it ends: the real server over HTTP
 * on 127.0.0.1, with a clock the test moves forward, sends one `test_case.quarantining_setting_changed`
 * (the setting it had → UNSPECIFIED, by "Railyard (override ended)", saying when it ended) to a
 * real webhook receiver. Once, with a second server on the same PostgreSQL database and more
 * sweeps racing on the same database; not for the end of an override replaced before it came,
 * but for the end of the new one; not lost when no server ran at the end, not sent again after
 * a restart; and an override set over one that ended unannounced announces that end first.
 */
import { Ajv } from 'ajv';
import { expect, it } from 'vitest';
import { readReports } from '../../src/flaky/ingest.js';
import { GITHUB_PAGES, hostedLinks } from '../../src/forge/shared/web-links.js';
import { LapseSweeper } from '../../src/server/flaky/lapses.js';
import { serverLinks } from '../../src/server/links.js';
import { openStore } from '../../src/store/index.js';
import { ok } from '../server/helpers.js';
import { until as waitUntil } from '../support/forge-e2e.js';
import { cleanupsAfterEach, eachDatabase, serversPerTest, type TestDatabase } from '../support/hooks.js';
import type { TestServer, TestServerOptions } from '../support/server.js';
import { TRUNK_FLAKY_EVENT_SCHEMAS } from '../support/trunk-webhook-schemas.js';
import { tempDir } from '../support/tmp.js';
import { startReceiver, type Received, type Receiver } from '../support/webhook-receiver.js';

const REPO = { host: 'github.com', owner: 'acme', name: 'web' };
const TYPE = 'test_case.quarantining_setting_changed';
const HOUR = 60 * 60 * 1000;
/** The servers look for ended overrides this often in these tests (30 s in `railyard serve`). */
const SWEEP_MS = 50;
/** Tests deliver to 127.0.0.1 over plain HTTP; retries come quickly. */
const LOCAL = {
  allowPrivate: true,
  allowHttp: true,
  retrySchedule: [200, 300, 400],
  timeoutMs: 1000,
  pollMs: 50,
};
/** The person's token, labelled alice: the owner of what they set. */
const TOKENS = { tokens: { 'alice-token': 'local' }, labels: { 'alice-token': 'alice' } };

const validate = new Ajv({ strict: false, validateFormats: false }).compile(TRUNK_FLAKY_EVENT_SCHEMAS[TYPE]);

/** The servers' clock: the real time, plus what the test moved it forward by. */
function clock() {
  let ahead = 0;
  return {
    now: () => Date.now() + ahead,
    forward(ms: number) {
      ahead += ms;
    },
  };
}

/** Waits for what `get` answers, looking every 25 ms (the sweeps run every SWEEP_MS). */
const until = <T>(what: string, get: () => T | Promise<T>) => waitUntil(what, get, 20_000, 25);

const report = `<testsuite name="suite">${['net', 'db']
  .map((t) => `<testcase classname="tests/${t}.test.ts" file="tests/${t}.test.ts" name="${t} works"/>`)
  .join('')}</testsuite>`;

function idOf(name: string): string {
  const read = readReports({
    org: 'local',
    repo: REPO,
    variant: '',
    reports: [{ name: 'junit.xml', content: report }],
  });
  if (!read.ok) throw new Error(read.error);
  return read.results.find((r) => r.name === name)!.id;
}

const NET = idOf('net works');
const DB = idOf('db works');

/**
 * The quarantine events the receiver got for a test, as [previous, updated, actor, reason,
 * timestamp], each once: a delivery repeated with the same webhook-id is the same event (the
 * outbox delivers at least once; a server closed while an attempt is being recorded sends it again
 * after its restart). An event written twice has two webhook-ids and shows twice.
 */
function changes(r: Receiver, testId: string): [string, string, string, string | null, string][] {
  const seen = new Set<string>();
  return r.delivered
    .filter((d) => d.json.type === TYPE && (d.json.test_case as { id: string }).id === testId)
    .filter((d) => {
      const id = String(d.headers['webhook-id']);
      if (seen.has(id)) return false;
      seen.add(id);
      return true;
    })
    .map((d) => {
      const c = d.json.quarantine_setting_changed as {
        previous_quarantining_setting: string;
        updated_quarantining_setting: string;
        actor: { full_name: string };
        reason: string | null;
        timestamp: string;
      };
      return [
        c.previous_quarantining_setting,
        c.updated_quarantining_setting,
        c.actor.full_name,
        c.reason,
        c.timestamp,
      ];
    });
}

/** Where the servers of a test keep their data: its own SQLite data dir, or the test's PostgreSQL database. */
async function place(
  database: () => Promise<Pick<TestServerOptions, 'databaseUrl'>>,
): Promise<{ databaseUrl?: string; dataDir?: string }> {
  const { databaseUrl } = await database();
  return databaseUrl ? { databaseUrl } : { dataDir: await tempDir() };
}

/**
 * Another sweeper on the same database, over a store of its own (another server's, on PostgreSQL;
 * a second connection to the same file, on SQLite): the test runs its sweeps by hand.
 */
async function otherSweeper(
  at: { dataDir?: string; databaseUrl?: string },
  now: () => number,
  cleanup: (fn: () => unknown) => void,
) {
  const store = await openStore(
    at.databaseUrl ? { databaseUrl: at.databaseUrl, poolSize: 2 } : { dataDir: at.dataDir! },
  );
  cleanup(() => store.close());
  const links = serverLinks(hostedLinks(GITHUB_PAGES), () => 'http://127.0.0.1');
  return new LapseSweeper(store.flaky, now, links, SWEEP_MS);
}

async function setup(s: TestServer, r: Receiver) {
  const created = await ok(s, 'createWebhook', { url: r.url });
  r.secrets.push(created.secret as string);
  await ok(s, 'uploadTestResults', {
    repo: REPO,
    org_url_slug: s.org,
    branch: 'main',
    sha: 'a'.repeat(40),
    reports: [{ name: 'junit.xml', content: report }],
  });
}

function quarantine(s: TestServer, testId: string, setting: string, untilMs?: number, reason?: string) {
  return ok(s, 'setTestQuarantine', {
    repo: REPO,
    org_url_slug: s.org,
    test_id: testId,
    setting,
    ...(untilMs === undefined ? {} : { until: new Date(untilMs).toISOString() }),
    ...(reason ? { reason } : {}),
  });
}

const iso = (ms: number) => new Date(ms).toISOString();
const ENDED = 'Railyard (override ended)';

function lapseSuite(database: TestDatabase): void {
  const cleanup = cleanupsAfterEach();
  const server = serversPerTest();

  it('announces an override that ended exactly once, with two servers and more sweeps racing on the database', async () => {
    const r = await startReceiver();
    cleanup(() => r.close());
    const c = clock();
    const at = await place(database);
    const opts = { ...TOKENS, ...at, now: c.now, webhooks: LOCAL, lapseSweepMs: SWEEP_MS };
    const a = await server(opts);
    // PostgreSQL: a second replica, sweeping the same database. (Two servers on one SQLite file
    // are not a deployment; there the sweeps below race on the file.)
    if (at.databaseUrl) await server(opts);
    await setup(a, r);
    const end = Math.ceil((c.now() + 2 * HOUR) / 1000) * 1000;
    await quarantine(a, NET, 'ALWAYS_QUARANTINE', end, 'KAN-9: flaky socket');
    await until('the quarantine event', () => changes(r, NET).length === 1);
    expect(changes(r, NET)).toEqual([
      ['UNSPECIFIED', 'ALWAYS_QUARANTINE', 'alice', 'KAN-9: flaky socket', expect.any(String)],
    ]);

    // PostgreSQL: two more sweepers on the database, swept by hand at once besides the servers'.
    // (SQLite: the server is the file's one writer; its sweeps race with a second connection's in
    // test/store/flaky-lapses.test.ts. A second connection in this thread cannot race it here: its
    // BEGIN would wait, holding the thread, for a transaction that needs the thread to end.)
    const racing = at.databaseUrl
      ? [await otherSweeper(at, c.now, cleanup), await otherSweeper(at, c.now, cleanup)]
      : [];
    const sweepAll = () => Promise.all(racing.map((x) => x.sweep()));
    // Before its end: nothing to announce.
    expect(await sweepAll()).toEqual(racing.map(() => 0));

    c.forward(2 * HOUR);
    const swept = await sweepAll();
    const lapse = await until('the lapse event', () =>
      r.delivered.find(
        (x: Received) =>
          x.json.type === TYPE &&
          (x.json.quarantine_setting_changed as { actor: { full_name: string } }).actor.full_name === ENDED,
      ),
    );
    // A sweep that read the override before another marked it finds it marked: none sends it again.
    for (let i = 0; i < 5; i++) expect(await sweepAll()).toEqual(racing.map(() => 0));
    // The servers' own sweeps, several times over.
    await new Promise((resolve) => setTimeout(resolve, 10 * SWEEP_MS));
    expect(swept.reduce((x, y) => x + y, 0)).toBeLessThanOrEqual(1);
    expect(changes(r, NET)).toEqual([
      ['UNSPECIFIED', 'ALWAYS_QUARANTINE', 'alice', 'KAN-9: flaky socket', expect.any(String)],
      [
        'ALWAYS_QUARANTINE',
        'UNSPECIFIED',
        ENDED,
        `the override ended at ${iso(end)} (set by alice: KAN-9: flaky socket)`,
        iso(end),
      ],
    ]);
    expect(lapse.json).toMatchObject({
      type: TYPE,
      test_case: {
        id: NET,
        name: 'net works',
        file_path: 'tests/net.test.ts',
        status: { value: 'healthy' },
        repository: { html_url: 'https://github.com/acme/web' },
        html_url: 'https://github.com/acme/web/blob/HEAD/tests/net.test.ts',
      },
      quarantine_setting_changed: { actor: { full_name: ENDED, email: '' } },
      railyard: { repository: REPO },
    });
    expect(lapse.verified).toBe(true);
    expect(validate(lapse.json), JSON.stringify(validate.errors)).toBe(true);
    // The outbox holds it once, whichever server wrote it.
    const [endpoint] = (await ok(a, 'listWebhooks', {})).endpoints as { id: string }[];
    const logged = (await ok(a, 'listWebhookDeliveries', { id: endpoint.id })).deliveries as {
      type: string;
    }[];
    expect(logged.filter((l) => l.type === TYPE)).toHaveLength(2);
    // The reads went by the end all along: the test is no longer quarantined.
    const shown = await ok(a, 'getTestDetails', { repo: REPO, org_url_slug: a.org, test_id: NET });
    expect(shown.test.quarantine_override).toMatchObject({
      setting: 'ALWAYS_QUARANTINE',
      until: iso(end),
      expired: true,
    });
  });

  it("sends nothing for the end of an override replaced before it; announces the new one's end, also when no server ran then, and not again after a restart", async () => {
    const r = await startReceiver();
    cleanup(() => r.close());
    const c = clock();
    const at = await place(database);
    const opts = { ...TOKENS, ...at, now: c.now, webhooks: LOCAL, lapseSweepMs: SWEEP_MS };
    let s = await server(opts);
    await setup(s, r);
    const sweeper = await otherSweeper(at, c.now, cleanup);
    const first = Math.ceil((c.now() + HOUR) / 1000) * 1000;
    const second = first + 2 * HOUR;
    await quarantine(s, NET, 'ALWAYS_QUARANTINE', first);
    await quarantine(s, NET, 'NEVER_QUARANTINE', second, 'the fix is in');
    await until('both quarantine events', () => changes(r, NET).length === 2);

    // Past the first end: it was replaced, so nothing ends.
    c.forward(HOUR + 60_000);
    expect(await sweeper.sweep()).toBe(0);
    // Past the second end, with no server running: the next server announces it when it starts.
    await s.close();
    c.forward(2 * HOUR);
    s = await server(opts);
    await until('the lapse event', () => changes(r, NET).length === 3);
    expect(await sweeper.sweep()).toBe(0);
    // A restart finds it announced.
    await s.close();
    s = await server(opts);
    await quarantine(s, DB, 'ALWAYS_QUARANTINE');
    await until('the event after the restart', () => changes(r, DB).length === 1);
    await new Promise((resolve) => setTimeout(resolve, 10 * SWEEP_MS));
    expect(changes(r, NET)).toEqual([
      ['UNSPECIFIED', 'ALWAYS_QUARANTINE', 'alice', null, expect.any(String)],
      ['ALWAYS_QUARANTINE', 'NEVER_QUARANTINE', 'alice', 'the fix is in', expect.any(String)],
      [
        'NEVER_QUARANTINE',
        'UNSPECIFIED',
        ENDED,
        `the override ended at ${iso(second)} (set by alice: the fix is in)`,
        iso(second),
      ],
    ]);
  });

  it('an override set over one that ended unannounced announces that end first, in order; its own end is announced in turn', async () => {
    const r = await startReceiver();
    cleanup(() => r.close());
    const c = clock();
    // No sweep after the first (the server's, at its start) while the test runs.
    const at = await place(database);
    const opts = { ...TOKENS, ...at, now: c.now, webhooks: LOCAL, lapseSweepMs: 3_600_000 };
    let s = await server(opts);
    await setup(s, r);
    const end = Math.ceil((c.now() + HOUR) / 1000) * 1000;
    await quarantine(s, NET, 'ALWAYS_QUARANTINE', end, 'KAN-9');
    c.forward(2 * HOUR);
    await quarantine(s, NET, 'NEVER_QUARANTINE', undefined, 'KAN-10');
    await until('three events', () => changes(r, NET).length === 3);
    expect(changes(r, NET)).toEqual([
      ['UNSPECIFIED', 'ALWAYS_QUARANTINE', 'alice', 'KAN-9', expect.any(String)],
      [
        'ALWAYS_QUARANTINE',
        'UNSPECIFIED',
        ENDED,
        `the override ended at ${iso(end)} (set by alice: KAN-9)`,
        iso(end),
      ],
      ['UNSPECIFIED', 'NEVER_QUARANTINE', 'alice', 'KAN-10', expect.any(String)],
    ]);
    // The override set now has an end of its own, announced when it comes (by the sweep a server
    // makes when it starts: this one's next is an hour away).
    const again = Math.ceil((c.now() + HOUR) / 1000) * 1000;
    await quarantine(s, NET, 'ALWAYS_QUARANTINE', again);
    await until('four events', () => changes(r, NET).length === 4);
    c.forward(2 * HOUR);
    await s.close();
    s = await server(opts);
    await until('five events', () => changes(r, NET).length === 5);
    expect(changes(r, NET).slice(3)).toEqual([
      ['NEVER_QUARANTINE', 'ALWAYS_QUARANTINE', 'alice', null, expect.any(String)],
      [
        'ALWAYS_QUARANTINE',
        'UNSPECIFIED',
        ENDED,
        `the override ended at ${iso(again)} (set by alice)`,
        iso(again),
      ],
    ]);
  });
}

// SQLite and PostgreSQL side by side: each copy mostly waits for sweeps and deliveries.
eachDatabase(lapseSuite, { sideBySide: true });
