/**
 * Trust (issue 12, decisions "Trust"): nothing lands twice, only branches are targets, repositories
 * belong to one organisation, page tokens are opaque per organisation. Real server over HTTP, real
 * git repositories, SQLite and PostgreSQL.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { routes, type OperationName } from '../../src/contract/index.js';
import { newQueueModel } from '../../src/engine/index.js';
import { migrations } from '../../src/store/migrations/index.js';
import { SQLITE_FILE } from '../../src/store/index.js';
import { createRepo, type FixtureRepo } from '../forge/fixture.js';
import { railyard, unwrapOclif } from '../support/cli.js';
import { eachDatabase } from '../support/hooks.js';
import { startTestServer, type TestServer, type TestServerOptions } from '../support/server.js';
import { call, ok, REPO } from './helpers.js';

const Q = { repo: REPO, targetBranch: 'main' };
const OTHER_REPO = { host: 'github.com', owner: 'acme', name: 'api' };
const TWO_ORGS = { 'token-a': 'alpha', 'token-b': 'beta' };

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function server(opts: TestServerOptions = {}): Promise<TestServer> {
  const s = await startTestServer({ ...opts, ...(await database()) });
  cleanups.push(() => s.close());
  return s;
}

/** A data dir that outlives one server (for restarts), removed after the test. */
async function dataDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'railyard-trust-'));
  cleanups.unshift(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function repo(
  location = { host: 'github.com', owner: 'acme', name: 'web' },
  root?: string,
): Promise<FixtureRepo> {
  const r = await createRepo({ location, checks: { test: 'true' }, root });
  cleanups.push(() => r.cleanup());
  return r;
}

async function waitFor(
  s: TestServer,
  q: object,
  prNumber: number,
  state: string,
  token?: string,
): Promise<unknown> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const pr = await ok(s, 'getSubmittedPullRequest', { ...q, pr: { number: prNumber } }, token);
    if (pr.state === state) return pr;
    if (['merged', 'failed', 'cancelled'].includes(pr.state) || Date.now() > deadline) {
      throw new Error(`#${prNumber} is ${pr.state} (${pr.stateReason ?? ''}), not ${state}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

function junit(names: string[], failing = false): string {
  const cases = names
    .map((n) =>
      failing
        ? `<testcase name="${n}" classname="suite"><failure message="boom">boom</failure></testcase>`
        : `<testcase name="${n}" classname="suite"/>`,
    )
    .join('');
  return `<?xml version="1.0"?><testsuites><testsuite name="suite">${cases}</testsuite></testsuites>`;
}

const upload = (repo: typeof REPO, org: string, names: string[], failing = false) => ({
  repo,
  org_url_slug: org,
  branch: 'main',
  sha: 'a'.repeat(40),
  started_at: new Date().toISOString(),
  reports: [{ name: 'junit.xml', content: junit(names, failing) }],
});

/** Every test of stored state, once per database. */
function storedStateSuite(): void {
  describe('nothing lands twice', () => {
    it.each(['squash', 'merge_commit'] as const)(
      'git, %s: a PR the queue merged is refused on resubmit and main keeps one commit for it',
      async (method) => {
        const r = await repo();
        r.openPr(1, { 'one.txt': '1\n' }, { title: 'One' });
        const s = await server({ gitRoot: r.root });
        await ok(s, 'createQueue', Q);
        await ok(s, 'updateQueue', { ...Q, mergeMethod: method });
        await ok(s, 'submitPullRequest', { ...Q, pr: { number: 1 } });
        await waitFor(s, Q, 1, 'merged');
        const before = r.log('main').map((c) => c.sha);

        const again = await call(s, 'submitPullRequest', { ...Q, pr: { number: 1 } });
        expect(again.status).toBe(400);
        expect(again.headers.get('content-type')).toMatch(/^text\/plain/);
        expect(again.text).toMatch(/^pull request #1 is already merged: /);
        // Nothing is queued and nothing lands, also after the queue had time to act.
        await new Promise((res) => setTimeout(res, 800));
        expect(r.log('main').map((c) => c.sha)).toEqual(before);
        expect((await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: 1 } })).state).toBe('merged');
      },
    );

    it('git: a PR merged outside the queue, or whose changes are already in the target, is refused in a new queue too', async () => {
      const r = await repo();
      const head = r.openPr(1, { 'one.txt': '1\n' }, { title: 'One' });
      r.openPr(2, { 'two.txt': '2\n' }, { title: 'Two' });
      r.openPr(3, { 'three.txt': '3\n' }, { title: 'Three' });
      // #1 fast-forwarded into main by hand; #2 squashed into main by hand (same change, other commit).
      r.git(['update-ref', 'refs/heads/main', head]);
      r.commitOn('main', { 'two.txt': '2\n' }, 'Two (squashed by hand)');
      const s = await server({ gitRoot: r.root });
      await ok(s, 'createQueue', Q);

      const one = await call(s, 'submitPullRequest', { ...Q, pr: { number: 1 } });
      expect(one.status).toBe(400);
      expect(one.text).toBe(
        `pull request #1 is already merged: its head ${head.slice(0, 12)} is already in main`,
      );
      const two = await call(s, 'submitPullRequest', { ...Q, pr: { number: 2 } });
      expect(two.status).toBe(400);
      expect(two.text).toBe('pull request #2 is already merged: its changes are already in main');
      // A PR with something new still goes in.
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 3 } });
    });

    it('sandbox: a merged PR is refused on resubmit (the Action merged #501 twice)', async () => {
      const dir = await dataDir();
      const s = await server({ sandbox: { testSeconds: 0 }, dataDir: dir });
      await ok(s, 'createQueue', Q);
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 501 } });
      await waitFor(s, Q, 501, 'merged');
      const again = await call(s, 'submitPullRequest', { ...Q, pr: { number: 501 } });
      expect(again.status).toBe(400);
      expect(again.text).toMatch(
        /^pull request #501 is already merged: the main queue merged it at \d{4}-\d\d-\d\dT/,
      );
      // Also through another queue of the same repository, and after a restart.
      await ok(s, 'createQueue', { ...Q, targetBranch: 'develop' });
      expect(
        (await call(s, 'submitPullRequest', { ...Q, targetBranch: 'develop', pr: { number: 501 } })).status,
      ).toBe(400);
      await s.close();
      const restarted = await server({ dataDir: dir, tokens: { [s.token]: s.org } });
      expect((await call(restarted, 'submitPullRequest', { ...Q, pr: { number: 501 } })).status).toBe(400);
    });

    it('sandbox: deleting and re-creating the queue keeps its history, and a PR it merged stays merged', async () => {
      const s = await server({ sandbox: { testSeconds: 0 } });
      await ok(s, 'createQueue', Q);
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 1 } });
      await waitFor(s, Q, 1, 'merged');
      // Paused, so that #2 (tests take no time here) cannot merge before it is cancelled.
      await ok(s, 'updateQueue', { ...Q, state: 'paused' });
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 2 } });
      await ok(s, 'cancelPullRequest', { ...Q, pr: { number: 2 } });
      await ok(s, 'deleteQueue', Q);
      expect((await call(s, 'getQueue', Q)).status).toBe(404);
      await ok(s, 'createQueue', { ...Q, concurrency: 3 });
      // The new settings, none of the old PRs in the queue, but their story is still there.
      const queue = await ok(s, 'getQueue', Q);
      expect(queue).toMatchObject({ concurrency: 3, enqueuedPullRequests: [] });
      const one = await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: 1 } });
      expect(one.state).toBe('merged');
      // Merged through the deleted queue: never again (it used to be accepted and sit not_ready forever).
      const again = await call(s, 'submitPullRequest', { ...Q, pr: { number: 1 } });
      expect(again.status).toBe(400);
      expect(again.text).toMatch(/^pull request #1 is already merged: the main queue merged it at /);
      // A cancelled one may come back, as before.
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 2 } });
      await waitFor(s, Q, 2, 'merged');
    });
  });

  describe('only branches are targets', () => {
    const BAD: [string, RegExp][] = [
      ['refs/tags/v1', /not a ref: drop the "refs\/\.\.\." prefix/],
      ['refs/pull/8/head', /not a ref/],
      ['main~1', /must not contain "~"/],
      ['-main', /must not start with "-"/],
      ['a..b', /must not contain "\.\."/],
      ['main.lock', /ending in "\.lock"/],
    ];

    it('createQueue refuses ref names and revisions with 400 naming the rule', async () => {
      const s = await server();
      for (const [branch, rule] of BAD) {
        const a = await call(s, 'createQueue', { repo: REPO, targetBranch: branch });
        expect(a.status, branch).toBe(400);
        expect(a.text, branch).toMatch(/^targetBranch: branch name ".*" is not valid: it /);
        expect(a.text, branch).toMatch(rule);
      }
    });

    it('every operation that takes a targetBranch refuses an invalid one with 400 (before looking for the queue)', async () => {
      const s = await server();
      const ops = (Object.keys(routes) as OperationName[]).filter((op) => {
        const schema = routes[op].request as { shape?: Record<string, unknown> } | undefined;
        return schema?.shape !== undefined && 'targetBranch' in schema.shape;
      });
      expect(ops.length).toBeGreaterThanOrEqual(10);
      for (const op of ops) {
        const body = {
          repo: REPO,
          targetBranch: 'refs/tags/v1',
          pr: { number: 1, sha: 'a'.repeat(40) },
          testRunId: 'x',
          impactedTargets: [],
        };
        const get = { repoHost: 'github.com', repo: 'acme/web', targetBranch: 'refs/tags/v1', testRunId: 'x', check: 'test' };
        const a = await call(s, op, routes[op].method === 'GET' ? get : body);
        expect(a.status, op).toBe(400);
        expect(a.text, op).toMatch(/targetBranch: branch name "refs\/tags\/v1" is not valid/);
      }
    });

    it('git: a PR whose base is no branch name is refused on submit; the tag it names never moves', async () => {
      const r = await repo();
      r.git(['tag', 'v1', 'main']);
      const tag = r.headOf('refs/tags/v1');
      r.openPr(1, { 'one.txt': '1\n' }, { title: 'One' });
      r.setPrBase(1, 'refs/tags/v1');
      r.openPr(2, { 'two.txt': '2\n' }, { title: 'Two' });
      r.setPrBase(2, 'main~1');
      const s = await server({ gitRoot: r.root });
      await ok(s, 'createQueue', Q);
      const one = await call(s, 'submitPullRequest', { ...Q, pr: { number: 1 } });
      expect(one.status).toBe(400);
      expect(one.text).toBe(
        'pull request #1: its base branch name "refs/tags/v1" is not valid: it must be a branch name, not a ref: drop the "refs/..." prefix (e.g. main)',
      );
      const two = await call(s, 'submitPullRequest', { ...Q, pr: { number: 2 } });
      expect(two.status).toBe(400);
      expect(two.text).toMatch(
        /^pull request #2: its base branch name "main~1" is not valid: it must not contain "~"$/,
      );
      expect(r.headOf('refs/tags/v1')).toBe(tag);
    });
  });

  describe('repositories belong to organisations', () => {
    it('sandbox: the first organisation to create a queue owns the repository; the other gets 404 everywhere, also after a restart', async () => {
      const dir = await dataDir();
      const s = await server({ tokens: TWO_ORGS, dataDir: dir });
      await ok(s, 'createQueue', Q, 'token-a');
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 1 } }, 'token-a');

      const create = await call(s, 'createQueue', Q, { token: 'token-b' });
      expect(create.status).toBe(404);
      expect(create.text).toBe('repo: no repository acme/web for the token\'s organisation "beta"');
      // Another branch of the same repository is the same repository.
      expect(
        (await call(s, 'createQueue', { ...Q, targetBranch: 'develop' }, { token: 'token-b' })).status,
      ).toBe(404);
      for (const [op, body] of [
        ['getQueue', Q],
        ['submitPullRequest', { ...Q, pr: { number: 1 } }],
        ['getSubmittedPullRequest', { ...Q, pr: { number: 1 } }],
        ['cancelPullRequest', { ...Q, pr: { number: 1 } }],
        ['listPullRequests', Q],
        ['getMergeQueueMetrics', { repo: 'acme/web', repoHost: 'github.com' }],
      ] as const) {
        expect((await call(s, op, body, { token: 'token-b' })).status, op).toBe(404);
      }
      // Metrics of beta never mention alpha's queue.
      expect((await call(s, 'getMergeQueueMetrics', {}, { token: 'token-b' })).text).not.toMatch(/acme/);

      // Flaky-test data is per organisation (issue 26): beta's uploads of acme/web are its own,
      // and claim nothing, so alpha can still create a queue for a repository beta uploaded first.
      await ok(s, 'uploadTestResults', upload(REPO, 'beta', ['t1']), 'token-b');
      await ok(s, 'uploadTestResults', upload(OTHER_REPO, 'beta', ['t1']), 'token-b');
      await ok(s, 'createQueue', { repo: OTHER_REPO, targetBranch: 'main' }, 'token-a');
      expect(
        (await call(s, 'createQueue', { repo: OTHER_REPO, targetBranch: 'main' }, { token: 'token-b' })).status,
      ).toBe(404);

      // Ownership is stored: the same after a restart.
      await s.close();
      const again = await server({ dataDir: dir, tokens: TWO_ORGS });
      expect((await call(again, 'createQueue', Q, { token: 'token-b' })).status).toBe(404);
      expect(
        (await call(again, 'createQueue', { repo: OTHER_REPO, targetBranch: 'main' }, { token: 'token-b' }))
          .status,
      ).toBe(404);
      expect((await ok(again, 'getQueue', Q, 'token-a')).enqueuedPullRequests).toHaveLength(1);
    });

    it('git root shared by two organisations: the other one can neither create a queue for nor land a PR in the repository', async () => {
      const r = await repo();
      r.openPr(1, { 'one.txt': '1\n' }, { title: 'One' });
      const s = await server({ gitRoot: r.root, tokens: TWO_ORGS });
      await ok(s, 'createQueue', Q, 'token-a');
      await ok(s, 'updateQueue', { ...Q, state: 'paused' }, 'token-a');
      const before = r.headOf('main');
      expect((await call(s, 'createQueue', Q, { token: 'token-b' })).status).toBe(404);
      expect(
        (await call(s, 'submitPullRequest', { ...Q, pr: { number: 1 } }, { token: 'token-b' })).status,
      ).toBe(404);
      expect((await call(s, 'getQueue', Q, { token: 'token-b' })).status).toBe(404);
      expect(r.headOf('main')).toBe(before);
    });

    it('--org-repos pins repositories up front: the pinned organisation owns them even before it uses them', async () => {
      const a = await repo({ host: 'github.com', owner: 'acme', name: 'web' });
      await repo({ host: 'github.com', owner: 'globex', name: 'web' }, a.root);
      const s = await server({ gitRoot: a.root, tokens: TWO_ORGS, orgRepos: ['beta=github.com/acme/*'] });
      // alpha comes first but beta holds every acme repository.
      const first = await call(s, 'createQueue', Q, { token: 'token-a' });
      expect(first.status).toBe(404);
      await ok(s, 'createQueue', Q, 'token-b');
      expect(
        (await call(s, 'createQueue', { repo: OTHER_REPO, targetBranch: 'main' }, { token: 'token-a' })).status,
      ).toBe(404);
      // Repositories no pin matches go to whoever comes first.
      await ok(
        s,
        'createQueue',
        { repo: { host: 'github.com', owner: 'globex', name: 'web' }, targetBranch: 'main' },
        'token-a',
      );
    });
  });

  describe('page tokens', () => {
    it('are opaque, bound to the organisation: another organisation’s token or an edited one is refused with 400', async () => {
      const s = await server({ tokens: TWO_ORGS });
      const names = ['t1', 't2', 't3'];
      await ok(s, 'uploadTestResults', upload(REPO, 'alpha', names, true), 'token-a');
      await ok(s, 'uploadTestResults', upload(OTHER_REPO, 'beta', names, true), 'token-b');
      const window = {
        start_time: new Date(Date.now() - 3_600_000).toISOString(),
        end_time: new Date(Date.now() + 3_600_000).toISOString(),
      };
      const list = (repo: typeof REPO, org: string, token: string, page_token = '') =>
        call(
          s,
          'listFailingTests',
          { repo, org_url_slug: org, ...window, page_query: { page_size: 1, page_token } },
          { token },
        );

      const first = (await list(REPO, 'alpha', 'token-a')).json;
      const next = first.page.next_page_token as string;
      expect(next).not.toBe('');
      // Nothing readable inside: no JSON, no sequence number.
      const inside = Buffer.from(next, 'base64url').toString('latin1');
      // (Ciphertext bytes may be any byte, `{` or `"` included: look for structure, not characters.)
      expect(inside).not.toMatch(/"[a-z_]{1,20}"\s*:/i);
      expect(() => JSON.parse(inside)).toThrow();
      // It pages for alpha ...
      const second = (await list(REPO, 'alpha', 'token-a', next)).json;
      expect(second.page.page_index).toBe(1);
      expect(second.tests[0].name).not.toBe(first.tests[0].name);
      // ... and the same page gets the same token.
      expect((await list(REPO, 'alpha', 'token-a')).json.page.next_page_token).toBe(next);
      // beta cannot use it, even on its own repository.
      const stolen = await list(OTHER_REPO, 'beta', 'token-b', next);
      expect(stolen.status).toBe(400);
      expect(stolen.text).toBe('page_query.page_token: not a page token this server gave to this organisation');
      // An edited token is refused too.
      const edited = next.slice(0, -2) + (next.endsWith('AA') ? 'BA' : 'AA');
      expect((await list(REPO, 'alpha', 'token-a', edited)).status).toBe(400);
      // The tokens main gave out before (plain base64 JSON cursors) are not accepted any more.
      const plain = Buffer.from(JSON.stringify({ i: 1, a: 1 })).toString('base64url');
      expect((await list(REPO, 'alpha', 'token-a', plain)).status).toBe(400);
    });
  });
}

const database = eachDatabase(storedStateSuite);

describe('railyard serve --org-repos', () => {
  it('refuses a malformed value or two organisations for one repository before starting (exit 2)', async () => {
    const home = await dataDir();
    const env = { PATH: process.env.PATH ?? '', HOME: home, NO_COLOR: '1' };
    const serve = (...pins: string[]) =>
      railyard(
        [
          'serve',
          '--sandbox',
          '--port',
          '0',
          '--data-dir',
          join(home, 'data'),
          ...pins.flatMap((p) => ['--org-repos', p]),
        ],
        env,
      );
    const malformed = await serve('acme=github.com/acme');
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toMatch(/--org-repos: expected ORG=host\/owner\/name/);
    const overlapping = await serve('acme=github.com/acme/*', 'globex=*/acme/web');
    expect(overlapping.code).toBe(2);
    // oclif wraps long messages: compare with the line breaks folded.
    expect(unwrapOclif(overlapping.stderr)).toMatch(
      /acme=github\.com\/acme\/\* and globex=\*\/acme\/web both match the same repositories/,
    );
  });
});

describe('migrating to repository owners (004)', () => {
  it('gives each repository to the organisation with its earliest queue or upload; the later one gets 404', async () => {
    const dir = await dataDir();
    const file = join(dir, SQLITE_FILE);
    const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new Database(file) }) });
    const { error } = await new Migrator({
      db,
      provider: { getMigrations: async () => migrations },
    }).migrateTo('003_flaky_results');
    await db.destroy();
    if (error) throw error;
    const sqlite = new Database(file);
    const insert = (table: string, row: Record<string, unknown>) =>
      sqlite
        .prepare(
          `INSERT INTO ${table} (${Object.keys(row).join(', ')}) VALUES (${Object.keys(row)
            .map((k) => `@${k}`)
            .join(', ')})`,
        )
        .run(row);
    for (const org of ['alpha', 'beta']) insert('organisations', { slug: org, created_at: 1 });
    const queue = (id: string, org: string, name: string, at: number) =>
      insert('queues', {
        id,
        org_slug: org,
        repo_host: 'github.com',
        repo_owner: 'acme',
        repo_name: name,
        branch: 'main',
        config: JSON.stringify(newQueueModel('main').config),
        next_seq: 1,
        created_at: at,
        updated_at: at,
      });
    // web: beta's queue came first, alpha's later. api: alpha's test upload came before beta's queue.
    queue('q1', 'alpha', 'web', 2000);
    queue('q2', 'beta', 'web', 1000);
    queue('q3', 'beta', 'api', 3000);
    insert('flaky_repositories', {
      id: 'r1',
      org_slug: 'alpha',
      repo_key: 'github.com/acme/api',
      host: 'github.com',
      owner: 'acme',
      name: 'api',
      settings: '{}',
      codeowners: null,
      created_at: 2500,
      updated_at: 2500,
    });
    sqlite.close();

    const s = await server({ dataDir: dir, tokens: TWO_ORGS });
    expect((await call(s, 'getQueue', Q, { token: 'token-a' })).status).toBe(404);
    expect((await call(s, 'getQueue', Q, { token: 'token-b' })).status).toBe(200);
    const api = { repo: OTHER_REPO, targetBranch: 'main' };
    expect((await call(s, 'getQueue', api, { token: 'token-b' })).status).toBe(404);
    expect((await call(s, 'getMergeQueueMetrics', {}, { token: 'token-b' })).text).not.toMatch(/acme\/api/);
    expect((await call(s, 'createQueue', api, { token: 'token-a' })).status).toBe(200);
  });
});
