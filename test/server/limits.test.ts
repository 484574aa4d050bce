/**
 * Bounds on what one request may hold (issue 26, "No single request stalls the server"): JSON
 * nesting, integers far past their field's bound, string lengths of the contract, long test names
 * in reports. Attacks are sent the way the issue sent them, over real HTTP to a real server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, REPO_NAMESPACE_MAX } from '../../src/contract/index.js';
import { cutName, MAX_NAME_BYTES } from '../../src/flaky/junit.js';
import { testId } from '../../src/flaky/identity.js';
import type { Source } from '../../src/forge/types.js';
import { repoOwnerProblem } from '../../src/server/routes/repo-bounds.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { call, ok, ORG, Q, REPO, seedValidRequests, SHA1 } from './helpers.js';

const MiB = 1024 * 1024;

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ sandbox: { testSeconds: 3600 } });
  await seedValidRequests(server);
});
afterAll(async () => {
  await server?.close();
});

describe('JSON nesting', () => {
  it(`refuses a 20 MiB body of nested arrays at once, naming the bound of ${MAX_JSON_DEPTH}`, async () => {
    const body = '['.repeat(20 * MiB - 1024);
    const t0 = performance.now();
    const answer = await call(server, 'submitPullRequest', body);
    const ms = performance.now() - t0;
    expect(answer.status).toBe(400);
    expect(answer.text).toBe(
      `body: JSON nested deeper than ${MAX_JSON_DEPTH} levels (arrays and objects); no request needs that many`,
    );
    // Main took 7.8 s in JSON.parse (fuzz.test.ts holds the 200 ms bound under a status probe).
    expect(ms).toBeLessThan(2_000);
  });

  it('refuses nested objects hidden after a long string, and counts no bracket inside a string', async () => {
    const deep = '{"a":'.repeat(MAX_JSON_DEPTH + 1) + '1' + '}'.repeat(MAX_JSON_DEPTH + 1);
    const answer = await call(server, 'getQueue', `{"x":"${'[\\"'.repeat(100_000)}","y":${deep}}`);
    expect(answer.status).toBe(400);
    expect(answer.text).toMatch(/nested deeper than 64/);
    // Brackets in strings are text: a valid request full of them is served.
    const ok200 = await call(server, 'getQueue', { ...Q, note: '[[[[{{{{'.repeat(1000) });
    expect(ok200.status).toBe(200);
  });

  it(`takes ${MAX_JSON_DEPTH} levels: the bound is not off by one`, async () => {
    // 64 levels (the body's object is one): the answer is about the fields, not the depth.
    const inner = '['.repeat(MAX_JSON_DEPTH - 2) + ']'.repeat(MAX_JSON_DEPTH - 2);
    const at = await call(server, 'getQueue', `{"repo":{"host":"github.com","owner":"acme","name":"web"},"targetBranch":"main","x":[${inner}]}`);
    expect(at.status).toBe(200);
    const over = await call(server, 'getQueue', `{"repo":{"host":"github.com","owner":"acme","name":"web"},"targetBranch":"main","x":[[${inner}]]}`);
    expect(over.status).toBe(400);
    expect(over.text).toMatch(/nested deeper than 64/);
  });
});

describe('integers past every bound', () => {
  it('names the field’s own bound for pr.number 1e300, not 2^53 - 1', async () => {
    for (const number of [1e300, '99999999999999999999', 2 ** 53]) {
      const answer = await call(server, 'submitPullRequest', { ...Q, pr: { number } });
      expect(answer.status).toBe(400);
      expect(answer.text).toBe('pr.number: must be at most 4294967295');
    }
    const negative = await call(server, 'submitPullRequest', { ...Q, pr: { number: -1e300 } });
    expect(negative.text).toBe('pr.number: must be at least 0');
    const fraction = await call(server, 'submitPullRequest', { ...Q, pr: { number: 1.5 } });
    expect(fraction.text).toBe('pr.number: must be an integer, got a fraction');
    expect(await ok(server, 'getSubmittedPullRequest', { ...Q, pr: { number: 1 } })).toHaveProperty('state');
  });
});

describe('string bounds of the contract (decisions "Round 3")', () => {
  it('refuses a 10 MB owner at once, naming the field and the bound; 39 characters are taken', async () => {
    for (const owner of ['o'.repeat(10 * MiB), 'o'.repeat(40), 'o'.repeat(REPO_NAMESPACE_MAX + 1)]) {
      const answer = await call(server, 'createQueue', { repo: { ...REPO, owner }, targetBranch: 'main' });
      expect(answer.status).toBe(400);
      expect(answer.text).toBe('repo.owner: must be at most 39 characters');
    }
    await ok(server, 'createQueue', { repo: { ...REPO, owner: 'o'.repeat(39) }, targetBranch: 'main' });
    // What listQueues and the metrics answer stays small (a 10 MB owner made them 10 MB and 70 MB).
    const list = await call(server, 'listQueues', {});
    expect(list.text.length).toBeLessThan(10_000);
    const metrics = await call(server, 'getMergeQueueMetrics', { repo: `${'o'.repeat(40)}/web`, repoHost: 'github.com' });
    expect(metrics.status).toBe(400);
    expect(metrics.text).toBe('repo (its owner): must be at most 39 characters');
  });

  it('bounds repo.host (253), repo.name (100) and branch names (255 bytes) with a 400 naming each', async () => {
    const cases: Array<[string, unknown, string]> = [
      ['getQueue', { ...Q, repo: { ...REPO, host: 'h'.repeat(254) } }, 'repo.host: must be at most 253 characters'],
      ['getQueue', { ...Q, repo: { ...REPO, name: 'n'.repeat(101) } }, 'repo.name: must be at most 100 characters'],
      ['getSubmittedPullRequest', { ...Q, pr: { branch: 'b'.repeat(256) } }, 'pr.branch: must be at most 255 bytes'],
      ['getSubmittedPullRequest', { ...Q, pr: { branch: '\u00e9'.repeat(128) } }, 'pr.branch: must be at most 255 bytes'],
      [
        'uploadTestResults',
        { repo: REPO, org_url_slug: ORG, branch: 'b'.repeat(5 * MiB), sha: SHA1, reports: [{ name: 'r.xml', content: '<testsuite/>' }] },
        'branch: must be at most 255 bytes',
      ],
      ['getMergeQueueTestingDetails', { ...Q, testRunId: 'r'.repeat(5000) }, 'testRunId: must be at most 1024 characters'],
    ];
    for (const [op, body, message] of cases) {
      const answer = await call(server, op as never, body);
      expect(answer.text).toBe(message);
      expect(answer.status).toBe(400);
    }
    expect((await call(server, 'getQueue', { ...Q, repo: { ...REPO, host: 'h'.repeat(253) } })).status).toBe(404);
  });

  it('a forge with longer owners (GitLab namespaces) widens the owner bound to 255 on its hosts only', () => {
    const gitlabLike: Source = {
      ownerMaxLength: (host) => (host === 'gitlab.example' ? REPO_NAMESPACE_MAX : 39),
      getPullRequest: async () => null,
    };
    const owner = 'group/' + 's'.repeat(200);
    expect(repoOwnerProblem(gitlabLike, { repo: { host: 'gitlab.example', owner, name: 'x' } })).toBeNull();
    expect(repoOwnerProblem(gitlabLike, { repo: { host: 'github.com', owner, name: 'x' } })).toBe(
      'repo.owner: must be at most 39 characters',
    );
  });

  it('takes a report with a 1 MB test name: the name is cut to 4 KiB with "…", and the id is derived from the cut name', async () => {
    const long = 'n'.repeat(1024 * 1024);
    const longClass = 'c\u00e9'.repeat(5000);
    const report = (name: string) =>
      `<testsuite name="s"><testcase classname="${longClass}" name="${name}"><failure message="x"/></testcase></testsuite>`;
    const body = { repo: REPO, org_url_slug: ORG, branch: 'main', sha: SHA1, reports: [{ name: 'long.xml', content: report(long) }] };
    const first = await ok(server, 'uploadTestResults', body);
    expect(first.tests).toBe(1);
    const cut = cutName(long);
    expect(cut.endsWith('\u2026')).toBe(true);
    expect(new TextEncoder().encode(cut).length).toBeLessThanOrEqual(MAX_NAME_BYTES);
    const cutClass = cutName(longClass);
    expect(new TextEncoder().encode(cutClass).length).toBeLessThanOrEqual(MAX_NAME_BYTES);
    const id = testId(ORG, REPO, { file: null, classname: cutClass, parent: 's', name: cut, variant: '' });
    const details = await ok(server, 'getTestDetails', { repo: REPO, org_url_slug: ORG, test_id: id });
    expect(details.test.name).toBe(cut);
    expect(details.test.classname).toBe(cutClass);
    // The same long name again is the same test, not a new one.
    const again = await ok(server, 'uploadTestResults', { ...body, sha: 'abcdef12' });
    expect(again.new_tests).toBe(0);
  });
});
