/**
 * `railyard serve --github` end to end, with webhooks: the real built server process against the
 * GitHub emulator (REST, smart HTTP git, CI, signed webhooks). Lane 3 of three (the others:
 * github-queue-landing.test.ts, github-queue-ci.test.ts): pushes to PRs and to the target,
 * /railyard commands, drafts, conflicts, mergeability still computing and webhook signatures.
 * The tests of the lane run side by side: most of a test's time is waiting (CI delays, held git
 * answers, polls), not CPU. Those that need no server flags of their own share one emulator and one
 * server (`sharedLane`, a repository each); each test has its own cleanups (`scoped`) and
 * repository, and those that need server flags of their own (`world`) also their own emulator and
 * server. No test sleeps a fixed time: a "nothing happened" waits for a sign that the server had its
 * chance (its status, its log, its polls).
 */
import { createHmac } from 'node:crypto';
import { Octokit } from '@octokit/core';
import { describe, expect, it } from 'vitest';
import { call, ok } from '../server/helpers.js';
import {
  createQueue,
  emulator,
  GH_TOKEN,
  NAME,
  onePr,
  OWNER,
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
import { messages, testBranches } from './github-queue-helpers.js';

describe('serve --github with webhooks', () => {
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
