/**
 * What the `serve --github` queue tests share (github-queue-landing.test.ts, github-queue-ci.test.ts
 * and github-queue-events.test.ts): a test's own emulator and server (`world`, for tests that need
 * server flags of their own), the PRs a test branch holds, the target's commit messages, waiting
 * for the server's git polls, and the queue's test branches.
 */
import { emulator, NAME, OWNER, repoName, startRailyard, tempDir, until } from './github-harness.js';

export async function world(opts: { ciStartSeconds?: number; files?: Record<string, string> } = {}) {
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
export const prsIn = (branch: string): number[] => {
  const m = /^railyard-merge\/pr-([\d-]+)\//.exec(branch);
  return m ? m[1]!.split('-').map(Number) : [];
};
export const messages = async (gh: Awaited<ReturnType<typeof emulator>>) =>
  (await gh.log(OWNER, repoName(gh), 'main')).map((c) => c.message.trim().split('\n')[0]);
/**
 * Waits until `n` git conversations with the repository began after `since` and ended (the server's
 * poll reads the branches with `git ls-remote` one round after another, each opening with one
 * `GET /info/refs`): at least `n - 1` polls have seen their answer.
 */
export const gitReadsAfter = (gh: Awaited<ReturnType<typeof emulator>>, since: number, n: number) =>
  until(
    `${n} git reads of the repository`,
    () =>
      gh.gitRequests.filter(
        (r) =>
          r.repo === repoName(gh) && r.at >= since && r.path.startsWith('/info/refs?service=git-upload-pack'),
      ).length >= n,
  );
export const testBranches = async (gh: Awaited<ReturnType<typeof emulator>>) =>
  (await gh.branches(OWNER, repoName(gh))).filter((b) => b.startsWith('railyard-merge/'));
