/**
 * `railyard flaky quarantine --always --until TIME --reason TEXT` against the real `railyard serve
 * --sandbox`, as a user runs it: a quarantine set while quarantining is off warns (stderr and the
 * --json answer) and says how to turn it on; the owner is the label of the token used; the lists
 * and `flaky show` show owner, reason and time left; and the queue's flakyPolicy follows the end at
 * once: a PR whose run failed only on a quarantined test lands (FLAKY_FAILURES_IGNORED) while the
 * quarantine lasts, and fails once it lapsed.
 */
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readReports } from '../../src/flaky/ingest.js';
import { ok } from '../server/helpers.js';
import { isolatedEnv, railyard, unwrapOclif } from '../support/cli.js';
import { settled, until, waitForPr } from '../support/forge-e2e.js';
import { cleanupsAfterEach } from '../support/hooks.js';
import { spawnServe } from '../support/serve.js';
import { tempDir } from '../support/tmp.js';

const SERVER_TOKEN = 'ry_quarantine_expiry_token_0123456789abcdefghijk';
const REPO = { host: 'github.com', owner: 'acme', name: 'web' };
const Q = { repo: REPO, targetBranch: 'main' };
const REPO_FLAGS = ['--repo', 'github.com/acme/web', '--org', 'local'];

const cleanup = cleanupsAfterEach();

const report = (failing: string[] = []) =>
  `<testsuite name="suite">${['net', 'db']
    .map(
      (t) =>
        `<testcase classname="tests/${t}.test.ts" file="tests/${t}.test.ts" name="${t} works">${failing.includes(t) ? '<failure message="boom"/>' : ''}</testcase>`,
    )
    .join('')}</testsuite>`;

function idOf(name: string): string {
  const read = readReports({
    org: 'local',
    repo: REPO,
    variant: '',
    reports: [{ name: 'junit.xml', content: report() }],
  });
  if (!read.ok) throw new Error(read.error);
  return read.results.find((r) => r.name === name)!.id;
}

describe('flaky quarantine --until: owner, warning, and expiry under the queue', () => {
  it(
    'warns while quarantining is off, shows owner/reason/time left, and the queue stops ignoring the test once the quarantine lapsed',
    { timeout: 120_000 },
    async () => {
      const dataDir = await tempDir();
      cleanup(() => rm(dataDir, { recursive: true, force: true }));
      // Every run containing #1 or #2 fails its `test` check after 1 s of simulated CI.
      const serve = await spawnServe(
        ['--data-dir', dataDir, '--sandbox', '--sandbox-test-seconds', '1', '--sandbox-fail', '1,2'],
        {
          ...isolatedEnv(),
          RAILYARD_SERVER_TOKEN: SERVER_TOKEN,
        },
      );
      cleanup(() => serve.kill());
      const server = {
        url: serve.url,
        token: SERVER_TOKEN,
        org: 'local',
        dataDir,
        close: async () => undefined,
      };
      const base = isolatedEnv({ RAILYARD_API_URL: serve.url });
      // The person's own token, labelled: the owner of what they set.
      const created = await railyard(
        ['token', 'create', '--data-dir', dataDir, '--org', 'local', '--label', 'alice', '--format', 'json'],
        base,
      );
      expect(created.code, created.stderr).toBe(0);
      const env: Record<string, string> = {
        ...base,
        RAILYARD_TOKEN: JSON.parse(created.stdout).token as string,
      };
      const run = (args: string[]) => railyard(args, env);
      const cli = async (args: string[]) => {
        const r = await run(args);
        expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
        return r;
      };

      const key = { repo: REPO, org_url_slug: 'local' };
      await ok(server, 'uploadTestResults', {
        ...key,
        branch: 'main',
        sha: 'a'.repeat(40),
        reports: [{ name: 'junit.xml', content: report() }],
      });
      const net = idOf('net works');

      // Quarantining is off (the default): the command says so instead of claiming a quarantine.
      const off = await cli(['flaky', 'quarantine', net, '--always', ...REPO_FLAGS]);
      expect(off.stdout).toBe(`Test ${net} is set to be always quarantined, owner alice\n`);
      expect(unwrapOclif(off.stderr)).toBe(
        'Warning: quarantining is off for github.com/acme/web: the test is not quarantined (the queue and `railyard flaky run` ignore the override) until it is turned on: ' +
          'railyard flaky settings --repo github.com/acme/web --quarantining on (API: updateRepositorySettings with settings.quarantining_enabled true)',
      );
      const offJson = JSON.parse(
        (await cli(['flaky', 'quarantine', net, '--always', '--json', ...REPO_FLAGS])).stdout,
      );
      expect(offJson).toMatchObject({ test_id: net, setting: 'ALWAYS_QUARANTINE', quarantined: false });
      expect(offJson.warning).toMatch(/^quarantining is off for github.com\/acme\/web: /);
      expect(
        JSON.parse((await cli(['flaky', 'list-quarantined', '--json', ...REPO_FLAGS])).stdout)
          .quarantined_tests,
      ).toEqual([]);
      expect((await cli(['flaky', 'show', net, ...REPO_FLAGS])).stdout).toMatch(
        /quarantineOverride\s+always quarantined, set by alice \(not in force: quarantining is off for the repository; railyard flaky settings --quarantining on\)/,
      );

      // Bad ends are refused before anything is sent.
      const past = await run([
        'flaky',
        'quarantine',
        net,
        '--always',
        '--until',
        '2020-01-01T00:00:00Z',
        ...REPO_FLAGS,
      ]);
      expect(past.code).not.toBe(0);
      expect(unwrapOclif(past.stderr)).toMatch(
        /--until: 2020-01-01T00:00:00\.000Z is not in the future \(now 20\d\d-/,
      );
      const garbled = await run([
        'flaky',
        'quarantine',
        net,
        '--always',
        '--until',
        'next tuesday',
        ...REPO_FLAGS,
      ]);
      expect(garbled.code).not.toBe(0);
      expect(unwrapOclif(garbled.stderr)).toContain(
        '--until: "next tuesday" is not an ISO 8601 time such as 2026-12-24T18:00:00Z, or a duration from now such as 90m, 2h or 3d',
      );
      // A time without a zone would mean something else on another machine: refused, as for freezes.
      const zoneless = await run([
        'flaky',
        'quarantine',
        net,
        '--always',
        '--until',
        '2030-01-01T09:00',
        ...REPO_FLAGS,
      ]);
      expect(zoneless.code).not.toBe(0);
      expect(unwrapOclif(zoneless.stderr)).toContain(
        '--until: "2030-01-01T09:00" has no time zone: add Z for UTC',
      );
      const auto = await run(['flaky', 'quarantine', net, '--auto', '--until', '2h', ...REPO_FLAGS]);
      expect(unwrapOclif(auto.stderr)).toContain(
        '--until: only with --always or --never (--auto removes the override)',
      );

      await cli(['flaky', 'settings', '--quarantining', 'on', ...REPO_FLAGS]);
      const on = await cli([
        'flaky',
        'quarantine',
        net,
        '--always',
        '--until',
        '10m',
        '--reason',
        'KAN-9: flaky socket',
        ...REPO_FLAGS,
      ]);
      expect(on.stdout).toMatch(
        new RegExp(
          `^Test ${net} is now always quarantined until \\S+ \\S+ \\((9m \\d+s|10m) left\\), owner alice: KAN-9: flaky socket\\n$`,
        ),
      );
      expect(on.stderr).toBe('');
      const csv = (await cli(['flaky', 'list-quarantined', '--format', 'csv', ...REPO_FLAGS])).stdout.split(
        '\r\n',
      );
      expect(csv[0]).toBe(
        'Test,Status,Setting,Since,Owner,Until,Seconds left,Reason,File,Class,Codeowners,Id',
      );
      expect(csv[1]).toMatch(
        new RegExp(
          `^net works,healthy,ALWAYS_QUARANTINE,\\S+Z,alice,\\S+Z,(5\\d\\d|600),KAN-9: flaky socket,tests/net.test.ts,tests/net.test.ts,,${net}$`,
        ),
      );
      const markdown = (await cli(['flaky', 'list-quarantined', '--format', 'markdown', ...REPO_FLAGS]))
        .stdout;
      expect(markdown).toMatch(
        /\| net works \| healthy \| ALWAYS_QUARANTINE \| .* \| alice \| .* \((9m \d+s|10m) left\) \| KAN-9: flaky socket \|/,
      );
      expect((await cli(['flaky', 'show', net, ...REPO_FLAGS])).stdout).toMatch(
        /quarantineOverride\s+always quarantined until .* \((9m \d+s|10m) left\), set by alice: KAN-9: flaky socket\n/,
      );

      await cli(['mq', 'queue', 'create', '--repo', 'acme/web']);
      await cli([
        'mq',
        'queue',
        'update',
        '--repo',
        'acme/web',
        '--flaky-policy',
        'ignore_quarantined',
        '--flaky-report-grace-seconds',
        '60',
      ]);

      /** Submits `n`, uploads CI's JUnit for its test commit (failing `failing`), and waits until it settles. */
      const land = async (n: number, failing: string[]) => {
        await cli(['mq', 'submit', String(n), '--repo', 'acme/web']);
        const testing = await waitForPr(
          server,
          REPO,
          n,
          `#${n}`,
          (p) => p.state === 'testing' && Boolean(p.testRunId),
        );
        let sha = '';
        await until(`#${n}'s test commit`, async () => {
          sha =
            (await ok(server, 'getMergeQueueTestingDetails', { ...Q, testRunId: testing.testRunId }))
              .testBranchSha ?? '';
          return sha !== '';
        });
        const file = join(env.HOME, `junit-${n}.xml`);
        await writeFile(file, report(failing));
        await cli([
          'flaky',
          'upload',
          ...REPO_FLAGS,
          '--branch',
          testing.testBranch ?? 'railyard-merge/test',
          '--sha',
          sha,
          '--job',
          'test',
          file,
        ]);
        const done = await waitForPr(server, REPO, n, `#${n}`, settled, 60_000);
        const details = await ok(server, 'getMergeQueueTestingDetails', { ...Q, testRunId: done.testRunId });
        const history = await ok(server, 'getPullRequestHistory', { ...Q, pr: { number: n } });
        return { done, details, history };
      };

      const one = await land(1, ['net']);
      expect(one.done, `#1 ${one.done.state} (${one.done.stateReason ?? ''})`).toMatchObject({
        state: 'merged',
      });
      expect(
        one.history.transitions.find((t: { state: string }) => t.state === 'tests_passed'),
      ).toMatchObject({ reason: 'FLAKY_FAILURES_IGNORED' });

      // A short quarantine: once it lapsed (seen in the list), the same failure fails the PR.
      await cli([
        'flaky',
        'quarantine',
        net,
        '--always',
        '--until',
        '6s',
        '--reason',
        'until the fix lands',
        ...REPO_FLAGS,
      ]);
      await until(
        'the quarantine to lapse',
        async () => {
          const listed = JSON.parse(
            (await cli(['flaky', 'list-quarantined', '--json', ...REPO_FLAGS])).stdout,
          );
          return listed.quarantined_tests.length === 0;
        },
        30_000,
        250,
      );
      expect((await cli(['flaky', 'show', net, ...REPO_FLAGS])).stdout).toMatch(
        /quarantineOverride\s+always quarantined \(lapsed: expired .*; the repository settings decide\), set by alice: until the fix lands\n/,
      );
      const two = await land(2, ['net']);
      expect(two.done).toMatchObject({ state: 'failed', stateReason: 'TEST_RUN_REQUIRED_STATUS_FAILED' });
      expect(two.details.failingTests).toEqual([
        { name: 'suite › net works', quarantined: false, flaky: false, changedByPr: false, ignored: false },
      ]);
    },
  );
});
