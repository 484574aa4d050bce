/**
 * GitLab forge benchmark: the real `railyard serve --gitlab` (built) against the GitLab emulator.
 * Lands BENCH_PRS merge requests (default 6; squash, concurrency 2, CI one job taking
 * BENCH_CI_MS = 2000 ms) once with hooks and once polling every BENCH_POLL_SECONDS (default 1),
 * and prints:
 *   - REST requests per merged MR, counted by the emulator (git over smart HTTP is not REST);
 *   - time from the last job of a test commit going green to the target branch moving to it
 *     (sampled every 20 ms), p50 / max.
 * Goals (issue 24): <= 15 requests per merged MR with hooks, <= 30 polling; p50 <= 2 s to land.
 *
 *   npm run build && npx tsx bench/gitlab.ts
 */
import {
  cleanup,
  createQueue,
  emulator,
  PROJECT,
  settled,
  startRailyard,
  submit,
  tempDir,
  waitFor,
} from '../test/e2e/gitlab-harness.js';

const PRS = Number(process.env.BENCH_PRS ?? 6);
const CI_MS = Number(process.env.BENCH_CI_MS ?? 2000);
const POLL_SECONDS = Number(process.env.BENCH_POLL_SECONDS ?? 1);

function routeOf(method: string, path: string): string {
  return `${method} ${path.replace(/[0-9a-f]{40}/g, '{sha}').replace(/\/\d+(\/|$)/g, '/{n}$1')}`;
}

async function once(webhooks: boolean) {
  const gl = await emulator();
  gl.createProject(PROJECT, { files: { 'README.md': 'app\n' } });
  const pushedTest = new Set<string>();
  gl.setCi(PROJECT, (push) => {
    if (push.branch.startsWith('railyard-merge/')) pushedTest.add(push.sha);
    return [{ name: 'test', status: 'success', delayMs: CI_MS }];
  });
  const server = await startRailyard(gl, {
    webhooks,
    dataDir: tempDir('railyard-bench-'),
    pollSeconds: POLL_SECONDS,
  });
  const iids: number[] = [];
  for (let n = 1; n <= PRS; n++)
    iids.push(
      (
        await gl.createMergeRequest(PROJECT, {
          sourceBranch: `f${n}`,
          title: `MR ${n}`,
          files: { [`f${n}.txt`]: `${n}\n` },
        })
      ).iid,
    );
  await createQueue(server, gl, { concurrency: 2 });
  await gl.idle();
  gl.resetRequestCount();

  const green = new Map<string, number>();
  const latencies: number[] = [];
  let lastMain = await gl.branchSha(PROJECT, 'main');
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const now = Date.now();
      for (const sha of pushedTest) {
        if (green.has(sha)) continue;
        const jobs = gl.statuses(PROJECT, sha).filter((s) => s.kind === 'build');
        if (jobs.length > 0 && jobs.every((s) => s.status === 'success')) green.set(sha, now);
      }
      const main = await gl.branchSha(PROJECT, 'main');
      if (main && main !== lastMain) {
        lastMain = main;
        const g = green.get(main);
        if (g !== undefined) latencies.push(Date.now() - g);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  })();

  const t0 = Date.now();
  for (const n of iids) await submit(server, gl, n);
  let merged = 0;
  for (const n of iids) if ((await waitFor(server, gl, n, settled, 300_000)).state === 'merged') merged++;
  const wallMs = Date.now() - t0;
  // Status and note updates go on after the last landing: count them all.
  for (
    let seen = -1, quietSince = Date.now();
    Date.now() - quietSince < 3000;
    await new Promise((r) => setTimeout(r, 200))
  ) {
    if (gl.requests.length !== seen) [seen, quietSince] = [gl.requests.length, Date.now()];
  }
  sampling = false;
  await sampler;
  const byRoute = new Map<string, number>();
  for (const r of gl.requests)
    byRoute.set(routeOf(r.method, r.path), (byRoute.get(routeOf(r.method, r.path)) ?? 0) + 1);
  const events = new Map<string, number>();
  for (const d of gl.deliveries) events.set(d.event, (events.get(d.event) ?? 0) + 1);
  const figures = {
    mode: webhooks ? 'hooks' : `polling every ${POLL_SECONDS} s`,
    merged,
    requests: gl.requests.length,
    byRoute,
    events,
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
  console.log(`  REST requests per merged MR: ${(f.requests / f.merged).toFixed(1)}`);
  console.log(
    `  last job green -> target moved: p50 ${pct(f.latencies, 50)} ms, max ${Math.max(...f.latencies)} ms (${f.latencies.length} landings)`,
  );
  if (f.events.size)
    console.log(`  hook deliveries: ${[...f.events].map(([e, n]) => `${e} ${n}`).join(', ')}`);
  for (const [route, n] of [...f.byRoute].sort((a, b) => b[1] - a[1]))
    console.log(`    ${String(n).padStart(4)}  ${route}`);
}
