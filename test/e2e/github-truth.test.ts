/**
 * `railyard serve --github` refuses what GitHub refuses and shows the truth on the PR (issue 21,
 * items 1-7; issue 26 item 7): a retargeted PR, stale and replayed deliveries, branch protection,
 * a protected target, GitHub lagging behind the queue, form-encoded webhooks and required checks
 * that never report. The real built server against the GitHub emulator. Each test has its own
 * emulator, server and cleanups (`scoped`), so the two that mostly wait run beside the others.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isolatedEnv, railyard } from '../support/cli.js';
import type { GitHubEmulator } from '../support/github/index.js';
import { call, ok } from '../server/helpers.js';
import {
  API_TOKEN,
  createQueue,
  emulator,
  finalShownLags,
  NAME,
  onePr,
  OWNER,
  repoOf,
  scoped,
  settled,
  startRailyard,
  submit,
  tempDir,
  until,
  WEBHOOK_SECRET,
  waitFor,
  waitForTesting,
} from './github-harness.js';

async function world(
  opts: { writeIntervalMs?: number; dataDir?: string; pollSeconds?: number; extraArgs?: string[] } = {},
) {
  const gh = await emulator();
  gh.createRepo(OWNER, NAME, { files: { 'README.md': 'app\n' } });
  const dataDir = opts.dataDir ?? tempDir('railyard-gh-');
  const server = await startRailyard(gh, {
    webhooks: true,
    dataDir,
    writeIntervalMs: opts.writeIntervalMs,
    // Webhooks drive these tests: polled every second, not five times a second (each poll is a git
    // ls-remote, four processes; one lane of seven servers polling took longer than test 5 under load).
    pollSeconds: opts.pollSeconds ?? 1,
    extraArgs: opts.extraArgs,
  });
  return { gh, server, dataDir };
}

const Q = (gh: GitHubEmulator) => ({ repo: repoOf(gh), targetBranch: 'main' });
const subjects = async (gh: GitHubEmulator) =>
  (await gh.log(OWNER, NAME, 'main')).map((c) => c.message.trim().split('\n')[0]);
/** Test commits pushed for the PRs of `n` (each is one CI run on real GitHub). */
const testPushes = (gh: GitHubEmulator, n: number) =>
  gh.branchMoves.filter(
    (m) => m.after !== null && new RegExp(`^railyard-merge/pr-(\\d+-)*${n}(-\\d+)*/`).test(m.branch),
  ).length;
const ourComment = (gh: GitHubEmulator, n: number) =>
  gh.comments(OWNER, NAME, n).find((c) => c.body.includes('railyard:merge-queue'))?.body ?? '';
const history = async (server: Parameters<typeof ok>[0], gh: GitHubEmulator, n: number) =>
  (await ok(server, 'getPullRequestHistory', { ...Q(gh), pr: { number: n } })).transitions as Array<{
    state: string;
    reason?: string;
    detail?: string;
  }>;

describe('serve --github: what GitHub refuses, and the truth on the PR', () => {
  // Each test has its own emulator, server and cleanups, so three lanes run side by side: 5 (one
  // write a second) and 7 (a 1-minute testingTimeoutMinutes, 30 s long here) mostly wait; the rest run one after
  // another beside them.
  it.concurrent(
    '5. GitHub shows each landed PR final within seconds, one write per second, no draft PR for an ended run',
    scoped(async () => {
      // Webhooks drive it (CI events, its own landings); polled every second, not five times a second.
      const { gh, server } = await world({ writeIntervalMs: 1000, pollSeconds: 1 });
      // Landings no faster than one write a second can show them (4 writes each: land, status, close, comment).
      gh.setCi(OWNER, NAME, () => [{ name: 'ci', conclusion: 'success', delayMs: 6000 }]);
      const prs = [];
      for (let i = 1; i <= 6; i++)
        prs.push(
          await gh.createPullRequest(OWNER, NAME, {
            head: `p${i}`,
            title: `P${i}`,
            files: { [`p${i}.txt`]: `${i}\n` },
          }),
        );
      await createQueue(server, gh, { concurrency: 2, createPrsForTestingBranches: true });
      for (const pr of prs) await submit(server, gh, pr.number);
      for (const pr of prs)
        expect((await waitFor(server, gh, pr.number, settled, 90_000)).state).toBe('merged');
      const lags = await finalShownLags(
        gh,
        prs.map((pr) => pr.number),
      );
      // Issue 21's figures: p95 <= 10 s, max <= 20 s (bench/github.ts measures them with 30 PRs; with
      // 6 PRs here the median stands in for p95).
      const sorted = [...lags].sort((a, b) => a - b);
      expect(sorted[Math.floor(sorted.length / 2)], `lags ${lags.join(', ')} ms`).toBeLessThanOrEqual(10_000);
      expect(Math.max(...lags), `lags ${lags.join(', ')} ms`).toBeLessThanOrEqual(20_000);
      expect(
        gh.requests.filter((r) => r.method === 'POST' && /\/pulls$/.test(r.path) && r.status === 422),
      ).toEqual([]);
      const writes = gh.requests
        .filter((r) => r.method !== 'GET')
        .map((r) => r.at)
        .sort((a, b) => a - b);
      // One write per second (as sent; arrival times jitter on a loaded machine): never three within a second.
      for (let i = 2; i < writes.length; i++) expect(writes[i] - writes[i - 2]).toBeGreaterThanOrEqual(1000);
      expect((writes.length - 1) / ((writes.at(-1)! - writes[0]) / 1000)).toBeLessThanOrEqual(1.05);
    }),
    150_000,
  ); // paced at one write a second: ~40 s on a quiet machine, over 60 s at load 6-9 (its waits allow 90 s)

  it.concurrent(
    '7. a required check that never reports is shown pending while testing, then named in the failure, the comment and mq status (before the engine times out)',
    scoped(async () => {
      // A minute of waiting with webhooks (CI events and the timeout's timer drive it): polled every
      // second, not five times a second (each poll is a git ls-remote, four processes). The minute
      // lasts 30 s here (serve --testing-minute-seconds): ample for reading the run while it tests,
      // and no longer than test 5 beside it takes.
      const { gh, server } = await world({ pollSeconds: 1, extraArgs: ['--testing-minute-seconds', '30'] });
      gh.setCi(OWNER, NAME, () => [{ name: 'ci', conclusion: 'success', delayMs: 50 }]);
      const pr = await onePr(server, gh, {
        queue: { requiredStatuses: ['ci', 'lint'], testingTimeoutMinutes: 1 },
      });
      const testing = await waitForTesting(server, gh, pr.number);
      // While it tests, the details, mq status and the dashboard's source say what it still waits for (an extension).
      await until('the testing details name lint as not reported', async () => {
        const d = await call(server, 'getMergeQueueTestingDetails', {
          ...Q(gh),
          testRunId: testing.testRunId,
        });
        return (
          JSON.stringify(d.json?.pendingChecks ?? []) ===
          JSON.stringify([{ name: 'lint', state: 'not_reported' }])
        );
      });
      const liveEnv = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: API_TOKEN });
      const live = await railyard(
        ['mq', 'status', String(pr.number), '--repo', `${gh.host}/${OWNER}/${NAME}`],
        liveEnv,
      );
      expect(live.stdout).toMatch(/lint \(not reported yet\)/);
      const end = await waitFor(server, gh, pr.number, settled, 100_000);
      expect(end.state).toBe('failed');
      const last = (await history(server, gh, pr.number)).at(-1)!;
      expect(last.detail).toMatch(/lint/);
      expect(last.detail).toMatch(/never reported/);
      expect(last.detail).toMatch(/after 1 min \(testingTimeoutMinutes\)$/);
      await until('the comment names the check', () =>
        /never reported: `lint`/.test(ourComment(gh, pr.number)),
      );
      const env = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: API_TOKEN });
      const status = await railyard(
        ['mq', 'status', String(pr.number), '--repo', `${gh.host}/${OWNER}/${NAME}`],
        env,
      );
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toMatch(/lint never reported/);
    }),
    150_000,
  );

  describe.concurrent('beside 5 and 7, one after another', () => {
    it.sequential(
      '1. a PR retargeted while testing, its edited webhook lost, never lands on its old base',
      scoped(async () => {
        const { gh, server } = await world();
        await gh.pushCommit(OWNER, NAME, 'develop', { 'develop.txt': 'd\n' });
        gh.setCi(OWNER, NAME, () => [{ name: 'ci', conclusion: 'success', delayMs: 3000 }]);
        const pr = await onePr(server, gh);
        await waitForTesting(server, gh, pr.number);
        gh.setDeliveryFilter((d) => (d.event === 'pull_request' && d.action === 'edited' ? 'drop' : 'send'));
        await gh.setBase(OWNER, NAME, pr.number, 'develop');
        const after = await waitFor(
          server,
          gh,
          pr.number,
          (p) => p.state !== 'testing' && p.state !== 'tests_passed',
        );
        expect(after.state).not.toBe('merged');
        expect(await subjects(gh)).toHaveLength(1);
        expect(gh.getPullRequest(OWNER, NAME, pr.number)).toMatchObject({ state: 'open', base: 'develop' });
      }),
    );

    it.sequential(
      '2. an older pull_request delivery re-sent under a new id after a push changes nothing',
      scoped(async () => {
        const { gh, server } = await world();
        gh.setCi(OWNER, NAME, () => [{ name: 'ci', conclusion: 'success', delayMs: 2500 }]);
        const pr = await onePr(server, gh);
        await waitForTesting(server, gh, pr.number);
        const opened = gh.deliveries.find((d) => d.event === 'pull_request' && d.action === 'opened')!;
        const b = await gh.pushToPullRequest(OWNER, NAME, pr.number, { 'f.txt': 'f, again\n' });
        expect(await waitFor(server, gh, pr.number, settled)).toMatchObject({
          state: 'cancelled',
          stateReason: 'PR_PUSHED_TO',
        });
        await submit(server, gh, pr.number);
        await waitFor(server, gh, pr.number, (p) => p.state === 'testing' && p.prSha === b);
        // Captured (or late) with head A, delivered again as new: older than what Railyard knows.
        expect(await gh.replay(opened.id, { deliveryId: randomUUID() })).toBeLessThan(300);
        const end = await waitFor(server, gh, pr.number, settled);
        expect(end).toMatchObject({ state: 'merged', prSha: b });
        expect((await history(server, gh, pr.number)).filter((t) => t.state === 'cancelled')).toHaveLength(1);
      }),
    );

    it.sequential(
      '3. a PR blocked by branch protection waits (not_ready, branch_protection) and goes ahead once approved; the queue status does not count',
      scoped(async () => {
        const { gh, server } = await world();
        gh.protectBranch(OWNER, NAME, 'main', {
          requiredApprovals: 1,
          // Teams make the queue's own status required so nothing merges around it.
          requiredChecks: ['railyard/merge-queue'],
          bypass: ['railyard-bot'],
        });
        const pr = await gh.createPullRequest(OWNER, NAME, {
          head: 'feat',
          user: 'alice',
          files: { 'f.txt': 'f\n' },
        });
        await createQueue(server, gh, { createPrsForTestingBranches: false });
        await submit(server, gh, pr.number);
        const waiting = await waitFor(server, gh, pr.number, (p) =>
          (p.readiness?.waitingFor ?? []).includes('branch_protection'),
        );
        expect(waiting.state).toBe('not_ready');
        await until('the comment says what GitHub waits for', () =>
          /approv/i.test(ourComment(gh, pr.number)),
        );
        expect(testPushes(gh, pr.number)).toBe(0);
        await gh.review(OWNER, NAME, pr.number, 'bob', 'APPROVED');
        expect((await waitFor(server, gh, pr.number, settled)).state).toBe('merged');
        expect(await subjects(gh)).toHaveLength(2);
      }),
    );

    it.sequential(
      '4a. a landing refused by a rule on the commit fails the run quoting GitHub, after one test run',
      scoped(async () => {
        const { gh, server } = await world();
        gh.protectBranch(OWNER, NAME, 'main', { kind: 'classic', requiredChecks: ['security-scan'] });
        // The scan runs on pull requests only (a workflow on pull_request events): the PR has it, the
        // test commit on railyard-merge/… does not, and GitHub refuses to move main to it.
        gh.setCi(OWNER, NAME, (push) =>
          push.branch.startsWith('railyard-merge/')
            ? [{ name: 'ci', conclusion: 'success', delayMs: 50 }]
            : [
                { name: 'ci', conclusion: 'success', delayMs: 50 },
                { name: 'security-scan', conclusion: 'success', delayMs: 50 },
              ],
        );
        const pr = await onePr(server, gh);
        const end = await waitFor(server, gh, pr.number, settled, 40_000);
        expect(end.state).toBe('failed');
        const last = (await history(server, gh, pr.number)).at(-1)!;
        expect(last.detail).toContain('Required status check "security-scan" is expected.');
        expect(testPushes(gh, pr.number)).toBe(1);
        await until('the comment quotes GitHub', () => ourComment(gh, pr.number).includes('security-scan'));
        expect(await subjects(gh)).toHaveLength(1);
      }),
    );

    it.sequential(
      "4b. a target only pull requests may change pauses the queue with GitHub's message, after one test run",
      scoped(async () => {
        const { gh, server } = await world();
        gh.protectBranch(OWNER, NAME, 'main', { requirePullRequest: true });
        const pr = await onePr(server, gh);
        await until(
          'the queue paused',
          async () => (await ok(server, 'getQueue', Q(gh))).state === 'paused',
          40_000,
        );
        expect(testPushes(gh, pr.number)).toBe(1);
        expect(await subjects(gh)).toHaveLength(1);
        const entry = await waitFor(server, gh, pr.number, () => true);
        expect(entry.state).not.toBe('merged');
        await server.stop(); // the log is written out
        expect(server.output()).toContain('Changes must be made through a pull request.');
      }),
    );

    it.sequential(
      "6. form-encoded webhooks (GitHub's default for a hook made by hand) are accepted and verified",
      scoped(async () => {
        const { gh, server } = await world();
        gh.setWebhook(`${server.url.replace(/\/v1$/, '')}/webhooks/github`, WEBHOOK_SECRET, {
          contentType: 'form',
        });
        gh.setPermission(OWNER, NAME, 'writer', 'write');
        const pr = await onePr(server, gh, { submit: false });
        await gh.comment(OWNER, NAME, pr.number, 'writer', '/railyard merge');
        await until(
          'the command submitted the PR',
          async () =>
            (await call(server, 'getSubmittedPullRequest', { ...Q(gh), pr: { number: pr.number } }))
              .status === 200,
        );
        expect((await waitFor(server, gh, pr.number, settled)).state).toBe('merged');
        expect(gh.deliveries.filter((d) => d.status === 400)).toEqual([]);
      }),
    );

    it.sequential(
      '26.7 a captured /railyard cancel acts once: replayed with a new id, with none, and with the same id after a restart',
      scoped(async () => {
        const dataDir = tempDir('railyard-gh-');
        const { gh, server } = await world({ dataDir });
        gh.setCi(OWNER, NAME, () => [{ name: 'ci', conclusion: 'success', delayMs: 4000 }]);
        gh.setPermission(OWNER, NAME, 'writer', 'write');
        const pr = await onePr(server, gh);
        await waitForTesting(server, gh, pr.number);
        await gh.comment(OWNER, NAME, pr.number, 'writer', '/railyard cancel');
        expect(await waitFor(server, gh, pr.number, settled)).toMatchObject({
          state: 'cancelled',
          stateReason: 'USER_REQUESTED',
        });
        const captured = gh.deliveries.find(
          (d) => d.event === 'issue_comment' && JSON.stringify(d.payload).includes('/railyard cancel'),
        )!;
        await submit(server, gh, pr.number);
        await waitForTesting(server, gh, pr.number);
        expect(await gh.replay(captured.id, { deliveryId: randomUUID() })).toBeLessThan(300);
        expect(await gh.replay(captured.id, { deliveryId: null })).toBeLessThan(300);
        await server.stop();
        const again = await startRailyard(gh, { webhooks: true, dataDir, pollSeconds: 1 });
        expect(await gh.replay(captured.id)).toBeLessThan(300);
        expect((await waitFor(again, gh, pr.number, settled, 40_000)).state).toBe('merged');
        expect((await history(again, gh, pr.number)).filter((t) => t.state === 'cancelled')).toHaveLength(1);
      }),
    );
  });
});
