/**
 * GitHub forge benchmark: the real `railyard serve --github` (built) against the GitHub emulator.
 * Lands BENCH_PRS pull requests (default 6; squash, concurrency 2, CI one check taking
 * BENCH_CI_MS = 2000 ms) once with webhooks and once polling every BENCH_POLL_SECONDS (default 1),
 * and prints:
 *   - REST requests per merged PR, counted by the emulator (all, and those that count against the
 *     rate limit: 304 Not Modified answers do not);
 *   - time from the last check of a test commit going green to the target branch moving to it
 *     (sampled every 20 ms), p50 / max.
 * Goals (issue 11): <= 15 requests per merged PR with webhooks, <= 30 polling; <= 2 s to land.
 *
 *   npm run build && npx tsx bench/github.ts
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

const PRS = Number(process.env.BENCH_PRS ?? 6);
const CI_MS = Number(process.env.BENCH_CI_MS ?? 2000);
const POLL_SECONDS = Number(process.env.BENCH_POLL_SECONDS ?? 1);
const WRITE_MS = Number(process.env.BENCH_WRITE_MS ?? 1000);

interface Figures {
  mode: string;
  merged: number;
  requests: number;
  counted: number;
  byRoute: Map<string, number>;
  events: Map<string, number>;
  latencies: number[];
  wallMs: number;
}

function routeOf(method: string, path: string): string {
  return `${method} ${path
    .replace(/\/api\/v3/, '')
    .replace(/[0-9a-f]{40}/g, '{sha}')
    .replace(/\/\d+(\/|$)/g, '/{n}$1')
    .replace(/heads\/[^/]+$/, 'heads/{branch}')}`;
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
  await createQueue(server, gh, { concurrency: 2, createPrsForTestingBranches: false });
  await gh.idle();
  gh.resetRequestCount();

  // Sample: when each test commit's checks all went green, and when main moved to it.
  const green = new Map<string, number>();
  const latencies: number[] = [];
  let lastMain = await gh.branchSha(OWNER, NAME, 'main');
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const now = Date.now();
      for (const sha of pushedTest) {
        if (green.has(sha)) continue;
        const runs = gh.checkRuns(OWNER, NAME, sha);
        if (runs.length > 0 && runs.every((r) => r.status === 'completed' && r.conclusion === 'success'))
          green.set(sha, now);
      }
      const main = await gh.branchSha(OWNER, NAME, 'main');
      if (main && main !== lastMain) {
        lastMain = main;
        const g = green.get(main);
        if (g !== undefined) latencies.push(Date.now() - g);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  })();

  const t0 = Date.now();
  for (const n of numbers) await submit(server, gh, n);
  let merged = 0;
  for (const n of numbers) if ((await waitFor(server, gh, n, settled, 300_000)).state === 'merged') merged++;
  const wallMs = Date.now() - t0;
  // Status and comment updates go on after the last landing (writes are spaced): count them all.
  for (
    let seen = -1, quietSince = Date.now();
    Date.now() - quietSince < 3000;
    await new Promise((r) => setTimeout(r, 200))
  ) {
    if (gh.requests.length !== seen) [seen, quietSince] = [gh.requests.length, Date.now()];
  }
  sampling = false;
  await sampler;
  const byRoute = new Map<string, number>();
  for (const r of gh.requests)
    byRoute.set(routeOf(r.method, r.path), (byRoute.get(routeOf(r.method, r.path)) ?? 0) + 1);
  const events = new Map<string, number>();
  for (const d of gh.deliveries) events.set(d.event, (events.get(d.event) ?? 0) + 1);
  const figures = {
    events,
    mode: webhooks ? 'webhooks' : `polling every ${POLL_SECONDS} s`,
    merged,
    requests: gh.requests.length,
    counted: gh.requests.filter((r) => r.status !== 304).length,
    byRoute,
    latencies,
    wallMs,
  };
  await cleanup();
  return figures;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
};

for (const webhooks of [true, false]) {
  const f = await once(webhooks);
  console.log(`\n${f.mode}: ${f.merged}/${PRS} merged in ${(f.wallMs / 1000).toFixed(1)} s`);
  console.log(
    `  REST requests per merged PR: ${(f.requests / f.merged).toFixed(1)} (${(f.counted / f.merged).toFixed(1)} counting against the rate limit; 304s are free)`,
  );
  console.log(
    `  last check green -> target moved: p50 ${pct(f.latencies, 50)} ms, max ${Math.max(...f.latencies)} ms (${f.latencies.length} landings)`,
  );
  if (f.events.size)
    console.log(`  webhook deliveries: ${[...f.events].map(([e, n]) => `${e} ${n}`).join(', ')}`);
  for (const [route, n] of [...f.byRoute].sort((a, b) => b[1] - a[1]))
    console.log(`    ${String(n).padStart(4)}  ${route}`);
}
