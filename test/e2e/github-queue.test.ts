/**
 * `railyard serve --github` end to end, with webhooks: the real built server process against the
 * GitHub emulator (REST, smart HTTP git, CI, signed webhooks). Three lanes of tests run side by
 * side; in a lane, the tests that need no server flags of their own share one emulator and one
 * server (`sharedLane`, a repository each). No test sleeps a fixed time: a "nothing happened" waits
 * for a sign that the server had its chance (its status, its log, its polls).
 */
import { createHmac } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Octokit } from '@octokit/core';
import { describe, expect, it } from 'vitest';
import { call, ok } from '../server/helpers.js';
import { isolatedEnv, railyard } from '../support/cli.js';
import {
  API_TOKEN,
  createQueue,
  emulator,
  GH_TOKEN,
  NAME,
  onePr,
  OWNER,
  repoName,
  repoOf,
  scoped,
  sharedLane,
  settled,
  startRailyard,
  submit,
  tempDir,
  twoPrs,
  until,
  WEBHOOK_SECRET,
  waitFor,
  waitForTestCommit,
  waitForTesting,
} from './github-harness.js';

async function world(opts: { ciStartSeconds?: number; files?: Record<string, string> } = {}) {
  const gh = await emulator();
  gh.createRepo(OWNER, NAME, { files: opts.files ?? { 'README.md': 'app\n' } });
  const server = await startRailyard(gh, {
    webhooks: true,
    dataDir: tempDir('railyard-gh-'),
    ciStartSeconds: opts.ciStartSeconds,
  });
  return { gh, server };
}

/** The PR numbers a test branch `railyard-merge/pr-1-2/<run>` holds ([] for other branches). */
const prsIn = (branch: string): number[] => {
  const m = /^railyard-merge\/pr-([\d-]+)\//.exec(branch);
  return m ? m[1]!.split('-').map(Number) : [];
};
const messages = async (gh: Awaited<ReturnType<typeof emulator>>) =>
  (await gh.log(OWNER, repoName(gh), 'main')).map((c) => c.message.trim().split('\n')[0]);
/**
 * Waits until `n` git conversations with the repository began after `since` and ended (the server's
 * poll reads the branches with `git ls-remote` one round after another, each opening with one
 * `GET /info/refs`): at least `n - 1` polls have seen their answer.
 */
const gitReadsAfter = (gh: Awaited<ReturnType<typeof emulator>>, since: number, n: number) =>
  until(
    `${n} git reads of the repository`,
    () =>
      gh.gitRequests.filter(
        (r) =>
          r.repo === repoName(gh) && r.at >= since && r.path.startsWith('/info/refs?service=git-upload-pack'),
      ).length >= n,
  );
const testBranches = async (gh: Awaited<ReturnType<typeof emulator>>) =>
  (await gh.branches(OWNER, repoName(gh))).filter((b) => b.startsWith('railyard-merge/'));

describe('serve --github with webhooks', () => {
  // Three lanes run side by side: most of a test's time is waiting (CI delays, held git answers,
  // polls), not CPU. Each test has its own cleanups (`scoped`) and repository; those that need
  // server flags of their own (`world`) also their own emulator and server.
  describe.concurrent('lane 1: the slowest git (reads held 1.5 s), then the PRs that land', () => {
    const lane = sharedLane();

    it.sequential(
      "an outside push whose webhook is still fetching main when the run's landing starts restarts it too (never fails the PR)",
      scoped(async () => {
        const { gh, server, NAME, output } = await lane();
        // Slow git reads: the push webhook's fetch of main is still running when the run's CI passes
        // and its landing fetches main as well (two fetches into one cache at once: one fails).
        gh.setGitReadDelay(OWNER, NAME, 1500);
        gh.setCi(OWNER, NAME, () => [{ name: 'ci', conclusion: 'success', delayMs: 1500 }]);
        const pr = await onePr(server, gh);
        const testing = await waitForTesting(server, gh, pr.number);
        await waitForTestCommit(server, gh, testing.testRunId);
        await gh.pushCommit(
          OWNER,
          NAME,
          'main',
          { 'hotfix.txt': 'fix\n' },
          { message: 'Hotfix pushed by hand' },
        );
        expect(await waitFor(server, gh, pr.number, settled, 60_000)).toMatchObject({ state: 'merged' });
        expect(await messages(gh)).toEqual(['Feature (#1)', 'Hotfix pushed by hand', expect.any(String)]);
        expect(output()).not.toMatch(/cannot lock ref/);
      }),
    );

    it.sequential(
      'lands passing PRs squashed, shows status and ONE comment on each PR, closes them, and cleans up its branches',
      scoped(async () => {
        const { gh, server, NAME } = await lane();
        const { one, two } = await twoPrs(server, gh, {
          prs: [
            { head: 'one', title: 'First feature', user: 'alice', files: { 'a.txt': 'a\n' } },
            { head: 'two', title: 'Second feature', user: 'bob', files: { 'b.txt': 'b\n' } },
          ],
          queue: { concurrency: 2 },
        });
        expect((await waitFor(server, gh, two.number, settled)).state).toBe('merged');
        const first = await waitFor(server, gh, one.number, settled);
        expect(first, `#1 ${first.state} (${first.stateReason ?? ''})`).toMatchObject({
          state: 'merged',
          prTitle: 'First feature',
        });
        expect(await messages(gh)).toEqual(['Second feature (#2)', 'First feature (#1)', expect.any(String)]);

        for (const pr of [one, two]) {
          const ours = () =>
            gh.comments(OWNER, NAME, pr.number).filter((x) => x.body.includes('railyard:merge-queue'));
          await until(
            `#${pr.number} closed`,
            () => gh.getPullRequest(OWNER, NAME, pr.number).state === 'closed',
          );
          await until(
            `the comment on #${pr.number} says merged`,
            () => ours().length === 1 && /merged/.test(ours()[0].body),
          );
          await until(
            `success status on #${pr.number}`,
            () =>
              gh
                .statuses(OWNER, NAME, pr.headSha)
                .filter((x) => x.context === 'railyard/merge-queue')
                .at(-1)?.state === 'success',
          );
          const comments = gh
            .comments(OWNER, NAME, pr.number)
            .filter((x) => x.body.includes('railyard:merge-queue'));
          // ONE comment, edited: it names the commit the PR landed as.
          const landed = (await gh.log(OWNER, NAME, 'main')).find((c) =>
            c.message.includes(`(#${pr.number})`),
          )!;
          expect(comments[0].body).toContain(landed.sha);
        }
        await until(
          'test branches deleted and draft PRs closed',
          async () =>
            (await testBranches(gh)).length === 0 &&
            gh
              .pullRequests(OWNER, NAME)
              .every((p) => !p.head.startsWith('railyard-merge/') || p.state === 'closed'),
        );
        // Draft PRs were opened for the test branches (createPrsForTestingBranches defaults on).
        expect(
          gh.pullRequests(OWNER, NAME).some((p) => p.head.startsWith('railyard-merge/') && p.draft),
        ).toBe(true);
        await gh.idle();
        expect(gh.schemaViolations).toEqual([]);
        expect(server.output()).not.toContain(GH_TOKEN);
        // Nothing under the data dir holds a secret (database, bare cache and its config, state.json).
        const files = readdirSync(server.dataDir, { recursive: true, encoding: 'utf8' }).map((f) =>
          join(server.dataDir, f),
        );
        expect(files.some((f) => f.endsWith('config'))).toBe(true);
        for (const f of files.filter((x) => statSync(x).isFile())) {
          const text = readFileSync(f, 'latin1');
          expect(text.includes(GH_TOKEN) || text.includes(WEBHOOK_SECRET), f).toBe(false);
          expect(text.includes(Buffer.from(`x-access-token:${GH_TOKEN}`).toString('base64')), f).toBe(false);
        }
        expect(server.output()).not.toContain(WEBHOOK_SECRET);
        expect(gh.deliveries.filter((d) => d.status === 401)).toEqual([]);
      }),
    );

    it.sequential(
      'a failing PR never reaches the target and gets a failure status; the PR behind it lands',
      scoped(async () => {
        const { gh, server, NAME } = await lane();
        // A test branch names the PRs its commit holds: a run containing the broken PR (#1) fails.
        gh.setCi(OWNER, NAME, (push) => [
          { name: 'build', conclusion: 'success', delayMs: 20 },
          { name: 'test', conclusion: prsIn(push.branch).includes(1) ? 'failure' : 'success', delayMs: 40 },
        ]);
        const { one: broken, two: fine } = await twoPrs(server, gh, {
          prs: [
            { head: 'broken', title: 'Breaks the build', files: { 'broken.txt': 'x\n' } },
            { head: 'fine', title: 'Fine', files: { 'fine.txt': 'y\n' } },
          ],
          queue: { concurrency: 2, createPrsForTestingBranches: false },
          submit: 'both',
        });
        expect(await waitFor(server, gh, broken.number, settled)).toMatchObject({
          state: 'failed',
          stateReason: 'TEST_RUN_REQUIRED_STATUS_FAILED',
        });
        expect((await waitFor(server, gh, fine.number, settled)).state).toBe('merged');
        expect(await messages(gh)).toEqual(['Fine (#2)', expect.any(String)]);
        await until('failure status on the broken PR', () =>
          gh
            .statuses(OWNER, NAME, broken.headSha)
            .some((s) => s.context === 'railyard/merge-queue' && s.state === 'failure'),
        );
        const comment = gh
          .comments(OWNER, NAME, broken.number)
          .find((c) => c.body.includes('railyard:merge-queue'))!;
        expect(comment.body).toContain('TEST_RUN_REQUIRED_STATUS_FAILED');
        expect(gh.getPullRequest(OWNER, NAME, broken.number).state).toBe('open');
      }),
    );

    it.sequential(
      'merge_commit: the target gets the tested merge commits and GitHub sees the PR merged by itself',
      scoped(async () => {
        const { gh, server, NAME } = await lane();
        const pr = await onePr(server, gh, { queue: { mergeMethod: 'merge_commit' } });
        expect((await waitFor(server, gh, pr.number, settled)).state).toBe('merged');
        const log = await gh.log(OWNER, NAME, 'main');
        expect(log[0].message).toMatch(/^Merge pull request #1: Feature/);
        expect(log[0].parents[1]).toBe(pr.headSha);
        await until('GitHub shows the PR merged', () => gh.getPullRequest(OWNER, NAME, pr.number).merged);
      }),
    );

    it.sequential(
      'parallel lanes: PRs with disjoint impacted targets test and land independently',
      scoped(async () => {
        // #1's CI reports only when the test says so (below): fixed delays swap the lanes on a loaded machine.
        const { gh, server } = await world({ ciStartSeconds: 120 });
        gh.setCi(OWNER, NAME, (push) =>
          push.branch.includes('pr-1/') ? [] : [{ name: 'ci', conclusion: 'success' }],
        );
        const { one: a, two: b } = await twoPrs(server, gh, {
          prs: [
            { head: 'a', title: 'Web', files: { 'web.txt': 'w\n' } },
            { head: 'b', title: 'Api', files: { 'api.txt': 'a\n' } },
          ],
          queue: { mode: 'parallel', createPrsForTestingBranches: false },
          impactedTargets: [['web'], ['api']],
          submit: 'both',
        });
        // The slow lane (#1) does not hold the fast one (#2).
        expect((await waitFor(server, gh, b.number, settled)).state).toBe('merged');
        const slow = await waitFor(server, gh, a.number, () => true);
        expect(slow, `#1 is ${slow.state} (${slow.stateReason ?? ''})`).toMatchObject({ state: 'testing' });
        // Now #1's CI passes: it lands on top of #2, which landed meanwhile (not a restart, not a failure).
        const octokit = new Octokit({ auth: GH_TOKEN, baseUrl: gh.apiUrl });
        await octokit.request('POST /repos/{owner}/{repo}/statuses/{sha}', {
          owner: OWNER,
          repo: NAME,
          sha: await waitForTestCommit(server, gh, slow.testRunId),
          state: 'success',
          context: 'ci',
        });
        const landed = await waitFor(server, gh, a.number, settled);
        expect(landed, `#1 ${landed.state} (${landed.stateReason ?? ''})`).toMatchObject({
          state: 'merged',
          testRunId: slow.testRunId,
        });
        expect(await messages(gh)).toEqual(['Web (#1)', 'Api (#2)', expect.any(String)]);
      }),
    );
  });

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

  describe.concurrent('lane 3: pushes, commands, webhooks', () => {
    const lane = sharedLane();

    it.sequential(
      'a push to a queued PR cancels it (PR_PUSHED_TO), closing cancels (PR_CLOSED), closed and merged PRs are refused',
      scoped(async () => {
        const { gh, server, NAME } = await lane();
        gh.setCi(OWNER, NAME, () => [{ name: 'ci', conclusion: 'success', delayMs: 1500 }]);
        const { one, two } = await twoPrs(server, gh, {
          queue: { concurrency: 2, createPrsForTestingBranches: false },
          submit: 'both',
        });
        await waitFor(server, gh, one.number, (p) => p.state === 'testing');
        await gh.pushToPullRequest(OWNER, NAME, one.number, { 'one.txt': 'one, changed\n' });
        await gh.closePullRequest(OWNER, NAME, two.number);
        expect(await waitFor(server, gh, one.number, settled)).toMatchObject({
          state: 'cancelled',
          stateReason: 'PR_PUSHED_TO',
        });
        expect(await waitFor(server, gh, two.number, settled)).toMatchObject({
          state: 'cancelled',
          stateReason: 'PR_CLOSED',
        });
        // Nothing landed: the poll deletes a run's test branch only once no landing of it is under way.
        await until('the test branches deleted', async () => (await testBranches(gh)).length === 0);
        expect(await messages(gh)).toHaveLength(1);
        // The verdict goes on the head the queue had.
        await until('error status on the old head', () =>
          gh
            .statuses(OWNER, NAME, one.headSha)
            .some((s) => s.context === 'railyard/merge-queue' && s.state === 'error'),
        );

        const closed = await call(server, 'submitPullRequest', {
          repo: repoOf(gh),
          targetBranch: 'main',
          pr: { number: two.number },
        });
        expect(closed.status).toBe(400);
        expect(closed.text).toMatch(/#2 is closed/);
        const three = await gh.createPullRequest(OWNER, NAME, {
          head: 'three',
          title: 'Three',
          files: { 'three.txt': '3\n' },
        });
        // Merged by hand on GitHub.
        const octokit = new Octokit({ auth: GH_TOKEN, baseUrl: gh.apiUrl });
        await octokit.request('PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge', {
          owner: OWNER,
          repo: NAME,
          pull_number: three.number,
          sha: three.headSha,
        });
        await until('#3 merged by hand', () => gh.getPullRequest(OWNER, NAME, three.number).merged);
        const merged = await call(server, 'submitPullRequest', {
          repo: repoOf(gh),
          targetBranch: 'main',
          pr: { number: three.number },
        });
        expect(merged.status).toBe(400);
        expect(merged.text).toMatch(/#3 is merged/);
      }),
    );

    it.sequential(
      '/railyard commands from users with write permission; others are ignored',
      scoped(async () => {
        const { gh, server, NAME, output } = await lane();
        gh.setCi(OWNER, NAME, () => [{ name: 'ci', conclusion: 'success', delayMs: 1500 }]);
        gh.setPermission(OWNER, NAME, 'writer', 'write');
        gh.setPermission(OWNER, NAME, 'reader', 'read');
        const { one, two } = await twoPrs(server, gh, {
          queue: { createPrsForTestingBranches: false },
          submit: 'none',
        });
        await gh.comment(OWNER, NAME, one.number, 'reader', '/railyard merge');
        // The server has read the command and GitHub's answer on the reader's permission.
        await until("the reader's command ignored", () =>
          /\/railyard merge on #1 by reader ignored: no write permission/.test(output()),
        );
        expect(
          (
            await call(server, 'getSubmittedPullRequest', {
              repo: repoOf(gh),
              targetBranch: 'main',
              pr: { number: one.number },
            })
          ).status,
        ).toBe(404);
        await gh.comment(OWNER, NAME, one.number, 'writer', 'Ship it\n/railyard merge --priority high');
        await gh.comment(OWNER, NAME, two.number, 'writer', '/railyard merge');
        await until('both PRs submitted by command', async () => {
          const a = await call(server, 'getSubmittedPullRequest', {
            repo: repoOf(gh),
            targetBranch: 'main',
            pr: { number: one.number },
          });
          const b = await call(server, 'getSubmittedPullRequest', {
            repo: repoOf(gh),
            targetBranch: 'main',
            pr: { number: two.number },
          });
          return a.status === 200 && b.status === 200 && b.json.state !== 'not_ready';
        });
        expect((await waitFor(server, gh, one.number, () => true)).priorityName).toBe('high');
        await gh.comment(OWNER, NAME, two.number, 'writer', '/railyard cancel');
        expect(await waitFor(server, gh, two.number, settled)).toMatchObject({
          state: 'cancelled',
          stateReason: 'USER_REQUESTED',
        });
        expect((await waitFor(server, gh, one.number, settled)).state).toBe('merged');
      }),
    );

    it.sequential(
      'an outside push to the target during a run restarts it (MANUAL_PUSH_TO_TARGET_BRANCH) on the new head',
      scoped(async () => {
        const { gh, server, NAME } = await lane();
        gh.setCi(OWNER, NAME, () => [{ name: 'ci', conclusion: 'success', delayMs: 1500 }]);
        const pr = await onePr(server, gh);
        const testing = await waitForTesting(server, gh, pr.number);
        // Pushed once the test commit is built on the old head (pushed before, the run is simply built on the new one).
        await waitForTestCommit(server, gh, testing.testRunId);
        await gh.pushCommit(
          OWNER,
          NAME,
          'main',
          { 'hotfix.txt': 'fix\n' },
          { message: 'Hotfix pushed by hand' },
        );
        const restarted = await waitFor(server, gh, pr.number, (p) => p.testRunId !== testing.testRunId);
        expect(restarted.stateReason).toBe('MANUAL_PUSH_TO_TARGET_BRANCH');
        expect(await waitFor(server, gh, pr.number, settled)).toMatchObject({ state: 'merged' });
        expect(await messages(gh)).toEqual(['Feature (#1)', 'Hotfix pushed by hand', expect.any(String)]);
      }),
    );

    it.sequential(
      'a PR whose mergeability GitHub is still computing after submit is read again by itself and lands, without waiting for the poll',
      scoped(async () => {
        const gh = await emulator();
        gh.createRepo(OWNER, NAME, { files: { 'README.md': 'app\n' } });
        // GitHub answers mergeable: null for 1.5 s, longer than submit asks (100 + 200 + 400 ms).
        gh.setMergeabilityDelay(OWNER, NAME, 1500);
        // The default poll is 30 s: only the re-read of PRs GitHub had no answer for can land it in time.
        const server = await startRailyard(gh, {
          webhooks: true,
          dataDir: tempDir('railyard-gh-'),
          pollSeconds: 60,
        });
        const slow = await gh.createPullRequest(OWNER, NAME, {
          head: 'slow',
          title: 'Slow',
          files: { 's.txt': 's\n' },
        });
        await createQueue(server, gh, { concurrency: 1, createPrsForTestingBranches: false });
        await submit(server, gh, slow.number);
        // Nobody reads the PR through the API meanwhile (that would ask GitHub too).
        // Within 30 s, half the 60 s poll: a whole CI run at 2 CPUs once took over 15 s (2026-12-03).
        await until('#1 landed', async () => (await messages(gh)).includes('Slow (#1)'), 30_000);
        const reads = gh.requests.filter(
          (r) => r.method === 'GET' && r.path === `/repos/${OWNER}/${NAME}/pulls/1`,
        );
        // (9: a webhook payload not provably newer than the last read is checked by one more read.)
        expect(reads.length).toBeLessThanOrEqual(9);
        expect(await waitFor(server, gh, slow.number, settled)).toMatchObject({ state: 'merged' });
      }),
    );

    it.sequential(
      'a draft PR stays not_ready until it is marked ready',
      scoped(async () => {
        const { gh, server, NAME } = await lane();
        const pr = await onePr(server, gh, { draft: true });
        // The queue has decided (its status on the head says why it waits), and it waits.
        await until('the status says the PR waits', () =>
          gh
            .statuses(OWNER, NAME, pr.headSha)
            .some(
              (s) =>
                s.context === 'railyard/merge-queue' &&
                /^Submitted, waiting until it is ready/.test(s.description ?? ''),
            ),
        );
        expect((await waitFor(server, gh, pr.number, () => true)).state).toBe('not_ready');
        await gh.setDraft(OWNER, NAME, pr.number, false);
        expect((await waitFor(server, gh, pr.number, settled)).state).toBe('merged');
      }),
    );

    it.sequential(
      'merge conflicts: a PR that conflicts with the one ahead fails with START_TEST_RUN_MERGE_CONFLICT',
      scoped(async () => {
        const { gh, server } = await lane({ files: { 'shared.txt': 'base\n' } });
        // #1 is in the line before #2 is submitted (twoPrs' default), so #2 is the one that conflicts.
        const { one, two } = await twoPrs(server, gh, {
          prs: [
            { head: 'one', title: 'One', files: { 'shared.txt': 'one\n' } },
            { head: 'two', title: 'Two', files: { 'shared.txt': 'two\n' } },
          ],
          queue: { concurrency: 2, createPrsForTestingBranches: false },
        });
        expect((await waitFor(server, gh, one.number, settled)).state).toBe('merged');
        expect(await waitFor(server, gh, two.number, settled)).toMatchObject({
          state: 'failed',
          stateReason: 'START_TEST_RUN_MERGE_CONFLICT',
        });
        expect(await messages(gh)).toEqual(['One (#1)', expect.any(String)]);
      }),
    );

    it.sequential(
      'a bad signature gets 401 and changes nothing; a redelivered webhook is handled once',
      scoped(async () => {
        const { gh, server, NAME, output } = await lane();
        gh.setPermission(OWNER, NAME, 'writer', 'write');
        const pr = await onePr(server, gh, { submit: false });
        const hook = server.url.replace(/\/v1$/, '/webhooks/github');
        const body = JSON.stringify({
          action: 'created',
          issue: { number: pr.number, pull_request: { url: 'x' } },
          comment: { id: 1, body: '/railyard merge', user: { login: 'writer' } },
          repository: { name: NAME, owner: { login: OWNER } },
        });
        const send = (signature: string) =>
          fetch(hook, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'x-github-event': 'issue_comment',
              'x-github-delivery': 'forged-1',
              'x-hub-signature-256': signature,
            },
            body,
          });
        const forged = await send(
          'sha256=' + createHmac('sha256', 'not-the-secret').update(body).digest('hex'),
        );
        expect(forged.status).toBe(401);
        expect(await forged.text()).toMatch(/x-hub-signature-256/);
        expect((await send('')).status).toBe(401);
        expect(
          (
            await call(server, 'getSubmittedPullRequest', {
              repo: repoOf(gh),
              targetBranch: 'main',
              pr: { number: pr.number },
            })
          ).status,
        ).toBe(404);

        // Signed correctly: the command runs; the same delivery again is not handled twice. (202, not
        // "handled already": neither refused delivery was recorded.)
        const good = await send('sha256=' + createHmac('sha256', WEBHOOK_SECRET).update(body).digest('hex'));
        expect(good.status).toBe(202);
        await until(
          'the command submitted the PR',
          async () =>
            (
              await call(server, 'getSubmittedPullRequest', {
                repo: repoOf(gh),
                targetBranch: 'main',
                pr: { number: pr.number },
              })
            ).status === 200,
        );
        expect((await waitFor(server, gh, pr.number, settled)).state).toBe('merged');
        // The refused deliveries never acted: the command's permission was asked once (for the signed
        // one), and the signed one was not taken for a comment handled already.
        const asked = gh.requests.filter(
          (r) => r.method === 'GET' && r.path === `/repos/${OWNER}/${NAME}/collaborators/writer/permission`,
        );
        expect(asked).toHaveLength(1);
        expect(output()).not.toMatch(/ignored: it was handled already/);
        const again = await send('sha256=' + createHmac('sha256', WEBHOOK_SECRET).update(body).digest('hex'));
        expect(again.status).toBe(200);
        expect(await again.text()).toMatch(/handled already/);
        const list = await ok(server, 'listPullRequests', { repo: repoOf(gh), targetBranch: 'main' });
        expect(list.pullRequests).toHaveLength(1);
        // Deliveries from the emulator, redelivered, are accepted once.
        const first = gh.deliveries.find((d) => d.status === 202)!;
        expect(await gh.redeliver(first.id)).toBe(200);
      }),
    );

    it.sequential(
      '/railyard merge --priority asap queues nothing and answers with the allowed values',
      scoped(async () => {
        const { gh, server, NAME } = await lane();
        gh.setPermission(OWNER, NAME, 'writer', 'write');
        const pr = await onePr(server, gh, { submit: false });
        await gh.comment(OWNER, NAME, pr.number, 'writer', '/railyard merge --priority asap');
        await until('the command answered', async () => gh.comments(OWNER, NAME, pr.number).length > 1);
        const answer = gh.comments(OWNER, NAME, pr.number).at(-1)!.body;
        expect(answer).toContain('--priority asap');
        expect(answer).toMatch(/urgent, high, medium, low or a number from 0 to 255/);
        const read = await call(server, 'getSubmittedPullRequest', {
          repo: repoOf(gh),
          targetBranch: 'main',
          pr: { number: pr.number },
        });
        expect(read.status).toBe(404);
        // A good value still works, in any case.
        await gh.comment(OWNER, NAME, pr.number, 'writer', '/railyard merge --priority URGENT');
        const submitted = () =>
          call(server, 'getSubmittedPullRequest', {
            repo: repoOf(gh),
            targetBranch: 'main',
            pr: { number: pr.number },
          });
        await until('submitted by the second command', async () => (await submitted()).status === 200);
        expect((await submitted()).json.priorityName).toBe('urgent');
      }),
    );
  });
});

void API_TOKEN;
