/**
 * `railyard serve --github` keeps the forge's truth with webhooks lost, one queue per PR, conflicts
 * named, and GitHub's real write limits: the real built server against the GitHub emulator. Each
 * test has its own emulator, server and cleanups (`scoped`), so they run side by side (they mostly
 * wait for the emulated CI and the polls).
 */
import { describe, expect, it } from 'vitest';
import { isolatedEnv, railyard } from '../support/cli.js';
import { call, ok } from '../server/helpers.js';
import type { GitHubEmulator } from '../support/github/index.js';
import {
  API_TOKEN,
  createQueue,
  finalShownLags,
  githubWorld,
  NAME,
  OWNER,
  ourComment,
  repoOf,
  scoped,
  settled,
  submit,
  until,
  waitFor,
  waitForTesting,
} from './github-harness.js';

const world = (opts: { pollSeconds?: number; writeIntervalMs?: number | null; extraArgs?: string[] } = {}) =>
  githubWorld({ webhooks: true, ...opts });

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

      // Green CI on the test commit: acted on within a few poll intervals, build and landing included
      // (20 s on a loaded machine; before, not until the 30 s grace period ended).
      await submit(server, gh, one.number);
      const started = Date.now();
      expect((await waitFor(server, gh, one.number, settled, 60_000)).state).toBe('merged');
      expect(Date.now() - started, 'green CI noticed without webhooks').toBeLessThan(20_000);

      // Closed while testing: cancelled within a few poll intervals (not failed much later).
      await submit(server, gh, two.number);
      await waitForTesting(server, gh, two.number);
      await gh.closePullRequest(OWNER, NAME, two.number);
      const closedAt = Date.now();
      expect(await waitFor(server, gh, two.number, settled, 60_000)).toMatchObject({
        state: 'cancelled',
        stateReason: 'PR_CLOSED',
      });
      expect(Date.now() - closedAt, 'close noticed without webhooks').toBeLessThan(20_000);

      // A draft waits (not_ready); ready_for_review is noticed and it lands.
      await submit(server, gh, three.number);
      await waitFor(server, gh, three.number, (p) => p.state === 'not_ready');
      await gh.setDraft(OWNER, NAME, three.number, false);
      const readyAt = Date.now();
      await waitFor(server, gh, three.number, (p) => p.state !== 'not_ready', 60_000);
      expect(Date.now() - readyAt, 'ready_for_review noticed without webhooks').toBeLessThan(20_000);
      expect((await waitFor(server, gh, three.number, settled)).state).toBe('merged');

      expect(gh.deliveries.length).toBeGreaterThan(0);
      expect(gh.deliveries.every((d) => d.lost)).toBe(true);
      // A poll round reads the open PRs as one (conditional) list, not every queued PR alone.
      expect(gh.requests.some((r) => r.method === 'GET' && /\/repos\/acme\/app\/pulls$/.test(r.path))).toBe(
        true,
      );
    }),
    120_000,
  );
  it(
    '6. one queue per PR: a PR based elsewhere is refused naming its base; its stale entry never writes to GitHub',
    scoped(async () => {
      const { gh, server } = await world({ pollSeconds: 0.5 });
      await gh.pushCommit(OWNER, NAME, 'release', { 'release.txt': 'r\n' });
      gh.setCi(OWNER, NAME, () => [{ name: 'ci', conclusion: 'success', delayMs: 300 }]);
      await createQueue(server, gh, { createPrsForTestingBranches: false });
      const release = { repo: repoOf(gh), targetBranch: 'release' };
      await ok(server, 'createQueue', release);

      const based = await gh.createPullRequest(OWNER, NAME, {
        head: 'fix',
        base: 'release',
        title: 'Fix',
        files: { 'fix.txt': 'x\n' },
      });
      const refused = await call(server, 'submitPullRequest', { ...Q(gh), pr: { number: based.number } });
      expect(refused.status).toBe(400);
      expect(refused.text).toMatch(/#1 is based on release, not main: submit it to the release queue/);
      expect(
        (await call(server, 'getSubmittedPullRequest', { ...Q(gh), pr: { number: based.number } })).status,
      ).toBe(404);

      // A draft waiting in the main queue is retargeted to release (the main entry waits on), then
      // submitted to the release queue, where it lands: the main entry is stale.
      const moved = await gh.createPullRequest(OWNER, NAME, {
        head: 'moved',
        title: 'Moved',
        draft: true,
        files: { 'moved.txt': 'm\n' },
      });
      await submit(server, gh, moved.number);
      await waitFor(server, gh, moved.number, (p) => p.state === 'not_ready');
      await gh.setBase(OWNER, NAME, moved.number, 'release');
      await waitFor(server, gh, moved.number, (p) => p.prBaseBranch === 'release');
      await gh.setDraft(OWNER, NAME, moved.number, false);
      await ok(server, 'submitPullRequest', { ...release, pr: { number: moved.number } });
      await until(
        '#2 landed on release',
        async () => {
          const pr = await ok(server, 'getSubmittedPullRequest', {
            ...release,
            pr: { number: moved.number },
          });
          return pr.state === 'merged';
        },
        60_000,
      );
      // The main queue's stale entry sees the PR closed and leaves; GitHub goes on showing it merged.
      expect((await waitFor(server, gh, moved.number, settled)).state).toBe('cancelled');
      await until('the comment says merged', () => /\*\*merged\*\*/i.test(ourComment(gh, moved.number)));
      // What the stale entry would write goes out at once (no write interval): give it a few poll rounds.
      const quietSince = Date.now();
      await until('a few poll rounds after the stale entry left', () => Date.now() - quietSince > 3000);
      await gh.idle();
      const ours = gh.shown(OWNER, NAME, moved.number);
      const statuses = ours.filter((x) => x.kind === 'status' && x.context === 'railyard/merge-queue');
      expect(statuses.at(-1)).toMatchObject({ state: 'success' });
      expect(ourComment(gh, moved.number)).toMatch(/merged/i);
      expect(ourComment(gh, moved.number)).not.toMatch(/cancelled|removed/i);
      expect(gh.getPullRequest(OWNER, NAME, moved.number)).toMatchObject({ state: 'closed' });
    }),
    120_000,
  );
  it(
    '5. a conflict is named (files, and the queued PR) in history, comment, mq status and log; a PR waiting on a conflict is re-checked when pushed to',
    scoped(async () => {
      const { gh, server } = await world({ pollSeconds: 0.5 });
      gh.setCi(OWNER, NAME, () => [{ name: 'ci', conclusion: 'success', delayMs: 2500 }]);
      const one = await gh.createPullRequest(OWNER, NAME, {
        head: 'one',
        title: 'One',
        files: { 'f.txt': 'one\n' },
      });
      const two = await gh.createPullRequest(OWNER, NAME, {
        head: 'two',
        title: 'Two',
        files: { 'f.txt': 'two\n' },
      });
      const three = await gh.createPullRequest(OWNER, NAME, {
        head: 'three',
        title: 'Three',
        files: { 'f.txt': 'three\n' },
      });
      await createQueue(server, gh, { concurrency: 2, createPrsForTestingBranches: false });
      await submit(server, gh, one.number);
      await waitForTesting(server, gh, one.number);
      await submit(server, gh, two.number);
      // #2 is tested on top of #1: its test commit cannot be built.
      expect(await waitFor(server, gh, two.number, settled)).toMatchObject({
        state: 'failed',
        stateReason: 'START_TEST_RUN_MERGE_CONFLICT',
      });
      const named = 'PR #2 conflicts with PR #1 (ahead of it in the queue) in f.txt';
      const history = (await ok(server, 'getPullRequestHistory', { ...Q(gh), pr: { number: two.number } }))
        .transitions as Array<{ detail?: string }>;
      expect(history.at(-1)!.detail).toBe(named);
      await until('the comment names the conflict', () => ourComment(gh, two.number).includes(named));
      const env = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: API_TOKEN });
      const status = await railyard(
        ['mq', 'status', String(two.number), '--repo', `${gh.host}/${OWNER}/${NAME}`],
        env,
      );
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toContain(named);

      // #1 lands; #3, opened before it, conflicts with main and waits. Its comment names the file and
      // the landed PR it conflicts with (GitHub says only that it conflicts). The advice (rebase) is
      // followed: the push resolves the conflict, and #3 is checked again and lands instead of being
      // cancelled.
      expect((await waitFor(server, gh, one.number, settled)).state).toBe('merged');
      await submit(server, gh, three.number);
      await waitFor(server, gh, three.number, (p) => p.state === 'not_ready');
      const waiting =
        /conflicts with main in f\.txt \(changed by [0-9a-f]{7} '[^']*' \/ #1\): rebase on main/;
      await until('the comment names the conflicting file', () => waiting.test(ourComment(gh, three.number)));
      await gh.pushToPullRequest(OWNER, NAME, three.number, { 'f.txt': 'one\n', 'three.txt': '3\n' });
      const end = await waitFor(server, gh, three.number, settled, 60_000);
      expect(end.state).toBe('merged');
      const transitions = (
        await ok(server, 'getPullRequestHistory', { ...Q(gh), pr: { number: three.number } })
      ).transitions as Array<{ reason?: string }>;
      expect(transitions.map((t) => t.reason)).not.toContain('PR_PUSHED_TO');

      await server.stop(); // its log is written out
      expect(server.output()).toContain(named);
    }),
    120_000,
  );
  it(
    '9. with the default flags a 12-PR burst shows each landed PR final within seconds: one write at a time, within 80 a minute',
    scoped(async () => {
      // The server's default write pacing (no --github-write-interval-ms): GitHub's documented budget.
      const { gh, server } = await world({ pollSeconds: 1, writeIntervalMs: null });
      gh.setCi(OWNER, NAME, () => [{ name: 'ci', conclusion: 'success', delayMs: 1000 }]);
      const prs = [];
      for (let i = 1; i <= 12; i++)
        prs.push(
          await gh.createPullRequest(OWNER, NAME, {
            head: `p${i}`,
            title: `P${i}`,
            files: { [`p${i}.txt`]: `${i}\n` },
          }),
        );
      await createQueue(server, gh, { concurrency: 3, createPrsForTestingBranches: false });
      for (const pr of prs) await submit(server, gh, pr.number);
      for (const pr of prs)
        expect((await waitFor(server, gh, pr.number, settled, 120_000)).state).toBe('merged');
      const lags = await finalShownLags(
        gh,
        prs.map((pr) => pr.number),
      );
      const sorted = [...lags].sort((a, b) => a - b);
      const p95 = sorted[Math.ceil(sorted.length * 0.95) - 1];
      expect(p95, `lags ${lags.join(', ')} ms`).toBeLessThanOrEqual(10_000);
      expect(Math.max(...lags), `lags ${lags.join(', ')} ms`).toBeLessThanOrEqual(20_000);
      // Within GitHub's secondary limit: never more than 80 content-creating requests in a minute.
      const writes = gh.requests.filter((r) => r.method !== 'GET').sort((a, b) => a.at - b.at);
      for (let i = 80; i < writes.length; i++)
        expect(writes[i].at - writes[i - 80].at).toBeGreaterThanOrEqual(60_000);
      // One at a time: each write arrived after GitHub had answered the one before.
      for (let i = 1; i < writes.length; i++)
        expect(
          writes[i].at,
          `${writes[i].method} ${writes[i].path} while ${writes[i - 1].method} ${writes[i - 1].path} was in flight`,
        ).toBeGreaterThanOrEqual(writes[i - 1].at + writes[i - 1].ms);
    }),
    180_000,
  );
});
