/**
 * `railyard serve --github` asks GitHub only what can change the answer, and users see the same:
 * polling alone (no webhooks), a failing commit status is still acted on once the check runs
 * finish, though the statuses are not read while a check run still runs; a waiting PR the poll's
 * list shows unchanged is not read alone while the target has not moved, yet a close is noticed
 * within a poll; a long test run shows `testing` in the PR's comment; PRs waiting behind landings
 * are merged onto the new target in the cache, not read again per landing. The real built server
 * against the GitHub emulator; each test has its own emulator and server (`scoped`).
 */
import { describe, expect, it } from 'vitest';
import type { GitHubEmulator } from '../support/github/index.js';
import {
  createQueue,
  githubWorld,
  NAME,
  OWNER,
  ourComment,
  scoped,
  settled,
  submit,
  until,
  waitFor,
  waitForTesting,
} from './github-harness.js';

const world = () => githubWorld({ webhooks: false, pollSeconds: 0.5 });
/** GitHub requests for `path` (exact) since `from` (ms since the epoch). */
const reads = (gh: GitHubEmulator, path: string, from = 0) =>
  gh.requests.filter((r) => r.method === 'GET' && r.path === path && r.at >= from).length;

describe.concurrent('serve --github: requests that cannot change the answer are not made', () => {
  it(
    'polling: a commit status that fails while a check run still runs fails the run once the run ends; the statuses are read once, not every poll',
    scoped(async () => {
      const { gh, server } = await world();
      gh.setCi(OWNER, NAME, (push) =>
        push.branch.startsWith('railyard-merge/')
          ? [
              { name: 'build', conclusion: 'success', delayMs: 4000 },
              { name: 'lint', conclusion: 'failure', delayMs: 100, kind: 'status' },
            ]
          : [],
      );
      const pr = await gh.createPullRequest(OWNER, NAME, {
        head: 'one',
        title: 'One',
        files: { 'one.txt': '1\n' },
      });
      await createQueue(server, gh);
      await submit(server, gh, pr.number);
      await waitForTesting(server, gh, pr.number);
      const done = await waitFor(server, gh, pr.number, settled, 60_000);
      expect(done.state).toBe('failed');
      expect(done.stateReason).toBe('TEST_RUN_REQUIRED_STATUS_FAILED');
      await until('the comment names the failed status', () =>
        /Failed checks: .*`lint`/.test(ourComment(gh, pr.number)),
      );
      expect(gh.getPullRequest(OWNER, NAME, pr.number).state).toBe('open'); // never landed
      const testCommits = new Set(
        gh.requests
          .filter((r) => /\/commits\/[0-9a-f]{40}\/check-runs$/.test(r.path))
          .map((r) => r.path.split('/')[5]),
      );
      expect(testCommits.size).toBe(1);
      const [commit] = [...testCommits];
      // The check runs were polled every 0.5 s for 4 s; the statuses only once the check run ended.
      expect(reads(gh, `/repos/${OWNER}/${NAME}/commits/${commit}/check-runs`)).toBeGreaterThanOrEqual(3);
      expect(reads(gh, `/repos/${OWNER}/${NAME}/commits/${commit}/status`)).toBeLessThanOrEqual(2);
    }),
  );

  it(
    'polling: a PR waiting behind a long run is not read alone every poll while nothing moved, yet its close is noticed within a poll; the run shows testing in its comment',
    scoped(async () => {
      const { gh, server } = await world();
      gh.setCi(OWNER, NAME, (push) =>
        push.branch.startsWith('railyard-merge/')
          ? [{ name: 'ci', conclusion: 'success', delayMs: 8000 }]
          : [],
      );
      const one = await gh.createPullRequest(OWNER, NAME, {
        head: 'one',
        title: 'One',
        files: { 'one.txt': '1\n' },
      });
      const two = await gh.createPullRequest(OWNER, NAME, {
        head: 'two',
        title: 'Two',
        files: { 'two.txt': '2\n' },
      });
      await createQueue(server, gh, { concurrency: 1 });
      await submit(server, gh, one.number);
      await waitForTesting(server, gh, one.number);
      await submit(server, gh, two.number);
      await waitFor(server, gh, two.number, (p) => p.state === 'pending');
      const waiting = Date.now();
      // The long run's progress reaches its comment (a progress edit waits only for the state to settle).
      await until('#1 shows testing', () => ourComment(gh, one.number).includes('**testing**'), 15_000);
      await new Promise((r) => setTimeout(r, 3000)); // six polls with #2 waiting, main unchanged
      expect(reads(gh, `/repos/${OWNER}/${NAME}/pulls/${two.number}`, waiting)).toBeLessThanOrEqual(1);
      expect(reads(gh, `/repos/${OWNER}/${NAME}/pulls`, waiting)).toBeGreaterThanOrEqual(3); // the poll's list
      const closedAt = Date.now();
      await gh.closePullRequest(OWNER, NAME, two.number);
      const gone = await waitFor(server, gh, two.number, settled, 10_000);
      expect(gone).toMatchObject({ state: 'cancelled', stateReason: 'PR_CLOSED' });
      expect(Date.now() - closedAt).toBeLessThan(5000);
      expect((await waitFor(server, gh, one.number, settled, 60_000)).state).toBe('merged');
    }),
  );
  it(
    'polling: PRs waiting behind landings are not read again for each landing (merged onto the new target in the cache); one that now conflicts still waits with the file and the landed PR named',
    scoped(async () => {
      const { gh, server } = await world();
      gh.setCi(OWNER, NAME, (push) =>
        push.branch.startsWith('railyard-merge/')
          ? [{ name: 'ci', conclusion: 'success', delayMs: 800 }]
          : [],
      );
      const pr = (head: string, files: Record<string, string>) =>
        gh.createPullRequest(OWNER, NAME, { head, title: head, files });
      const one = await pr('one', { 'f.txt': 'one\n' });
      const two = await pr('two', { 'two.txt': '2\n' });
      const three = await pr('three', { 'three.txt': '3\n' });
      const four = await pr('four', { 'f.txt': 'four\n' }); // conflicts with #1 once it lands
      await createQueue(server, gh, { concurrency: 1, createPrsForTestingBranches: false });
      for (const p of [one, two, three]) await submit(server, gh, p.number);
      // Watched on the emulator: a read of the queue's API reads the PR from GitHub (fresh answers).
      await until(
        '#1, #2 and #3 merged',
        () => [one, two, three].every((p) => gh.getPullRequest(OWNER, NAME, p.number).state !== 'open'),
        60_000,
      );
      // #3 waited through two landings: read when submitted and before landing (GitHub computed its
      // mergeability when it was opened), not after each landing ahead of it.
      expect(reads(gh, `/repos/${OWNER}/${NAME}/pulls/${three.number}`)).toBeLessThanOrEqual(3);
      await submit(server, gh, four.number);
      await waitFor(server, gh, four.number, (p) => p.state === 'not_ready', 30_000);
      await until('#4 names the file and #1', () =>
        /conflicts with main in f\.txt \(changed by [0-9a-f]{7} '[^']*' \/ #1\)/.test(
          ourComment(gh, four.number),
        ),
      );
    }),
    90_000,
  );
});
