// The server's pull requests with stored state, over real HTTP, once on SQLite and once on PostgreSQL:
// submitting, ordering, cancelling, restarting, finding and listing them, readiness by impacted targets,
// organisations kept apart, and the flaky-test reads' validation. Queues: behaviour-queues.test.ts.
import { describe, expect, it } from 'vitest';
import { sandboxHeadSha } from '../../src/forge/sandbox/index.js';
import { eachDatabase } from '../support/hooks.js';
import { behaviourServers } from './behaviour-helpers.js';
import { call, ISO_MS, ok, Q, REPO } from './helpers.js';

const { server, withPausedQueue } = behaviourServers(() => database());

/** Every test of stored state, once per database. */
function persistenceSuite(): void {
  describe('pull requests', () => {
    it('submits with a numeric-string number and an upper-case priority; resubmitting updates priority and noBatch', async () => {
      const s = await withPausedQueue();
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: '7' }, priority: 'LOW' });
      let pr = await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: '7' } });
      expect(pr).toMatchObject({
        prNumber: 7,
        state: 'pending',
        priorityName: 'low',
        priorityValue: 200,
        skipTheLine: false,
      });
      expect(pr.stateChangedAt).toMatch(ISO_MS);
      const id = pr.id;
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 7 }, priority: 'urgent', noBatch: true });
      pr = await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: 7 } });
      expect(pr).toMatchObject({ id, priorityName: 'urgent', priorityValue: 0, skipTheLine: true });
      const [item] = (await ok(s, 'getQueue', Q)).enqueuedPullRequests;
      expect(item).toMatchObject({ prNumber: 7, noBatch: true });
    });

    it('orders the queue by priority, then submission', async () => {
      const s = await withPausedQueue();
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 1 } });
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 2 }, priority: 'low' });
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 3 }, priority: 10 });
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 4 } });
      const q = await ok(s, 'getQueue', Q);
      expect(q.enqueuedPullRequests.map((p: { prNumber: number }) => p.prNumber)).toEqual([3, 1, 4, 2]);
      expect(q.enqueuedPullRequests[1]).toMatchObject({
        usedDefaultPriorityName: 'medium',
        priorityName: 'medium',
      });
    });

    it('cancels, 404s a PR never submitted, and enqueues a cancelled PR again on resubmit', async () => {
      const s = await withPausedQueue();
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 5 } });
      const first = await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: 5 } });
      await ok(s, 'cancelPullRequest', { ...Q, pr: { number: 5 } });
      const cancelled = await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: 5 } });
      expect(cancelled).toMatchObject({
        state: 'cancelled',
        stateReason: 'USER_REQUESTED',
        isCurrentlySubmittedToQueue: false,
      });
      expect((await ok(s, 'getQueue', Q)).enqueuedPullRequests).toEqual([]);
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 5 } });
      const again = await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: 5 } });
      expect(again).toMatchObject({ state: 'pending', isCurrentlySubmittedToQueue: true });
      expect(again.id).not.toBe(first.id);

      for (const op of [
        'getSubmittedPullRequest',
        'cancelPullRequest',
        'restartTestsOnPullRequest',
      ] as const) {
        const a = await call(s, op, { ...Q, pr: { number: 99 } });
        expect(a.status, op).toBe(404);
        expect(a.text).toBe('pull request #99 was never submitted to the main queue of acme/web');
      }
    });

    it('restarts a queued PR with the API reason', async () => {
      const s = await withPausedQueue();
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 1 } });
      await ok(s, 'restartTestsOnPullRequest', { ...Q, pr: { number: 1 } });
      expect(await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: 1 } })).toMatchObject({
        state: 'pending',
        stateReason: 'TESTS_RESTARTED_BY_API_REQUEST',
      });
    });

    it('finds a submitted PR by head branch', async () => {
      const s = await withPausedQueue();
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 42 } });
      const pr = await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { branch: 'sandbox/pr-42' } });
      expect(pr.prNumber).toBe(42);
      expect(
        (await call(s, 'getSubmittedPullRequest', { ...Q, pr: { branch: 'sandbox/pr-43' } })).status,
      ).toBe(404);
      const both = await call(s, 'getSubmittedPullRequest', {
        ...Q,
        pr: { number: 42, branch: 'sandbox/pr-42' },
      });
      expect(both.status).toBe(400);
      expect(both.text).toMatch(/^pr: /);
    });

    it('keeps not-ready PRs out of getQueue; impacted targets (also uploaded before submitting) make them ready', async () => {
      const s = await withPausedQueue({ mode: 'parallel' });
      // Uploaded before the PR is submitted (the merge action does this on every push).
      await ok(s, 'setImpactedTargets', {
        ...Q,
        pr: { number: '2', sha: sandboxHeadSha(REPO, 2) },
        impactedTargets: [],
      });
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 1 } });
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 2 } });
      let q = await ok(s, 'getQueue', Q);
      expect(q.enqueuedPullRequests.map((p: { prNumber: number }) => p.prNumber)).toEqual([2]);
      const one = await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: 1 } });
      expect(one).toMatchObject({
        state: 'not_ready',
        readiness: { requiresImpactedTargets: true, hasImpactedTargets: false },
      });
      // A list for another SHA than the submitted head is refused (it would never count); "all" (any case) for the head SHA counts.
      const other = await call(s, 'setImpactedTargets', {
        ...Q,
        pr: { number: 1, sha: 'f'.repeat(40) },
        impactedTargets: ['a'],
      });
      expect(other.status).toBe(400);
      expect(other.text).toBe(
        `pr.sha: ${'f'.repeat(40)} is not the head of #1 (${sandboxHeadSha(REPO, 1)}); send the targets of its head`,
      );
      expect((await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: 1 } })).state).toBe('not_ready');
      await ok(s, 'setImpactedTargets', {
        ...Q,
        pr: { number: 1, sha: sandboxHeadSha(REPO, 1) },
        impactedTargets: 'all',
      });
      q = await ok(s, 'getQueue', Q);
      expect(q.enqueuedPullRequests.map((p: { prNumber: number }) => p.prNumber)).toEqual([1, 2]);
      const bad = await call(s, 'setImpactedTargets', {
        ...Q,
        pr: { number: 1, sha: 'x' },
        impactedTargets: 'SOME',
      });
      expect(bad.status).toBe(400);
      expect(bad.text).toMatch(/^impactedTargets: /);
    });

    it('lists with a state filter, a conclusion window and cursor paging', async () => {
      const s = await withPausedQueue();
      for (const n of [1, 2, 3, 4, 5]) await ok(s, 'submitPullRequest', { ...Q, pr: { number: n } });
      const before = new Date().toISOString();
      await new Promise((r) => setTimeout(r, 5));
      await ok(s, 'cancelPullRequest', { ...Q, pr: { number: 2 } });
      await ok(s, 'cancelPullRequest', { ...Q, pr: { number: 4 } });

      const seen: number[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await ok(s, 'listPullRequests', { ...Q, take: 2, ...(cursor ? { cursor } : {}) });
        seen.push(...page.pullRequests.map((p: { prNumber: number }) => p.prNumber));
        cursor = page.nextCursor;
        pages++;
      } while (cursor);
      // Queue order: the line (the paused queue's pending PRs), then those that left, in the order they left.
      expect(seen).toEqual([1, 3, 5, 2, 4]);
      expect(pages).toBe(3);

      const pending = await ok(s, 'listPullRequests', { ...Q, state: 'PENDING' });
      expect(pending.pullRequests.map((p: { prNumber: number }) => p.prNumber)).toEqual([1, 3, 5]);
      expect(pending).not.toHaveProperty('nextCursor');
      const concluded = await ok(s, 'listPullRequests', { ...Q, since: before });
      expect(concluded.pullRequests.map((p: { prNumber: number }) => p.prNumber)).toEqual([2, 4]);
      const none = await ok(s, 'listPullRequests', { ...Q, until: before });
      expect(none.pullRequests).toEqual([]);

      for (const [body, field] of [
        [{ ...Q, take: 0 }, 'take'],
        [{ ...Q, take: 101 }, 'take'],
        [{ ...Q, since: 'yesterday' }, 'since'],
        [{ ...Q, state: 'done' }, 'state'],
        [{ ...Q, cursor: 'nope' }, 'cursor'],
      ] as const) {
        const a = await call(s, 'listPullRequests', body);
        expect(a.status, field).toBe(400);
        expect(a.text.slice(0, field.length + 2)).toBe(`${field}: `);
      }
    });
  });

  describe('organisations', () => {
    it('hides another organisation’s queues, pull requests and flaky data (404, never 403)', async () => {
      const s = await server({ tokens: { 'token-a': 'team-a', 'token-b': 'team-b' } });
      await ok(s, 'createQueue', Q, 'token-a');
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 1 } }, 'token-a');
      for (const [op, body] of [
        ['getQueue', Q],
        ['getSubmittedPullRequest', { ...Q, pr: { number: 1 } }],
        ['cancelPullRequest', { ...Q, pr: { number: 1 } }],
        ['deleteQueue', Q],
      ] as const) {
        expect((await call(s, op, body, { token: 'token-b' })).status, op).toBe(404);
      }
      // The repository is team-a's: team-b cannot make a queue for it (decisions "Trust"), but for its own.
      expect((await call(s, 'createQueue', Q, { token: 'token-b' })).status).toBe(404);
      const theirs = { repo: { ...REPO, name: 'theirs' }, targetBranch: 'main' };
      await ok(s, 'createQueue', theirs, 'token-b');
      expect((await ok(s, 'getQueue', theirs, 'token-b')).enqueuedPullRequests).toEqual([]);
      expect((await ok(s, 'getQueue', Q, 'token-a')).enqueuedPullRequests).toHaveLength(1);

      const flaky = { repo: REPO, page_query: { page_size: 5 } };
      expect(
        (await call(s, 'listQuarantinedTests', { ...flaky, org_url_slug: 'team-a' }, { token: 'token-b' }))
          .status,
      ).toBe(404);
      // Flaky data is kept per organisation: team-b asking about team-a's repository sees its own (empty) data,
      // exactly what it sees for a repository nobody uses, so the answer reveals no owner (decisions "Round 3").
      const mine = await call(
        s,
        'listQuarantinedTests',
        { ...flaky, org_url_slug: 'team-b' },
        { token: 'token-b' },
      );
      const unused = { ...flaky, repo: { ...REPO, name: 'nobody-uses-it' }, org_url_slug: 'team-b' };
      const nobody = await call(s, 'listQuarantinedTests', unused, { token: 'token-b' });
      expect([mine.status, mine.text]).toEqual([200, nobody.text]);
      const own = { ...flaky, repo: theirs.repo, org_url_slug: 'team-b' };
      expect((await call(s, 'listQuarantinedTests', own, { token: 'token-b' })).status).toBe(200);
    });
  });

  describe('flaky-test validation', () => {
    it('checks page_size bounds and the 7-day window', async () => {
      const s = await server();
      const base = { repo: REPO, org_url_slug: s.org };
      for (const size of [0, 101]) {
        const a = await call(s, 'listUnhealthyTests', {
          ...base,
          status: 'broken',
          page_query: { page_size: size },
        });
        expect(a.status).toBe(400);
        expect(a.text).toMatch(/^page_query\.page_size: /);
      }
      const start = Date.parse('2026-01-01T00:00:00Z');
      const window = (days: number) => ({
        ...base,
        page_query: { page_size: 10 },
        start_time: new Date(start).toISOString(),
        end_time: new Date(start + days * 86_400_000).toISOString(),
      });
      expect((await call(s, 'listFailingTests', window(7))).status).toBe(200);
      const wide = await call(s, 'listFailingTests', window(7.001));
      expect(wide.status).toBe(400);
      expect(wide.text).toBe('end_time: must be at most 7 days after start_time');
      expect((await call(s, 'listFailingTests', window(-1))).status).toBe(400);
      const page = (await ok(s, 'listFailingTests', window(1))).page;
      expect(page).toEqual({
        total_rows: 0,
        total_pages: 0,
        next_page_token: '',
        prev_page_token: '',
        last_page_token: '',
        page_index: 0,
      });
    });
  });
}

const database = eachDatabase(persistenceSuite);
