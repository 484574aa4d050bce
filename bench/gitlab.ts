/**
 * GitLab forge benchmark: the real `railyard serve --gitlab` (built) against the GitLab emulator.
 * Lands BENCH_PRS merge requests (default 6; squash, concurrency 2, CI one job taking
 * BENCH_CI_MS = 2000 ms) once with hooks and once polling every BENCH_POLL_SECONDS (default 1),
 * and prints:
 *   - REST requests per merged MR, counted by the emulator (git over smart HTTP is not REST);
 *   - time from the last job of a test commit going green to the target branch moving to it
 *     (sampled every 20 ms), p50 / max.
 * Goals (issue 24): <= 15 requests per merged MR with hooks, <= 30 polling; p50 <= 2 s to land.
 * BENCH_FORKS = n: the first n MRs come from a fork (`contrib/app`), whose heads take no commit
 * status on the target (their note says it all).
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
import { quiet, report, sampleGreenToLanded, settledQuietly, tally } from './forge-bench.js';

const PRS = Number(process.env.BENCH_PRS ?? 6);
const CI_MS = Number(process.env.BENCH_CI_MS ?? 2000);
const POLL_SECONDS = Number(process.env.BENCH_POLL_SECONDS ?? 1);
const FORKS = Number(process.env.BENCH_FORKS ?? 0);

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
  const fork = FORKS > 0 ? gl.forkProject(PROJECT, 'contrib').path : null;
  const iids: number[] = [];
  for (let n = 1; n <= PRS; n++)
    iids.push(
      (
        await gl.createMergeRequest(PROJECT, {
          sourceBranch: `f${n}`,
          title: `MR ${n}`,
          files: { [`f${n}.txt`]: `${n}\n` },
          ...(fork && n <= FORKS ? { sourceProject: fork } : {}),
        })
      ).iid,
    );
  await createQueue(server, gl, { concurrency: 2 });
  await gl.idle();
  gl.resetRequestCount();

  const sampler = sampleGreenToLanded(
    pushedTest,
    (sha) => {
      const jobs = gl.statuses(PROJECT, sha).filter((s) => s.kind === 'build');
      return jobs.length > 0 && jobs.every((s) => s.status === 'success');
    },
    () => gl.branchSha(PROJECT, 'main'),
  );

  const t0 = Date.now();
  for (const n of iids) await submit(server, gl, n);
  let merged = 0;
  for (const n of iids) {
    const pr = await settledQuietly(
      () => gl.getMergeRequest(PROJECT, n).state !== 'opened',
      async () => {
        const p = await waitFor(server, gl, n, () => true);
        return settled(p) ? p : null;
      },
    );
    if (pr.state === 'merged') merged++;
  }
  const wallMs = Date.now() - t0;
  // Status and note updates go on after the last landing: count them all.
  await quiet(gl);
  const latencies = await sampler.stop();
  const { byRoute, events } = tally(gl);
  const figures = {
    mode: `${webhooks ? 'hooks' : `polling every ${POLL_SECONDS} s`}${FORKS > 0 ? `, ${Math.min(FORKS, PRS)} of ${PRS} MRs from a fork` : ''}`,
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

for (const webhooks of [true, false]) {
  const f = await once(webhooks);
  report(f, PRS, { check: 'job', deliveries: 'hook deliveries' }, [
    `REST requests per merged MR: ${(f.requests / f.merged).toFixed(1)}`,
  ]);
}
