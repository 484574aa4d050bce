/**
 * GitHub forge benchmark: the real `railyard serve --github` (built) against the GitHub emulator.
 * Lands BENCH_PRS pull requests (default 6; squash, concurrency 2, CI one check taking
 * BENCH_CI_MS = 2000 ms) once with webhooks and once polling every BENCH_POLL_SECONDS (default 1),
 * and prints:
 *   - REST requests per merged PR, counted by the emulator: every request, a conditional one
 *     answered 304 Not Modified included (the figure the goal is about), and apart those that count
 *     against GitHub's rate limit (a 304 does not);
 *   - time from the last check of a test commit going green to the target branch moving to it
 *     (sampled every 20 ms), p50 / max.
 *   - (round 3, issue 21) when GitHub first showed each PR's final state — the final
 *     `railyard/merge-queue` status, the PR closed and its comment saying so — after the target moved
 *     to it: p50 / p95 / max; writes per second (the most in any one-second window, the shortest gap);
 *     REST requests per merged PR counted until the last PR showed its final state.
 *   - (round 4) the most writes in any minute, and with BENCH_LOST_WEBHOOKS=1 every delivery is lost
 *     (green → landed then measures polling alone).
 * BENCH_SUBMIT_EVERY_MS=2000 submits one PR every 2 s; BENCH_SECONDARY_LIMIT=<s>|none answers the
 * first request after the submits with GitHub's secondary limit (retry-after <s>, or none).
 * BENCH_TRACE=1 prints every REST request (ms from the first submit, route, status).
 * PRs are waited for by watching the emulator (forge-bench.ts settledQuietly), not by asking the server every 100 ms.
 * Goals (round 4): webhooks all lost, BENCH_POLL_SECONDS=5: green CI acted on within 10 s; a
 * 12-PR burst (CI 1 s, concurrency 3): final state p95 <= 10 s, max <= 20 s, <= 80 writes a minute.
 * Goals (issue 11): <= 15 requests per merged PR with webhooks, <= 30 polling; <= 2 s to land.
 * Goals (issue 21, 30 PRs, CI 30 s, concurrency 3, webhooks): final state p95 <= 10 s, max <= 20 s
 * after landing; <= 1 write/s; <= 15 requests per merged PR until GitHub shows the final state:
 *
 *   npm run build && BENCH_PRS=30 BENCH_CI_MS=30000 BENCH_CONCURRENCY=3 BENCH_MODES=webhooks npx tsx bench/github.ts
 */
import {
  cleanup,
  createQueue,
  emulator,
  NAME,
  OWNER,
  settled,
  startRailyard,
  submit,
  tempDir,
  waitFor,
} from '../test/e2e/github-harness.js';
import { pct, quiet, report, sampleGreenToLanded, settledQuietly, tally } from './forge-bench.js';

const PRS = Number(process.env.BENCH_PRS ?? 6);
const CI_MS = Number(process.env.BENCH_CI_MS ?? 2000);
const POLL_SECONDS = Number(process.env.BENCH_POLL_SECONDS ?? 1);
/** --github-write-interval-ms; `default` (the default): the flag is not given (GitHub's budget alone). */
const WRITE_MS =
  (process.env.BENCH_WRITE_MS ?? 'default') === 'default' ? null : Number(process.env.BENCH_WRITE_MS);
/** BENCH_LOST_WEBHOOKS=1: a webhook secret is set but every delivery is lost (polling must do their job). */
const LOST = process.env.BENCH_LOST_WEBHOOKS === '1';
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 2);
const MODES = (process.env.BENCH_MODES ?? 'webhooks,polling').split(',');
const DRAFTS = process.env.BENCH_DRAFTS === '1';
/** BENCH_SUBMIT_EVERY_MS: submit one PR every this long (default 0: all at once, a burst). */
const SUBMIT_EVERY_MS = Number(process.env.BENCH_SUBMIT_EVERY_MS ?? 0);
/**
 * BENCH_SECONDARY_LIMIT: the first request after the submits (a write, the queue's first status)
 * answers GitHub's secondary limit: `<seconds>` with that `retry-after`, `none` without one.
 */
const SECONDARY = process.env.BENCH_SECONDARY_LIMIT ?? '';

interface Figures {
  mode: string;
  merged: number;
  requests: number;
  counted: number;
  byRoute: Map<string, number>;
  events: Map<string, number>;
  latencies: number[];
  wallMs: number;
  /** Per merged PR: ms from the target moving to (or past) its commit to GitHub showing its final state. */
  finalLags: number[];
  /** The most writes started within any one second, and the shortest gap between two writes. */
  writesPerSecond: number;
  writesPerMinute: number;
  minWriteGapMs: number;
  /** REST requests until the last PR showed its final state. */
  requestsUntilFinal: number;
}

async function once(webhooks: boolean): Promise<Figures> {
  const gh = await emulator();
  gh.createRepo(OWNER, NAME, { files: { 'README.md': 'app\n' } });
  const pushedTest = new Set<string>();
  gh.setCi(OWNER, NAME, (push) => {
    if (push.branch.startsWith('railyard-merge/')) pushedTest.add(push.sha);
    return [{ name: 'ci', conclusion: 'success', delayMs: CI_MS }];
  });
  const server = await startRailyard(gh, {
    webhooks,
    dataDir: tempDir('railyard-bench-'),
    pollSeconds: POLL_SECONDS,
    writeIntervalMs: WRITE_MS,
  });
  if (LOST) gh.setDeliveryFilter(() => 'drop');
  const numbers: number[] = [];
  for (let n = 1; n <= PRS; n++)
    numbers.push(
      (
        await gh.createPullRequest(OWNER, NAME, {
          head: `f${n}`,
          title: `PR ${n}`,
          files: { [`f${n}.txt`]: `${n}\n` },
        })
      ).number,
    );
  await createQueue(server, gh, { concurrency: CONCURRENCY, createPrsForTestingBranches: DRAFTS });
  await gh.idle();
  gh.resetRequestCount();

  // Sample: when each test commit's checks all went green, and when main moved to it.
  const sampler = sampleGreenToLanded(
    pushedTest,
    (sha) => {
      const runs = gh.checkRuns(OWNER, NAME, sha);
      return runs.length > 0 && runs.every((r) => r.status === 'completed' && r.conclusion === 'success');
    },
    () => gh.branchSha(OWNER, NAME, 'main'),
  );

  const t0 = Date.now();
  for (const [i, n] of numbers.entries()) {
    if (SUBMIT_EVERY_MS > 0) await new Promise((r) => setTimeout(r, t0 + i * SUBMIT_EVERY_MS - Date.now()));
    await submit(server, gh, n);
  }
  if (SECONDARY) gh.rateLimitNext(1, 'secondary', SECONDARY === 'none' ? null : Number(SECONDARY));
  let merged = 0;
  for (const n of numbers) {
    const pr = await settledQuietly(
      () => gh.getPullRequest(OWNER, NAME, n).state !== 'open',
      async () => {
        const p = await waitFor(server, gh, n, () => true);
        return settled(p) ? p : null;
      },
    );
    if (pr.state === 'merged') merged++;
  }
  const wallMs = Date.now() - t0;
  // Status and comment updates go on after the last landing (writes are spaced): count them all.
  await quiet(gh);
  const latencies = await sampler.stop();
  const { byRoute, events } = tally(gh);
  if (process.env.BENCH_TRACE === '1')
    for (const r of gh.requests)
      console.log(
        `trace ${r.at - t0} ${r.method} ${r.path.replace(/[0-9a-f]{40}/g, (h) => h.slice(0, 7))} ${r.status}`,
      );
  // When GitHub showed each PR final, against when the target moved to (or past) its commit.
  const log = await gh.log(OWNER, NAME, 'main'); // newest first, linear (squash)
  const finalLags: number[] = [];
  let lastFinal = 0;
  for (const n of numbers) {
    const landed = log.findIndex((c) => c.message.includes(`(#${n})`));
    if (landed < 0) continue;
    const moved = gh.branchMoves.find((m) => {
      const i = m.branch === 'main' && m.after !== null ? log.findIndex((c) => c.sha === m.after) : -1;
      return i >= 0 && i <= landed;
    });
    const shown = gh.finalShownAt(OWNER, NAME, n).all;
    if (!moved || shown === null) continue;
    finalLags.push(shown - moved.at);
    lastFinal = Math.max(lastFinal, shown);
  }
  const writes = gh.requests
    .filter((r) => r.method !== 'GET')
    .map((r) => r.at)
    .sort((a, b) => a - b);
  let writesPerSecond = 0;
  for (let i = 0, j = 0; i < writes.length; i++) {
    while (writes[i] - writes[j] >= 1000) j++;
    writesPerSecond = Math.max(writesPerSecond, i - j + 1);
  }
  let writesPerMinute = 0;
  for (let i = 0, j = 0; i < writes.length; i++) {
    while (writes[i] - writes[j] >= 60_000) j++;
    writesPerMinute = Math.max(writesPerMinute, i - j + 1);
  }
  const gaps = writes.slice(1).map((t, i) => t - writes[i]);
  const figures = {
    events,
    mode: webhooks
      ? LOST
        ? `webhooks all lost, polling every ${POLL_SECONDS} s`
        : 'webhooks'
      : `polling every ${POLL_SECONDS} s`,
    merged,
    requests: gh.requests.length,
    counted: gh.requests.filter((r) => r.status !== 304).length,
    byRoute,
    latencies,
    wallMs,
    finalLags,
    writesPerSecond,
    writesPerMinute,
    minWriteGapMs: gaps.length ? Math.min(...gaps) : NaN,
    requestsUntilFinal: gh.requests.filter((r) => r.at <= lastFinal).length,
  };
  await cleanup();
  return figures;
}

for (const webhooks of MODES.map((m) => m === 'webhooks')) {
  const f = await once(webhooks);
  report(f, PRS, { check: 'check', deliveries: 'webhook deliveries' }, [
    `REST requests per merged PR: ${(f.requests / f.merged).toFixed(1)}, 304s included (${(f.counted / f.merged).toFixed(1)} without them: a 304 does not count against GitHub's rate limit)`,
    `final state shown on GitHub after landing: p50 ${pct(f.finalLags, 50)} ms, p95 ${pct(f.finalLags, 95)} ms, max ${Math.max(...f.finalLags)} ms (${f.finalLags.length} PRs)`,
    `writes: at most ${f.writesPerMinute} in one minute, ${f.writesPerSecond} in one second, shortest gap ${f.minWriteGapMs} ms; REST requests per merged PR until the last final state: ${(f.requestsUntilFinal / f.merged).toFixed(1)}`,
  ]);
}
