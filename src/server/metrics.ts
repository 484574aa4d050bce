import { Gauge, Histogram, Registry } from 'prom-client';
import { CONCLUSIONS } from '../contract/constants.js';
import { isTerminal, type Entry, type TestRun } from '../engine/index.js';
import type { QueueHandle } from './service.js';

export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

const HOUR_MS = 60 * 60 * 1000;

/** The buckets of every histogram (seconds), as the contract lists them; +Inf is implicit. */
export const BUCKETS = [60, 300, 600, 900, 1800, 3600, 5400, 7200];

type QueueType = 'main' | 'bisection';

/**
 * Prometheus text for the given queues, computed from live engine data at scrape time. Labels on
 * every series: repo (owner/name), branch, queue_type (main | bisection). The `_1h` series are
 * snapshots of the last hour: a fresh registry is filled on every scrape.
 *
 * Where the numbers come from:
 * - depth: admitted PRs not yet concluded; awaiting mergeability: `not_ready` ones;
 *   testing slots: PRs in a run in progress. Bisection rows count PRs split out of a failed batch
 *   (also once their group passed and they went back to the main line); testing slots and test
 *   durations follow the run (a bisection run or a main-line one).
 * - conclusions / time in queue: PRs that reached merged, failed or cancelled in the last hour.
 * - restarts: PRs of runs whose PRs went back to pending in the last hour.
 * - wait: admission → start of the test that started in the last hour; test duration: runs
 *   that finished in the last hour, once per PR.
 * - state duration: `not_ready` (submission → admission), `pending` (as wait) and `testing`
 *   (as test duration); the engine keeps no fuller per-state history.
 */
export async function renderMetrics(queues: readonly QueueHandle[], now: number): Promise<string> {
  const registry = new Registry();
  const labelNames = ['repo', 'branch', 'queue_type'] as const;
  const gauge = (name: string, help: string, extra: string[] = []) =>
    new Gauge({ name, help, labelNames: [...labelNames, ...extra], registers: [registry] });
  const histogram = (name: string, help: string, extra: string[] = []) =>
    new Histogram({ name, help, labelNames: [...labelNames, ...extra], buckets: BUCKETS, registers: [registry] });

  const depth = gauge('mq_depth_current', 'PRs currently in the queue (admitted, not concluded)');
  const awaiting = gauge('mq_awaiting_mergeability', 'PRs waiting on prerequisites before they can enter the queue');
  const testing = gauge('mq_testing_slots_active', 'PRs in testing');
  const conclusions = gauge('mq_pr_conclusions_1h_total', 'PRs that left the queue in the last hour', ['conclusion']);
  const restarts = gauge('mq_pr_restarts_1h_total', 'Restarts of testing (testing to pending) in the last hour');
  const wait = histogram('mq_pr_wait_duration_1h_seconds', 'Wait before testing started, last hour');
  const test = histogram('mq_pr_test_duration_1h_seconds', 'Time in testing, last hour');
  const inQueue = histogram('mq_pr_time_in_queue_1h_seconds', 'Submission to conclusion, last hour', ['conclusion']);
  const inState = histogram('mq_pr_state_duration_1h_seconds', 'Time spent per state, last hour', ['state']);

  const recent = (t: number | null | undefined): t is number => t !== null && t !== undefined && t <= now && now - t <= HOUR_MS;
  const seconds = (ms: number) => Math.max(0, ms) / 1000;

  for (const q of queues) {
    const base = { repo: `${q.repo.owner}/${q.repo.name}`, branch: q.model.branch };
    const labels = (queue_type: QueueType) => ({ ...base, queue_type });
    const runs = new Map<string, TestRun>(q.model.runs.map((r) => [r.id, r]));
    const typeOfEntry = (e: Entry): QueueType => (e.bisected ? 'bisection' : 'main');
    const typeOfRun = (r: TestRun): QueueType => (r.isBisection ? 'bisection' : 'main');

    // Histograms without observations still expose their series (zero counts) for every queue.
    for (const type of ['main', 'bisection'] as const) {
      wait.zero(labels(type));
      test.zero(labels(type));
      for (const conclusion of CONCLUSIONS) inQueue.zero({ ...labels(type), conclusion });
    }
    const counts = {
      main: { depth: 0, awaiting: 0, testing: 0, restarts: 0, merged: 0, failed: 0, cancelled: 0 },
      bisection: { depth: 0, awaiting: 0, testing: 0, restarts: 0, merged: 0, failed: 0, cancelled: 0 },
    };
    for (const e of q.model.entries) {
      const type = typeOfEntry(e);
      const c = counts[type];
      if (!isTerminal(e.state)) {
        if (e.state === 'not_ready') c.awaiting++;
        else c.depth++;
        const run = e.testRunId ? runs.get(e.testRunId) : undefined;
        if (e.state === 'testing' && run?.status === 'in_progress') counts[typeOfRun(run)].testing++;
      }
      if (isTerminal(e.state) && recent(e.concludedAt)) {
        c[e.state as 'merged' | 'failed' | 'cancelled']++;
        inQueue.observe({ ...labels(type), conclusion: e.state }, seconds(e.concludedAt - e.submittedAt));
      }
      if (e.admittedAt !== null && recent(e.admittedAt)) inState.observe({ ...labels(type), state: 'not_ready' }, seconds(e.admittedAt - e.submittedAt));
      if (recent(e.testingStartedAt) && e.admittedAt !== null) {
        const waited = seconds(e.testingStartedAt - e.admittedAt);
        wait.observe(labels(type), waited);
        inState.observe({ ...labels(type), state: 'pending' }, waited);
      }
    }
    for (const r of q.model.runs) {
      if (recent(r.restartedAt)) counts[typeOfRun(r)].restarts += r.prNumbers.length;
      if (recent(r.finishedAt) && r.status !== 'cancelled') {
        for (let i = 0; i < r.prNumbers.length; i++) {
          test.observe(labels(typeOfRun(r)), seconds(r.finishedAt - r.startedAt));
          inState.observe({ ...labels(typeOfRun(r)), state: 'testing' }, seconds(r.finishedAt - r.startedAt));
        }
      }
    }
    for (const type of ['main', 'bisection'] as const) {
      const c = counts[type];
      depth.set(labels(type), c.depth);
      awaiting.set(labels(type), c.awaiting);
      testing.set(labels(type), c.testing);
      restarts.set(labels(type), c.restarts);
      for (const conclusion of CONCLUSIONS) conclusions.set({ ...labels(type), conclusion }, c[conclusion]);
    }
  }
  return registry.metrics();
}
