/**
 * `serve --github-merge-api` (issue 21 item 9): where the target's rules let only Railyard push,
 * a squash PR tested alone on the current target lands through GitHub's merge API with the pinned
 * head, so GitHub shows it "Merged" (and closes what "Fixes #n" names); the target then holds
 * exactly the tested tree on the tested parent. Without the flag, or when it is not safe (a batch),
 * the tested commit lands by the compare-and-swap ref update and the PR is closed, as before.
 */
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import {
  createQueue,
  emulator,
  NAME,
  OWNER,
  scoped,
  settled,
  startRailyard,
  submit,
  tempDir,
  until,
  waitFor,
  waitForTestCommit,
  waitForTesting,
} from './github-harness.js';

async function world(mergeApi: boolean) {
  const gh = await emulator();
  const { dir } = gh.createRepo(OWNER, NAME, { files: { 'README.md': 'app\n' } });
  gh.setCi(OWNER, NAME, () => [{ name: 'ci', conclusion: 'success', delayMs: 300 }]);
  // Only Railyard may push to main (the rule the flag stands for).
  gh.protectBranch(OWNER, NAME, 'main', { requiredApprovals: 0, bypass: ['railyard-bot'] });
  const server = await startRailyard(gh, {
    webhooks: true,
    dataDir: tempDir('railyard-gh-'),
    extraArgs: mergeApi ? ['--github-merge-api'] : [],
  });
  return { gh, server, dir };
}

const tree = (dir: string, rev: string) =>
  execFileSync('git', ['--git-dir', dir, 'rev-parse', `${rev}^{tree}`], { encoding: 'utf8' }).trim();

describe('serve --github-merge-api', () => {
  // Each test has its own emulator, server and cleanups (`scoped`): the three run side by side.
  describe.concurrent('lane 1', () => {
    it.sequential('lands a squash PR through the merge API: GitHub shows it merged, main holds the tested tree on the tested parent', scoped(async () => {
      const { gh, server, dir } = await world(true);
      const pr = await gh.createPullRequest(OWNER, NAME, { head: 'feat', title: 'Feature', files: { 'f.txt': 'f\n' } });
      await createQueue(server, gh, { createPrsForTestingBranches: false });
      const before = await gh.branchSha(OWNER, NAME, 'main');
      await submit(server, gh, pr.number);
      const testing = await waitForTesting(server, gh, pr.number);
      const tested = await waitForTestCommit(server, gh, testing.testRunId);
      expect(await waitFor(server, gh, pr.number, settled)).toMatchObject({ state: 'merged' });
      const view = gh.getPullRequest(OWNER, NAME, pr.number);
      expect(view).toMatchObject({ state: 'closed', merged: true });
      const log = await gh.log(OWNER, NAME, 'main');
      expect(log[0]!.message).toContain('Feature');
      expect(log[1]!.sha).toBe(before);
      expect(tree(dir, log[0]!.sha)).toBe(tree(dir, tested));
      // Not closed by a PATCH of Railyard's: merged by GitHub.
      expect(gh.requests.filter((r) => r.method === 'PATCH' && r.path.endsWith(`/pulls/${pr.number}`))).toEqual([]);
      await until('the comment names the commit GitHub made', () =>
        gh.comments(OWNER, NAME, pr.number).some((c) => c.body.includes('railyard:merge-queue') && c.body.includes(log[0]!.sha)),
      );
    }));
  });

  describe.concurrent('lane 2', () => {
    it.sequential("GitHub's push webhook of the merge, heard before the merge API's answer, does not fail the merged PR (both read main into the cache)", scoped(async () => {
      const { gh, server } = await world(true);
      // The merge's webhooks arrive before its answer, and every git read is slow: the webhook's
      // fetch of main is still running when the landing fetches main to check what GitHub made.
      gh.setMergeAnswerDelay(OWNER, NAME, 500);
      gh.setGitReadDelay(OWNER, NAME, 1500);
      const pr = await gh.createPullRequest(OWNER, NAME, { head: 'feat', title: 'Feature', files: { 'f.txt': 'f\n' } });
      await createQueue(server, gh, { createPrsForTestingBranches: false });
      await submit(server, gh, pr.number);
      expect(await waitFor(server, gh, pr.number, settled, 60_000)).toMatchObject({ state: 'merged' });
      expect(gh.getPullRequest(OWNER, NAME, pr.number)).toMatchObject({ state: 'closed', merged: true });
      expect(server.output()).not.toMatch(/cannot lock ref|merge of run .* failed/);
    }));
  });

  describe.concurrent('lane 3', () => {
    it.sequential('without the flag the tested commit itself lands and the PR is closed (GitHub shows it Closed)', scoped(async () => {
      const { gh, server } = await world(false);
      const pr = await gh.createPullRequest(OWNER, NAME, { head: 'feat', title: 'Feature', files: { 'f.txt': 'f\n' } });
      await createQueue(server, gh, { createPrsForTestingBranches: false });
      await submit(server, gh, pr.number);
      const testing = await waitForTesting(server, gh, pr.number);
      const tested = await waitForTestCommit(server, gh, testing.testRunId);
      expect((await waitFor(server, gh, pr.number, settled)).state).toBe('merged');
      expect(await gh.branchSha(OWNER, NAME, 'main')).toBe(tested);
      await until('the PR is closed', () => gh.getPullRequest(OWNER, NAME, pr.number).state === 'closed');
      expect(gh.getPullRequest(OWNER, NAME, pr.number).merged).toBe(false);
    }));
  });
});
