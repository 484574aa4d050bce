/**
 * Trust, second pass (issue 26): what a token of one organisation could still learn or plant.
 * Links only to http(s) (a `javascript:` ticket template), repositories of the git root that are
 * symlinks to another owner's, and repository ownership that must not show through the answers.
 * Real server over HTTP, real git repositories.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TICKET_URL_TEMPLATE_MAX } from '../../src/contract/index.js';
import { createRepo, type FixtureRepo } from '../forge/fixture.js';
import { startTestServer, type TestServer, type TestServerOptions } from '../support/server.js';
import { call, ok, REPO } from './helpers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function server(opts: TestServerOptions = {}): Promise<TestServer> {
  const s = await startTestServer(opts);
  cleanups.push(() => s.close());
  return s;
}

async function repo(location: { host: string; owner: string; name: string }, root?: string): Promise<FixtureRepo> {
  const r = await createRepo({ location, checks: { test: 'true' }, root });
  cleanups.push(() => r.cleanup());
  return r;
}

const junit = (names: string[]) =>
  `<?xml version="1.0"?><testsuites><testsuite name="s">${names.map((n) => `<testcase name="${n}" classname="c"/>`).join('')}</testsuite></testsuites>`;

describe('ticket links are http(s) only', () => {
  it('updateRepositorySettings refuses a javascript:, data: or relative ticket_url_template with 400 naming the field, and keeps the old one', async () => {
    const s = await server();
    const key = { repo: REPO, org_url_slug: s.org };
    await ok(s, 'uploadTestResults', {
      ...key,
      branch: 'main',
      sha: 'a'.repeat(40),
      reports: [{ name: 'junit.xml', content: junit(['t1']) }],
    });
    await ok(s, 'updateRepositorySettings', { ...key, settings: { ticket_url_template: 'https://jira.example.com/browse/{id}' } });
    for (const bad of [
      'javascript:alert(document.cookie)//{id}',
      'JavaScript:alert(1)//{id}',
      ' javascript:alert(1)//{id}',
      'data:text/html,<script>alert(1)</script>{id}',
      'vbscript:msgbox({id})',
      '//evil.example/{id}',
      '/browse/{id}',
    ]) {
      const r = await call(s, 'updateRepositorySettings', { ...key, settings: { ticket_url_template: bad } });
      expect(r.status, bad).toBe(400);
      expect(r.text, bad).toBe(
        'settings.ticket_url_template: must be an http:// or https:// URL, e.g. https://jira.example.com/browse/{id}',
      );
    }
    const noId = await call(s, 'updateRepositorySettings', { ...key, settings: { ticket_url_template: 'https://jira.example.com/' } });
    expect(noId.status).toBe(400);
    expect(noId.text).toBe('settings.ticket_url_template: must contain {id} (where the ticket id goes)');

    const settings = await ok(s, 'getRepositorySettings', key);
    expect(settings.ticket_url_template).toBe('https://jira.example.com/browse/{id}');
    // http:// stays possible (an intranet tracker).
    await ok(s, 'updateRepositorySettings', { ...key, settings: { ticket_url_template: 'http://tracker.intranet/{id}' } });
  });
});

describe('free-text settings are bounded', () => {
  it('refuses an over-long ticket_url_template (and other free text of the settings) with 400 naming the field and the bound, keeping the old value', async () => {
    const s = await server();
    const key = { repo: REPO, org_url_slug: s.org };
    await ok(s, 'updateRepositorySettings', { ...key, settings: { ticket_url_template: 'https://jira.example.com/browse/{id}' } });
    // Every link the dashboard draws for every test of the repository would carry it.
    for (const length of [2049, 10_000_000]) {
      const long = `https://jira.example.com/${'a'.repeat(length - 'https://jira.example.com/{id}'.length)}{id}`;
      expect(long).toHaveLength(length);
      const r = await call(s, 'updateRepositorySettings', { ...key, settings: { ticket_url_template: long } });
      expect(r.status).toBe(400);
      expect(r.text).toBe(`settings.ticket_url_template: must be at most ${TICKET_URL_TEMPLATE_MAX} characters`);
    }
    const atBound = `https://jira.example.com/${'a'.repeat(2048 - 'https://jira.example.com/{id}'.length)}{id}`;
    await ok(s, 'updateRepositorySettings', { ...key, settings: { ticket_url_template: atBound } });
    expect((await ok(s, 'getRepositorySettings', key)).ticket_url_template).toBe(atBound);

    const glob = await call(s, 'updateRepositorySettings', { ...key, settings: { failure_rate: { branches: ['x'.repeat(1025)] } } });
    expect(glob.status).toBe(400);
    expect(glob.text).toBe('settings.failure_rate.branches.0: must be at most 1024 characters');

    await ok(s, 'createQueue', { repo: REPO, targetBranch: 'main' });
    const label = await call(s, 'updateQueue', { repo: REPO, targetBranch: 'main', enqueueingLabel: 'x'.repeat(1025) });
    expect(label.status).toBe(400);
    expect(label.text).toBe('enqueueingLabel: must be at most 1024 characters');
    const status = await call(s, 'updateQueue', { repo: REPO, targetBranch: 'main', requiredStatuses: ['ci', 'x'.repeat(1025)] });
    expect(status.status).toBe(400);
    expect(status.text).toBe('requiredStatuses.1: must be at most 1024 characters');
  });
});

describe('repositories of the git root are places of their own', () => {
  const ACME = { host: 'github.com', owner: 'acme', name: 'web' };
  const TWO_ORGS = { 'token-a': 'alpha', 'token-b': 'beta' };
  const pins = ['alpha=github.com/acme/*', 'beta=github.com/evil/*'];

  /** acme/web with PR #7 (pushed by the attacker through the link), beta's link planted by `plant`. */
  async function attack(plant: (root: string) => void) {
    const acme = await repo(ACME);
    acme.openPr(7, { 'evil.txt': 'landed by another organisation\n' }, { title: 'Evil' });
    plant(acme.root);
    const before = acme.headOf('main');
    const s = await server({ gitRoot: acme.root, tokens: TWO_ORGS, orgRepos: pins, tickMs: 50, pollMs: 50 });
    return { acme, s, before };
  }

  it.each([
    ['a symlinked repository (evil/web.git -> ../acme/web.git)', (root: string) => {
      mkdirSync(join(root, 'github.com', 'evil'));
      symlinkSync('../acme/web.git', join(root, 'github.com', 'evil', 'web.git'));
    }],
    ['a symlinked owner directory (evil -> acme)', (root: string) => {
      symlinkSync('acme', join(root, 'github.com', 'evil'));
    }],
    ['an absolute symlink to the repository', (root: string) => {
      mkdirSync(join(root, 'github.com', 'evil'));
      symlinkSync(join(root, 'github.com', 'acme', 'web.git'), join(root, 'github.com', 'evil', 'web.git'));
    }],
  ])('%s: the other organisation cannot submit or land a PR in acme/web', async (_what, plant) => {
    const { acme, s, before } = await attack(plant);
    const EVIL = { repo: { ...ACME, owner: 'evil' }, targetBranch: 'main' };
    await ok(s, 'createQueue', EVIL, 'token-b');
    const submit = await call(s, 'submitPullRequest', { ...EVIL, pr: { number: 7 } }, { token: 'token-b' });
    expect(submit.status).toBe(404);
    // The answer does not say where the link points.
    expect(submit.text).not.toMatch(/acme/);
    // Give the queue every chance to act: nothing lands in acme/web.
    await new Promise((r) => setTimeout(r, 1000));
    expect(acme.headOf('main')).toBe(before);
    expect(acme.read('main', 'evil.txt')).toBeNull();
  });

  it('a repository whose refs are a symlink into another owner\'s repository is refused too', async () => {
    const { acme, s, before } = await attack((root) => {
      const evil = join(root, 'github.com', 'evil', 'web.git');
      mkdirSync(evil, { recursive: true });
      execFileSync('git', ['init', '-q', '--bare', evil]);
      rmSync(join(evil, 'refs'), { recursive: true });
      symlinkSync('../../acme/web.git/refs', join(evil, 'refs'));
      rmSync(join(evil, 'objects'), { recursive: true });
      symlinkSync('../../acme/web.git/objects', join(evil, 'objects'));
    });
    const EVIL = { repo: { ...ACME, owner: 'evil' }, targetBranch: 'main' };
    await ok(s, 'createQueue', EVIL, 'token-b');
    expect((await call(s, 'submitPullRequest', { ...EVIL, pr: { number: 7 } }, { token: 'token-b' })).status).toBe(404);
    await new Promise((r) => setTimeout(r, 500));
    expect(acme.headOf('main')).toBe(before);
  });

  it('the repository itself still works for its owner', async () => {
    const { acme, s } = await attack((root) => {
      mkdirSync(join(root, 'github.com', 'evil'));
      symlinkSync('../acme/web.git', join(root, 'github.com', 'evil', 'web.git'));
    });
    const Q = { repo: ACME, targetBranch: 'main' };
    await ok(s, 'createQueue', Q, 'token-a');
    await ok(s, 'submitPullRequest', { ...Q, pr: { number: 7 } }, 'token-a');
    const deadline = Date.now() + 30_000;
    for (;;) {
      const pr = await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: 7 } }, 'token-a');
      if (pr.state === 'merged') break;
      if (Date.now() > deadline || pr.state === 'failed') throw new Error(`#7 is ${pr.state} (${pr.stateReason ?? ''})`);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(acme.read('main', 'evil.txt')).toBe('landed by another organisation\n');
  });
});

describe('whether another organisation uses a repository does not show', () => {
  const TWO_ORGS = { 'token-a': 'alpha', 'token-b': 'beta' };
  const USED = { host: 'github.com', owner: 'acme', name: 'web' };
  const UNUSED = { host: 'github.com', owner: 'acme', name: 'unused' };
  const TEST_ID = '6f1b9e9e-8a43-5d2c-9b1a-0c9e3b1d2f11';

  const probes = (repo: typeof USED): [Parameters<typeof call>[1], Record<string, unknown>][] => {
    const flaky = { repo, org_url_slug: 'beta' };
    const now = Date.now();
    const window = { start_time: new Date(now - 3_600_000).toISOString(), end_time: new Date(now + 3_600_000).toISOString() };
    return [
      ['listFailingTests', { ...flaky, ...window, page_query: { page_size: 10, page_token: '' } }],
      ['listUnhealthyTests', { ...flaky, status: 'BROKEN', page_query: { page_size: 10 } }],
      ['listQuarantinedTests', { ...flaky, page_query: { page_size: 10 } }],
      ['getRepositorySettings', flaky],
      ['getTestDetails', { ...flaky, test_id: TEST_ID }],
      ['checkQuarantine', { ...flaky, test_ids: [TEST_ID] }],
      ['getTestFailureHistory', { ...flaky, test_id: TEST_ID, days: 7 }],
      ['linkTicketToTestCase', { repo, test_case_id: TEST_ID, external_ticket_id: 'X-1' }],
      ['getQueue', { repo, targetBranch: 'main' }],
      ['listPullRequests', { repo, targetBranch: 'main' }],
      ['getSubmittedPullRequest', { repo, targetBranch: 'main', pr: { number: 1 } }],
      ['getMergeQueueMetrics', { repo: `${repo.owner}/${repo.name}`, repoHost: repo.host }],
      ['listQueues', { repo }],
    ];
  };

  it('every read of a repository another organisation uses answers exactly as one nobody uses (status and body); so do test uploads', async () => {
    const s = await server({ tokens: TWO_ORGS });
    // alpha uses acme/web: a queue, a PR, test results with a failure, settings.
    await ok(s, 'createQueue', { repo: USED, targetBranch: 'main' }, 'token-a');
    await ok(s, 'submitPullRequest', { repo: USED, targetBranch: 'main', pr: { number: 1 } }, 'token-a');
    const failing = '<testsuite name="s"><testcase name="t" classname="c"><failure message="x"/></testcase></testsuite>';
    const report = (repo: typeof USED, org: string) => ({ repo, org_url_slug: org, branch: 'main', sha: 'a'.repeat(40), reports: [{ name: 'j.xml', content: failing }] });
    await ok(s, 'uploadTestResults', report(USED, 'alpha'), 'token-a');
    await ok(s, 'updateRepositorySettings', { repo: USED, org_url_slug: 'alpha', settings: { quarantining_enabled: true } }, 'token-a');

    const used = probes(USED);
    const unused = probes(UNUSED);
    for (let i = 0; i < used.length; i++) {
      const [op] = used[i]!;
      const a = await call(s, op, used[i]![1], { token: 'token-b' });
      const b = await call(s, op, unused[i]![1], { token: 'token-b' });
      expect(a.status, op).toBe(b.status);
      expect(a.text.replaceAll('acme/web', 'acme/unused').replaceAll('/web', '/unused'), op).toBe(b.text);
    }
    // Uploads and settings of beta are its own, for both: same answers, nothing of alpha's.
    const upA = await call(s, 'uploadTestResults', report(USED, 'beta'), { token: 'token-b' });
    const upB = await call(s, 'uploadTestResults', report(UNUSED, 'beta'), { token: 'token-b' });
    expect([upA.status, upA.json.new_tests]).toEqual([upB.status, upB.json.new_tests]);
    const setA = await call(s, 'updateRepositorySettings', { repo: USED, org_url_slug: 'beta', settings: {} }, { token: 'token-b' });
    const setB = await call(s, 'updateRepositorySettings', { repo: UNUSED, org_url_slug: 'beta', settings: {} }, { token: 'token-b' });
    expect(setA.status).toBe(setB.status);
    expect(setA.json).toEqual(setB.json);
    // alpha's data is untouched by beta's uploads.
    expect((await ok(s, 'getRepositorySettings', { repo: USED, org_url_slug: 'alpha' }, 'token-a')).quarantining_enabled).toBe(true);
  });

  it('and it takes the same time: reads of a used and an unused repository, interleaved, have the same median', async () => {
    const s = await server({ tokens: TWO_ORGS });
    await ok(s, 'createQueue', { repo: USED, targetBranch: 'main' }, 'token-a');
    const names = Array.from({ length: 300 }, (_, i) => `<testcase name="t${i}" classname="c"><failure message="x"/></testcase>`).join('');
    await ok(s, 'uploadTestResults', { repo: USED, org_url_slug: 'alpha', branch: 'main', sha: 'b'.repeat(40), reports: [{ name: 'j.xml', content: `<testsuite name="s">${names}</testsuite>` }] }, 'token-a');
    const time = async (repo: typeof USED) => {
      const t0 = performance.now();
      const r = await call(s, 'listUnhealthyTests', { repo, org_url_slug: 'beta', status: 'BROKEN', page_query: { page_size: 100 } }, { token: 'token-b' });
      expect(r.status).toBe(200);
      return performance.now() - t0;
    };
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < 20; i++) await time(i % 2 ? USED : UNUSED); // warm up
    for (let i = 0; i < 150; i++) {
      if (i % 2) {
        a.push(await time(USED));
        b.push(await time(UNUSED));
      } else {
        b.push(await time(UNUSED));
        a.push(await time(USED));
      }
    }
    const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
    const [ma, mb] = [median(a), median(b)];
    // Same code path: the median of the paired differences (each pair back to back, so the load
    // of the machine cancels out) is noise, not the cost of reading alpha's 300 tests.
    const diff = median(a.map((x, i) => x - b[i]!));
    expect(Math.abs(diff), `used ${ma.toFixed(2)} ms, unused ${mb.toFixed(2)} ms, paired difference ${diff.toFixed(2)} ms`).toBeLessThan(
      1 + 0.25 * Math.min(ma, mb),
    );
  });
});
