/**
 * `railyard serve --github` keeps the forge's truth with webhooks lost, one queue per PR, conflicts
 * named, and GitHub's real write limits: the real built server against the GitHub emulator. Each
 * test has its own emulator, server and cleanups (`scoped`), so they run side by side (they mostly
 * wait for the emulated CI and the polls).
 */
import { describe, expect, it } from 'vitest';
import { call, ok } from '../server/helpers.js';
import type { GitHubEmulator } from '../support/github/index.js';
import {
  createQueue,
  emulator,
  NAME,
  OWNER,
  repoOf,
  scoped,
  settled,
  startRailyard,
  submit,
  tempDir,
  until,
  waitFor,
  waitForTesting,
} from './github-harness.js';

async function world(opts: { pollSeconds?: number; writeIntervalMs?: number; extraArgs?: string[] } = {}) {
  const gh = await emulator();
  gh.createRepo(OWNER, NAME, { files: { 'README.md': 'app\n' } });
  const server = await startRailyard(gh, { webhooks: true, dataDir: tempDir('railyard-gh-'), ...opts });
  return { gh, server };
}

const Q = (gh: GitHubEmulator) => ({ repo: repoOf(gh), targetBranch: 'main' });

describe.concurrent('serve --github: forge truth, second pass', () => {
  it(
    '1. webhooks all lost: green CI, a close while testing and ready_for_review are noticed within the poll interval',
    scoped(async () => {
      // A webhook secret is set, but GitHub's deliveries never arrive: polling every second must do their job.
      const { gh, server } = await world({ pollSeconds: 1 });
      gh.setDeliveryFilter(() => 'drop');
      // PR #2's test commits get no CI (it is closed while testing, long before the 30 s grace period ends).
      gh.setCi(OWNER, NAME, (push) =>
        /\bpr-(\d+-)*2\b/.test(push.branch) ? [] : [{ name: 'ci', conclusion: 'success', delayMs: 500 }],
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
      const three = await gh.createPullRequest(OWNER, NAME, {
        head: 'three',
        title: 'Three',
        draft: true,
        files: { 'three.txt': '3\n' },
      });
      await createQueue(server, gh, { createPrsForTestingBranches: false });

      // Green CI on the test commit: acted on within a few poll intervals (not at the 30 s grace period's end).
      await submit(server, gh, one.number);
      const started = Date.now();
      expect((await waitFor(server, gh, one.number, settled, 60_000)).state).toBe('merged');
      expect(Date.now() - started, 'green CI noticed without webhooks').toBeLessThan(10_000);

      // Closed while testing: cancelled within a few poll intervals (not failed much later).
      await submit(server, gh, two.number);
      await waitForTesting(server, gh, two.number);
      await gh.closePullRequest(OWNER, NAME, two.number);
      const closedAt = Date.now();
      expect(await waitFor(server, gh, two.number, settled, 60_000)).toMatchObject({
        state: 'cancelled',
        stateReason: 'PR_CLOSED',
      });
      expect(Date.now() - closedAt, 'close noticed without webhooks').toBeLessThan(10_000);

      // A draft waits (not_ready); ready_for_review is noticed and it lands.
      await submit(server, gh, three.number);
      await waitFor(server, gh, three.number, (p) => p.state === 'not_ready');
      await gh.setDraft(OWNER, NAME, three.number, false);
      const readyAt = Date.now();
      await waitFor(server, gh, three.number, (p) => p.state !== 'not_ready', 60_000);
      expect(Date.now() - readyAt, 'ready_for_review noticed without webhooks').toBeLessThan(10_000);
      expect((await waitFor(server, gh, three.number, settled)).state).toBe('merged');

      expect(gh.deliveries.length).toBeGreaterThan(0);
      expect(gh.deliveries.every((d) => d.lost)).toBe(true);
      // Unchanged PRs and commits are asked with If-None-Match: such a poll costs a 304.
      expect(gh.requests.filter((r) => r.status === 304).length).toBeGreaterThan(0);
    }),
    120_000,
  );
});
