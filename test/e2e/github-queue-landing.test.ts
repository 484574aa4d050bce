/**
 * `railyard serve --github` end to end, with webhooks: the real built server process against the
 * GitHub emulator (REST, smart HTTP git, CI, signed webhooks). Lane 1 of three (the others:
 * github-queue-ci.test.ts, github-queue-events.test.ts): the slowest git (reads held 1.5 s), then
 * the PRs that land (squashed, merge commits, a failing PR, parallel lanes).
 * The tests of the lane run side by side: most of a test's time is waiting (CI delays, held git
 * answers, polls), not CPU. Those that need no server flags of their own share one emulator and one
 * server (`sharedLane`, a repository each); each test has its own cleanups (`scoped`) and
 * repository, and those that need server flags of their own (`world`) also their own emulator and
 * server. No test sleeps a fixed time: a "nothing happened" waits for a sign that the server had its
 * chance (its status, its log, its polls).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Octokit } from '@octokit/core';
import { describe, expect, it } from 'vitest';
import {
  GH_TOKEN,
  NAME,
  onePr,
  OWNER,
  scoped,
  sharedLane,
  settled,
  twoPrs,
  until,
  WEBHOOK_SECRET,
  waitFor,
  waitForTestCommit,
  waitForTesting,
} from './github-harness.js';
import { messages, prsIn, testBranches, world } from './github-queue-helpers.js';

describe('serve --github with webhooks', () => {
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
});
