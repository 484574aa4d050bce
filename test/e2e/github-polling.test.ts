/**
 * `railyard serve --github` end to end without webhooks (polling with ETags), with GitHub App
 * auth and expiring installation tokens, rate-limit answers, and a server killed mid-run.
 */
import { describe, expect, it } from 'vitest';
import {
  createQueue,
  emulator,
  GH_TOKEN,
  NAME,
  onePr,
  OWNER,
  scoped,
  settled,
  startRailyard,
  submit,
  tempDir,
  twoPrs,
  until,
  waitFor,
  waitForTestCommit,
  waitForTesting,
  type PrSpec,
} from './github-harness.js';

type Emulator = Awaited<ReturnType<typeof emulator>>;
const messages = async (gh: Emulator) =>
  (await gh.log(OWNER, NAME, 'main')).map((c) => c.message.trim().split('\n')[0]);
const testBranches = async (gh: Emulator) =>
  (await gh.branches(OWNER, NAME)).filter((b) => b.startsWith('railyard-merge/'));

describe('serve --github without webhooks', () => {
  // Each test has its own emulator, server and cleanups (`scoped`), so two lanes run side by side:
  // a test mostly waits for the emulated CI and the polls.
  describe.concurrent('lane 1: ETags and pushes, then rate limits', () => {
    it.sequential('polling lands PRs, sees pushes to PRs and to the target, and asks with ETags', scoped(async () => {
      const gh = await emulator();
      gh.createRepo(OWNER, NAME, { files: { 'README.md': 'app\n' } });
      gh.setCi(OWNER, NAME, () => [{ name: 'ci', conclusion: 'success', delayMs: 1200 }]);
      const server = await startRailyard(gh, { webhooks: false, dataDir: tempDir('railyard-gh-') });
      const { one, two } = await twoPrs(server, gh, {
        queue: { concurrency: 2, createPrsForTestingBranches: false },
        submit: 'both',
      });
      const three = await gh.createPullRequest(OWNER, NAME, {
        head: 'three',
        title: 'Three',
        files: { 'three.txt': '3\n' },
      });
      const testing = await waitForTesting(server, gh, one.number);
      // The pushes come once #1's test commit is built on the old head (before, it is simply built on the new one).
      await waitForTestCommit(server, gh, testing.testRunId);
      await gh.pushToPullRequest(OWNER, NAME, two.number, { 'two.txt': 'two\n' });
      await gh.pushCommit(OWNER, NAME, 'main', { 'hotfix.txt': 'fix\n' }, { message: 'Hotfix pushed by hand' });
      expect(await waitFor(server, gh, two.number, settled)).toMatchObject({
        state: 'cancelled',
        stateReason: 'PR_PUSHED_TO',
      });
      const restarted = await waitFor(server, gh, one.number, (p) => p.testRunId !== testing.testRunId);
      expect(restarted.stateReason).toBe('MANUAL_PUSH_TO_TARGET_BRANCH');
      await submit(server, gh, three.number);
      expect((await waitFor(server, gh, one.number, settled)).state).toBe('merged');
      expect((await waitFor(server, gh, three.number, settled)).state).toBe('merged');
      expect(await messages(gh)).toEqual([
        'Three (#3)',
        'One (#1)',
        'Hotfix pushed by hand',
        expect.any(String),
      ]);
      await until('test branches deleted', async () => (await testBranches(gh)).length === 0);
      // Polling re-reads with If-None-Match: unchanged answers come back 304 (free of rate limit).
      expect(gh.requests.filter((r) => r.status === 304).length).toBeGreaterThan(0);
      expect(gh.deliveries.every((d) => d.status === 0 || d.status >= 200)).toBe(true);
      await gh.idle();
      expect(gh.schemaViolations).toEqual([]);
    }));

    it.sequential('rate-limit answers are waited out (retry-after / reset), not hammered', scoped(async () => {
      const gh = await emulator();
      gh.createRepo(OWNER, NAME, { files: { 'README.md': 'app\n' } });
      const server = await startRailyard(gh, { webhooks: false, dataDir: tempDir('railyard-gh-') });
      const pr = await onePr(server, gh, { submit: false });
      gh.resetRequestCount();
      gh.rateLimitNext(1, 'secondary', 1);
      await submit(server, gh, pr.number);
      const limited = gh.requests.findIndex((r) => r.status === 403 || r.status === 429);
      expect(limited).toBeGreaterThanOrEqual(0);
      gh.rateLimitNext(2, 'primary');
      await until(
        'the primary limits were answered',
        () => gh.requests.filter((r) => r.status === 403).length >= 3,
      );
      gh.rateLimitNext(1, 'secondary', 1, 429); // GitHub also answers secondary limits with 429
      expect((await waitFor(server, gh, pr.number, settled)).state).toBe('merged');
      await server.stop(); // its log is written out (buffered until then)
      expect(server.output()).toMatch(/rate limit/);
      // After each limit the next request waited: no burst of rejected requests.
      const rejected = gh.requests.filter((r) => r.status === 403 || r.status === 429);
      expect(rejected.length).toBe(4);
    }));
  });

  describe.concurrent('lane 2: a GitHub App, then a server killed mid-run', () => {
    it.sequential('a GitHub App: installation per repository, tokens renewed as they expire, never logged', scoped(async () => {
      const gh = await emulator();
      gh.createRepo(OWNER, NAME, { files: { 'README.md': 'app\n' } });
      gh.setCi(OWNER, NAME, () => [{ name: 'ci', conclusion: 'success', delayMs: 700 }]);
      const app = gh.createApp({ installationTokenTtlMs: 3000 });
      gh.installApp(app.appId, OWNER, NAME);
      const server = await startRailyard(gh, {
        webhooks: false,
        dataDir: tempDir('railyard-gh-'),
        auth: { kind: 'app', ...app },
      });
      const prs = [];
      for (const n of [1, 2, 3])
        prs.push(
          await gh.createPullRequest(OWNER, NAME, {
            head: `f${n}`,
            title: `PR ${n}`,
            files: { [`f${n}.txt`]: `${n}\n` },
          }),
        );
      await createQueue(server, gh, { createPrsForTestingBranches: false });
      for (const pr of prs) await submit(server, gh, pr.number);
      for (const pr of prs) expect((await waitFor(server, gh, pr.number, settled)).state).toBe('merged');
      // The run outlived several tokens: new ones were asked for, none was used after it expired.
      expect(gh.installationTokens.length).toBeGreaterThan(1);
      expect(gh.requests.filter((r) => r.status === 401)).toEqual([]);
      expect(gh.requests.some((r) => r.path.endsWith('/installation'))).toBe(true);
      // Every REST call acted with an installation token, never the PAT of this emulator.
      expect(gh.requests.filter((r) => r.token === GH_TOKEN)).toEqual([]);
      for (const t of gh.installationTokens) expect(server.output()).not.toContain(t.token);
      expect(server.output()).not.toContain('PRIVATE KEY');
    }));

    it.sequential('a server killed mid-run picks its runs up again on restart and lands each PR once', scoped(async () => {
      const gh = await emulator();
      gh.createRepo(OWNER, NAME, { files: { 'README.md': 'app\n' } });
      gh.setCi(OWNER, NAME, () => [{ name: 'ci', conclusion: 'success', delayMs: 1500 }]);
      const dataDir = tempDir('railyard-gh-');
      const first = await startRailyard(gh, { webhooks: false, dataDir });
      await twoPrs(first, gh, {
        prs: [1, 2].map((n) => ({ head: `f${n}`, title: `PR ${n}`, files: { [`f${n}.txt`]: `${n}\n` } })) as [PrSpec, PrSpec],
        queue: { concurrency: 2, createPrsForTestingBranches: false },
        submit: 'both',
      });
      await waitForTesting(first, gh, 2);
      await until('the test branches are on GitHub', async () => (await testBranches(gh)).length === 2);
      await first.kill();
      const again = await startRailyard(gh, { webhooks: false, dataDir });
      expect((await waitFor(again, gh, 1, settled)).state).toBe('merged');
      expect((await waitFor(again, gh, 2, settled)).state).toBe('merged');
      expect(await messages(gh)).toEqual(['PR 2 (#2)', 'PR 1 (#1)', expect.any(String)]);
      await until('test branches deleted', async () => (await testBranches(gh)).length === 0);
      // Exactly one landing per PR: the target moved twice, both by the queue's PATCH.
      expect(
        gh.requests.filter(
          (r) => r.method === 'PATCH' && r.path.includes('/git/refs/heads/main') && r.status === 200,
        ),
      ).toHaveLength(2);
    }));
  });
});
