/**
 * Stacked PRs on GitHub, end to end: the real built server (`serve --github`, webhooks on)
 * against the GitHub emulator. A PR whose base branch is another open PR's head branch is stacked
 * on it; the stack is submitted from its top, tested and landed as one unit, bottom first.
 * Each test has its own emulator, server and cleanups (`scoped`): the two run side by side.
 */
import { describe, expect, it } from 'vitest';
import {
  createQueue,
  emulator,
  githubWorld,
  NAME,
  OWNER,
  scoped,
  settled,
  submit,
  until,
  waitFor,
} from './github-harness.js';

async function world() {
  // Webhooks drive it: polled every second, not five times a second (each poll is a git ls-remote).
  const { gh, server } = await githubWorld({ webhooks: true, pollSeconds: 1 }, 'railyard-gh-stacks-');
  // #1 on main, #2 on #1's branch, #3 on #2's branch.
  const one = await gh.createPullRequest(OWNER, NAME, {
    head: 'one',
    title: 'Add a',
    files: { 'a.txt': 'a\n' },
  });
  const two = await gh.createPullRequest(OWNER, NAME, {
    head: 'two',
    base: 'one',
    title: 'Polish a, add b',
    files: { 'a.txt': 'a, polished\n', 'b.txt': 'b\n' },
  });
  const three = await gh.createPullRequest(OWNER, NAME, {
    head: 'three',
    base: 'two',
    title: 'Add c',
    files: { 'c.txt': 'c\n' },
  });
  await createQueue(server, gh, { createPrsForTestingBranches: false });
  return { gh, server, prs: [one.number, two.number, three.number] };
}

const messages = async (gh: Awaited<ReturnType<typeof emulator>>) =>
  (await gh.log(OWNER, NAME, 'main')).map((c) => c.message.trim().split('\n')[0]);

describe.concurrent('serve --github: stacked PRs', () => {
  it(
    'submitting the top of a stack of 3 lands it bottom first in one run; each PR is closed as landed',
    scoped(async () => {
      const { gh, server, prs } = await world();
      gh.setCi(OWNER, NAME, () => [{ name: 'ci', conclusion: 'success', delayMs: 200 }]);
      await submit(server, gh, prs[2]!);
      const done = [];
      for (const n of prs) done.push(await waitFor(server, gh, n, settled, 60_000));
      expect(done.map((p) => p.state)).toEqual(['merged', 'merged', 'merged']);
      expect(new Set(done.map((p) => p.testRunId)).size).toBe(1);
      expect((await messages(gh)).slice(0, 3)).toEqual(['Add c (#3)', 'Polish a, add b (#2)', 'Add a (#1)']);
      for (const n of prs)
        await until(`#${n} closed`, () => gh.getPullRequest(OWNER, NAME, n).state === 'closed');
      // The queue's comment on each PR names the stack.
      for (const n of prs)
        await until(`the comment on #${n} names its stack`, () =>
          gh
            .comments(OWNER, NAME, n)
            .some(
              (c) =>
                c.body.includes('railyard:merge-queue') &&
                c.body.includes('Part of a stack of 3: #1 ← #2 ← #3') &&
                /merged/.test(c.body),
            ),
        );
    }),
  );

  it(
    'retargeting the middle PR while the stack is tested removes it and the PR above it; the bottom lands alone',
    scoped(async () => {
      const { gh, server, prs } = await world();
      // The stack's run is held 3 s (it is still testing when #2 is retargeted); #1's run alone is not.
      gh.setCi(OWNER, NAME, (push) => [
        { name: 'ci', conclusion: 'success', delayMs: push.branch.includes('pr-1-2-3/') ? 3000 : 200 },
      ]);
      await submit(server, gh, prs[2]!);
      await waitFor(server, gh, prs[2]!, (p) => p.state === 'testing');
      await gh.setBase(OWNER, NAME, prs[1]!, 'main');
      expect(await waitFor(server, gh, prs[1]!, settled)).toMatchObject({
        state: 'cancelled',
        stateReason: 'PR_BASE_BRANCH_CHANGED',
      });
      expect(await waitFor(server, gh, prs[2]!, settled)).toMatchObject({
        state: 'cancelled',
        stateReason: 'STACKED_PR_MEMBER_BASE_BRANCH_CHANGED',
      });
      expect((await waitFor(server, gh, prs[0]!, settled, 60_000)).state).toBe('merged');
      expect((await messages(gh))[0]).toBe('Add a (#1)');
    }),
  );
});
