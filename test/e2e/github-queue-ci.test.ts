/**
 * `railyard serve --github` end to end, with webhooks: the real built server process against the
 * GitHub emulator (REST, smart HTTP git, CI, signed webhooks). Lane 2 of three (the others:
 * github-queue-landing.test.ts, github-queue-events.test.ts): runs held by CI the test controls,
 * batching and bisection, re-runs, a PR GitHub calls not mergeable, CI that never reports.
 * The tests of the lane run side by side: most of a test's time is waiting (CI delays, held git
 * answers, polls), not CPU. Those that need no server flags of their own share one emulator and one
 * server (`sharedLane`, a repository each); each test has its own cleanups (`scoped`) and
 * repository, and those that need server flags of their own (`world`) also their own emulator and
 * server. No test sleeps a fixed time: a "nothing happened" waits for a sign that the server had its
 * chance (its status, its log, its polls).
 */
import { Octokit } from '@octokit/core';
import { describe, expect, it } from 'vitest';
import { isolatedEnv, railyard } from '../support/cli.js';
import {
  API_TOKEN,
  createQueue,
  GH_TOKEN,
  NAME,
  onePr,
  OWNER,
  scoped,
  sharedLane,
  settled,
  submit,
  twoPrs,
  until,
  waitFor,
  waitForTestCommit,
  waitForTesting,
} from './github-harness.js';
import { gitReadsAfter, messages, prsIn, testBranches, world } from './github-queue-helpers.js';

describe('serve --github with webhooks', () => {
  describe.concurrent('lane 2: runs held by CI the test controls, batching', () => {
    const lane = sharedLane();

    it.sequential(
      "the queue's own landing, seen late by the poll (git answers slowly), is not an outside push: the run behind it goes on",
      scoped(async () => {
        const { gh, server } = await world({ ciStartSeconds: 120 });
        // Every git ls-remote / fetch answer is 700 ms old when it arrives, so a poll often still sees
        // main as it was before the landing when the landing is already done.
        gh.setGitReadDelay(OWNER, NAME, 700);
        gh.setCi(OWNER, NAME, () => []); // CI reports when the test says so
        const { one, two } = await twoPrs(server, gh, {
          queue: { concurrency: 2, createPrsForTestingBranches: false },
        });
        const octokit = new Octokit({ auth: GH_TOKEN, baseUrl: gh.apiUrl });
        const pass = async (runId: string) =>
          octokit.request('POST /repos/{owner}/{repo}/statuses/{sha}', {
            owner: OWNER,
            repo: NAME,
            sha: await waitForTestCommit(server, gh, runId),
            state: 'success',
            context: 'ci',
          });
        const first = await waitForTesting(server, gh, one.number);
        const second = await waitForTesting(server, gh, two.number);
        await waitForTestCommit(server, gh, second.testRunId);
        await pass(first.testRunId);
        expect((await waitFor(server, gh, one.number, settled)).state).toBe('merged');
        // Several polls later #2 still tests on top of #1 (a restart would say MANUAL_PUSH_TO_TARGET_BRANCH).
        await gitReadsAfter(gh, Date.now(), 4);
        const still = await waitFor(server, gh, two.number, () => true);
        expect(still, `#2 is ${still.state} (${still.stateReason ?? ''})`).toMatchObject({
          state: 'testing',
          testRunId: second.testRunId,
        });
        await pass(second.testRunId);
        expect((await waitFor(server, gh, two.number, settled)).state).toBe('merged');
        expect(await messages(gh)).toEqual(['Two (#2)', 'One (#1)', expect.any(String)]);
      }),
    );

    it.sequential(
      'batching with bisection isolates the culprit and lands the rest',
      scoped(async () => {
        const { gh, server, NAME } = await lane();
        const prs: number[] = [];
        for (const n of [1, 2, 3, 4]) {
          const pr = await gh.createPullRequest(OWNER, NAME, {
            head: `f${n}`,
            title: `PR ${n}`,
            files: n === 3 ? { 'culprit.txt': 'x\n' } : { [`f${n}.txt`]: `${n}\n` },
          });
          prs.push(pr.number);
        }
        gh.setCi(OWNER, NAME, (push) => [
          { name: 'test', conclusion: prsIn(push.branch).includes(3) ? 'failure' : 'success' },
        ]);
        await createQueue(server, gh, {
          batch: true,
          batchingMinSize: 4,
          bisectionConcurrency: 2,
          createPrsForTestingBranches: false,
        });
        for (const n of prs) await submit(server, gh, n);
        for (const n of [1, 2, 4])
          expect((await waitFor(server, gh, n, settled, 60_000)).state).toBe('merged');
        expect((await waitFor(server, gh, 3, settled)).state).toBe('failed');
        const landed = await messages(gh);
        expect(landed).toEqual(expect.arrayContaining(['PR 1 (#1)', 'PR 2 (#2)', 'PR 4 (#4)']));
        expect(landed).not.toContain('PR 3 (#3)');
        await until('test branches deleted', async () => (await testBranches(gh)).length === 0);
      }),
    );

    it.sequential(
      'a re-run that turns a failed check green before the run ends counts',
      scoped(async () => {
        const { gh, server, NAME } = await lane();
        gh.setCi(OWNER, NAME, (push) =>
          push.branch.startsWith('railyard-merge/')
            ? [
                { name: 'flaky', conclusion: 'failure', delayMs: 10 },
                { name: 'slow', conclusion: 'success', delayMs: 2500 },
              ]
            : [{ name: 'slow', conclusion: 'success' }],
        );
        const pr = await onePr(server, gh);
        const testing = await waitForTesting(server, gh, pr.number);
        const details = await waitForTestCommit(server, gh, testing.testRunId);
        await until('the flaky check failed', () =>
          gh.checkRuns(OWNER, NAME, details).some((c) => c.name === 'flaky' && c.conclusion === 'failure'),
        );
        await gh.rerunCheck(OWNER, NAME, details, 'flaky', 'success');
        expect((await waitFor(server, gh, pr.number, settled)).state).toBe('merged');
      }),
    );

    it.sequential(
      'a PR that GitHub calls not mergeable says so, and what to do, in the API, mq status, its status and its comment',
      scoped(async () => {
        const { gh, server, NAME } = await lane({ files: { 'shared.txt': 'base\n' } });
        const { one, two } = await twoPrs(server, gh, {
          prs: [
            { head: 'one', title: 'One', files: { 'shared.txt': 'one\n' } },
            { head: 'two', title: 'Two', files: { 'shared.txt': 'two\n' } },
          ],
          queue: { concurrency: 1, createPrsForTestingBranches: false },
          submit: 'none',
        });
        await submit(server, gh, one.number);
        expect((await waitFor(server, gh, one.number, settled)).state).toBe('merged');
        const landed = (await gh.branchSha(OWNER, NAME, 'main'))!;
        await submit(server, gh, two.number);
        // GitHub says only that it conflicts: the file and the landed PR are named (found with git).
        const sentence = `conflicts with main in shared.txt (changed by ${landed.slice(0, 7)} 'One (#${one.number})' / #${one.number}): rebase on main`;
        const waiting = await waitFor(server, gh, two.number, (p) => p.readiness?.conflict !== undefined);
        expect(waiting).toMatchObject({
          state: 'not_ready',
          readiness: { gitHubMergeability: 'not_mergeable', conflict: { message: sentence } },
        });
        await until('the comment names the conflict', () =>
          gh.comments(OWNER, NAME, two.number).some((c) => c.body.includes(`It ${sentence}.`)),
        );
        await until('the status names the conflict', () =>
          gh
            .statuses(OWNER, NAME, two.headSha)
            .some((s) => s.context === 'railyard/merge-queue' && s.description === `It ${sentence}`),
        );
        const env = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: API_TOKEN });
        const status = await railyard(
          ['mq', 'status', String(two.number), '--repo', `${gh.host}/${OWNER}/${NAME}`],
          env,
        );
        expect(status.code, status.stderr).toBe(0);
        expect(status.stdout).toMatch(
          new RegExp(`^conflict\\s+${sentence.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'),
        );
      }),
    );

    it.sequential(
      'with no CI reporting, the run fails after the grace period (TEST_RUN_NO_CHECKS_REPORTED)',
      scoped(async () => {
        const { gh, server } = await world({ ciStartSeconds: 1 });
        gh.setCi(OWNER, NAME, () => []);
        const pr = await onePr(server, gh);
        expect(await waitFor(server, gh, pr.number, settled)).toMatchObject({
          state: 'failed',
          stateReason: 'TEST_RUN_NO_CHECKS_REPORTED',
        });
      }),
    );
  });
});
