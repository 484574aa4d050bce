/**
 * A blip of GitHub while landing (a 502, a dropped connection) does not fail a PR whose tests
 * passed: the landing is tried again with growing waits, and before each new attempt Railyard
 * finds whether the last one landed after all (GitHub answered 502 but moved the branch or merged
 * the PR) — then the PR is merged, never landed twice. A refusal still fails at once, and when the
 * blips outlast `--landing-retry-seconds` the PR fails saying what GitHub answered and that it can
 * be resubmitted; the PR's comment on GitHub says so too, and says while it waits. Real `railyard serve --github` against the emulator's landing faults (failLanding).
 * Three lanes of tests run side by side (each test with its own emulator and server).
 */
import { Octokit } from '@octokit/core';
import { describe, expect, it } from 'vitest';
import { call } from '../server/helpers.js';
import type { GitHubEmulator } from '../support/github/index.js';
import type { TestServer } from '../support/server.js';
import {
  emulator,
  GH_TOKEN,
  NAME,
  onePr,
  OWNER,
  repoOf,
  scoped,
  settled,
  startRailyard,
  tempDir,
  twoPrs,
  until,
  waitFor,
  waitForTestCommit,
  waitForTesting,
} from './github-harness.js';

async function world(opts: { mergeApi?: boolean; retrySeconds?: number } = {}) {
  const gh = await emulator();
  gh.createRepo(OWNER, NAME, { files: { 'README.md': 'app\n' } });
  gh.setCi(OWNER, NAME, () => [{ name: 'ci', conclusion: 'success', delayMs: 100 }]);
  if (opts.mergeApi) gh.protectBranch(OWNER, NAME, 'main', { requiredApprovals: 0, bypass: ['railyard-bot'] });
  const server = await startRailyard(gh, {
    webhooks: true,
    dataDir: tempDir('railyard-gh-land-'),
    // Webhooks (CI events, pushes) and the retry timers drive these tests: polled every second, not
    // five times a second (each poll is a git ls-remote, four processes).
    pollSeconds: 1,
    extraArgs: [...(opts.mergeApi ? ['--github-merge-api'] : []), ...(opts.retrySeconds === undefined ? [] : ['--landing-retry-seconds', String(opts.retrySeconds)])],
  });
  return { gh, server, before: await gh.branchSha(OWNER, NAME, 'main') };
}

/** The statuses GitHub answered to the landing calls on main (the ref update, or the merge API). */
const landingCalls = (gh: GitHubEmulator, kind: 'ref' | 'merge') =>
  gh.requests
    .filter((r) => (kind === 'ref' ? r.method === 'PATCH' && r.path.endsWith('/git/refs/heads/main') : r.method === 'PUT' && r.path.endsWith('/merge')))
    .map((r) => r.status);

/** The PR's state changes, oldest first. */
async function history(server: TestServer, gh: GitHubEmulator, n: number): Promise<Array<{ state: string; reason?: string; detail?: string }>> {
  const r = await call(server, 'getPullRequestHistory', { repo: repoOf(gh), targetBranch: 'main', pr: { number: n } });
  expect(r.status).toBe(200);
  return r.json.transitions;
}

/**
 * GitHub moves main but answers 502: whether the next attempt or the window's last look reads main,
 * it finds the tested commit there and the PR merges; nothing lands a second time.
 */
async function landsOnceAfter502(opts: { retrySeconds?: number } = {}): Promise<void> {
  const { gh, server, before } = await world(opts);
  gh.failLanding(OWNER, NAME, { answer: 502, after: true });
  const pr = await onePr(server, gh);
  const tested = await waitForTestCommit(server, gh, (await waitForTesting(server, gh, pr.number)).testRunId);
  expect((await waitFor(server, gh, pr.number, settled, 60_000)).state).toBe('merged');
  expect(landingCalls(gh, 'ref')).toEqual([502]);
  expect((await gh.log(OWNER, NAME, 'main')).map((c) => c.sha)).toEqual([tested, before]);
}

describe('serve --github: a blip while landing', () => {
  // Each test has its own emulator, server and cleanups (`scoped`), so three lanes run side by
  // side: a test mostly waits for the landing's retry backoff (1-2 s, doubling).
  describe.concurrent('lane 1: the 10 s retry window, then a refusal', () => {
    it.sequential('blips that outlast --landing-retry-seconds fail the PR saying what GitHub answered and that it can be resubmitted', scoped(async () => {
      const { gh, server, before } = await world({ retrySeconds: 10 });
      gh.failLanding(OWNER, NAME, { times: 100, answer: 502 });
      const pr = await onePr(server, gh);
      const end = await waitFor(server, gh, pr.number, settled, 60_000);
      expect(end.state).toBe('failed');
      const last = (await history(server, gh, pr.number)).at(-1)!;
      expect(last).toMatchObject({ state: 'failed', reason: 'GITHUB_API_MERGE_PR_FAILED' });
      expect(last.detail).toMatch(/^Landing failed: GitHub answered 502 \(tried \d+ times over \d+ s\)\. The tests passed: resubmit the PR/);
      // Tried at least three times (the first wait is at most 2 s of the 10, and a last look at the end).
      const calls = landingCalls(gh, 'ref');
      expect(calls.length).toBeGreaterThanOrEqual(3);
      expect(calls.every((s) => s === 502)).toBe(true);
      expect(await gh.branchSha(OWNER, NAME, 'main')).toBe(before);
      await until('the comment on GitHub says it too', () =>
        gh.comments(OWNER, NAME, pr.number).some((c) => c.body.includes('Landing failed: GitHub answered 502') && c.body.includes('resubmit the PR')),
      );
    }));

    it.sequential('a refusal (422, the target unchanged) fails at once, never tried again', scoped(async () => {
      const { gh, server, before } = await world();
      gh.protectBranch(OWNER, NAME, 'main', { kind: 'classic', requiredChecks: ['security-scan'] });
      // The PR has the scan, the test commit does not: GitHub refuses to move main to it.
      gh.setCi(OWNER, NAME, (push) =>
        push.branch.startsWith('railyard-merge/')
          ? [{ name: 'ci', conclusion: 'success', delayMs: 50 }]
          : [
              { name: 'ci', conclusion: 'success', delayMs: 50 },
              { name: 'security-scan', conclusion: 'success', delayMs: 50 },
            ],
      );
      const pr = await onePr(server, gh);
      expect((await waitFor(server, gh, pr.number, settled, 60_000)).state).toBe('failed');
      expect(landingCalls(gh, 'ref')).toEqual([422]);
      expect((await history(server, gh, pr.number)).at(-1)!.detail).toContain('Required status check "security-scan" is expected.');
      expect(await gh.branchSha(OWNER, NAME, 'main')).toBe(before);
      await server.stop();
      expect(server.output()).not.toMatch(/retrying in/);
    }));

    it.sequential('GitHub moves main but answers 502: the next attempt finds it landed, no second landing', scoped(() => landsOnceAfter502()));
  });

  describe.concurrent('lane 2: retried 502s, a restart mid-wait', () => {
    it.sequential('GitHub answers 502 to the ref update twice: tried again, the PR merges once (one commit on main)', scoped(async () => {
      const { gh, server, before } = await world();
      gh.failLanding(OWNER, NAME, { times: 2, answer: 502 });
      const pr = await onePr(server, gh);
      const tested = await waitForTestCommit(server, gh, (await waitForTesting(server, gh, pr.number)).testRunId);
      expect((await waitFor(server, gh, pr.number, settled, 60_000)).state).toBe('merged');
      expect(landingCalls(gh, 'ref')).toEqual([502, 502, 200]);
      expect(await gh.branchSha(OWNER, NAME, 'main')).toBe(tested);
      const log = await gh.log(OWNER, NAME, 'main');
      expect(log.map((c) => c.sha)).toEqual([tested, before]);
      await server.stop(); // the log is written out
      expect(server.output()).toMatch(/GitHub answered 502 \(attempt 1\), retrying in \d+ s/);
      expect(server.output()).toMatch(/GitHub answered 502 \(attempt 2\), retrying in \d+ s/);
    }));

    it.sequential('the server stops while it waits to try again: nothing half-done, the next start lands the PR once', scoped(async () => {
      const { gh, server, before } = await world();
      const dataDir = server.dataDir;
      gh.failLanding(OWNER, NAME, { times: 1000, answer: 502 });
      const pr = await onePr(server, gh);
      const tested = await waitForTestCommit(server, gh, (await waitForTesting(server, gh, pr.number)).testRunId);
      await until('GitHub answered 502 to the landing', () => landingCalls(gh, 'ref').length > 0, 60_000);
      expect((await waitFor(server, gh, pr.number, () => true)).state).toBe('tests_passed'); // not failed: it waits to try again
      // The PR's comment on GitHub says why it waits.
      await until('the comment says the landing is retried', () =>
        gh.comments(OWNER, NAME, pr.number).some((c) => /> Landing: GitHub answered 502 \(attempt \d+\), retrying in \d+ s\./.test(c.body)),
      );
      await server.stop();
      expect(await gh.branchSha(OWNER, NAME, 'main')).toBe(before);
      gh.failLanding(OWNER, NAME, { times: 0 }); // GitHub is back
      const again = await startRailyard(gh, { webhooks: true, dataDir });
      expect((await waitFor(again, gh, pr.number, settled, 60_000)).state).toBe('merged');
      const calls = landingCalls(gh, 'ref');
      expect(calls.at(-1)).toBe(200);
      expect(calls.filter((s) => s !== 502)).toEqual([200]);
      expect((await gh.log(OWNER, NAME, 'main')).map((c) => c.sha)).toEqual([tested, before]);
    }));

    it.sequential('--github-merge-api: a 503 before merging is tried again and the PR merges through the merge API', scoped(async () => {
      const { gh, server } = await world({ mergeApi: true });
      gh.failLanding(OWNER, NAME, { answer: 503 });
      const pr = await onePr(server, gh);
      expect((await waitFor(server, gh, pr.number, settled, 60_000)).state).toBe('merged');
      expect(landingCalls(gh, 'merge')).toEqual([503, 200]);
      expect(gh.getPullRequest(OWNER, NAME, pr.number)).toMatchObject({ state: 'closed', merged: true });
      expect(await gh.log(OWNER, NAME, 'main')).toHaveLength(2);
    }));
  });

  describe.concurrent('lane 3: parallel lanes, a cancel, the merge API', () => {
    it.sequential('parallel lanes: a lane rebuilt on the other lane, landed but answered 502, is not rebuilt and landed again', scoped(async () => {
      // #1's CI reports only when the test says so: #2 lands first, then #1 is rebuilt on top of it to land.
      const { gh, server, before } = await world();
      gh.setCi(OWNER, NAME, (push) => (push.branch.includes('pr-1/') ? [] : [{ name: 'ci', conclusion: 'success' }]));
      const { one: a, two: b } = await twoPrs(server, gh, {
        prs: [
          { head: 'a', title: 'Web', files: { 'web.txt': 'w\n' } },
          { head: 'b', title: 'Api', files: { 'api.txt': 'a\n' } },
        ],
        queue: { mode: 'parallel', createPrsForTestingBranches: false },
        impactedTargets: [['web'], ['api']],
        submit: 'both',
      });
      expect((await waitFor(server, gh, b.number, settled, 60_000)).state).toBe('merged');
      const slow = await waitFor(server, gh, a.number, () => true);
      expect(slow.state).toBe('testing');
      gh.failLanding(OWNER, NAME, { answer: 502, after: true });
      const octokit = new Octokit({ auth: GH_TOKEN, baseUrl: gh.apiUrl });
      await octokit.request('POST /repos/{owner}/{repo}/statuses/{sha}', {
        owner: OWNER,
        repo: NAME,
        sha: await waitForTestCommit(server, gh, slow.testRunId),
        state: 'success',
        context: 'ci',
      });
      expect((await waitFor(server, gh, a.number, settled, 60_000)).state).toBe('merged');
      expect(landingCalls(gh, 'ref')).toEqual([200, 502]);
      const log = await gh.log(OWNER, NAME, 'main');
      expect(log.map((c) => c.message.split('\n')[0])).toEqual(['Web (#1)', 'Api (#2)', expect.any(String)]);
      expect(log[2]!.sha).toBe(before);
    }));

    it.sequential('a PR cancelled while its landing waits to be tried again is not landed', scoped(async () => {
      const { gh, server, before } = await world();
      gh.failLanding(OWNER, NAME, { times: 1000, answer: 502 });
      const pr = await onePr(server, gh);
      await until('GitHub answered 502 to the landing', () => landingCalls(gh, 'ref').length > 0, 60_000);
      const cancelled = await call(server, 'cancelPullRequest', { repo: repoOf(gh), targetBranch: 'main', pr: { number: pr.number } });
      expect(cancelled.status).toBe(200);
      // (The faults stay armed: a retry started just before the cancel must not land it either.)
      await until('the server gives the landing up', () => /left the queue while it waited to try again; not landed/.test(server.output()), 60_000);
      expect((await waitFor(server, gh, pr.number, settled)).state).toBe('cancelled');
      expect(landingCalls(gh, 'ref').every((s) => s === 502)).toBe(true);
      expect(await gh.branchSha(OWNER, NAME, 'main')).toBe(before);
    }));

    it.sequential('--github-merge-api: GitHub merges the PR but the connection drops before the answer: merged, never merged again', scoped(async () => {
      const { gh, server, before } = await world({ mergeApi: true });
      gh.failLanding(OWNER, NAME, { answer: 'drop', after: true });
      const pr = await onePr(server, gh);
      expect((await waitFor(server, gh, pr.number, settled, 60_000)).state).toBe('merged');
      expect(landingCalls(gh, 'merge')).toEqual([0]);
      expect(landingCalls(gh, 'ref')).toEqual([]);
      expect(gh.getPullRequest(OWNER, NAME, pr.number)).toMatchObject({ state: 'closed', merged: true });
      const log = await gh.log(OWNER, NAME, 'main');
      expect(log).toHaveLength(2);
      expect(log[1]!.sha).toBe(before);
    }));

    it.sequential('the window ends right after an attempt that landed but answered 502: the last look finds it landed, the PR merges', scoped(() => landsOnceAfter502({ retrySeconds: 1 })));
  });
});
