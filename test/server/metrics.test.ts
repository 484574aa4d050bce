import { describe, expect, it } from 'vitest';
import { BUCKETS } from '../../src/server/queue/metrics.js';
import { eachDatabase, serversPerTest, type TestDatabase } from '../support/hooks.js';
import type { TestServer, TestServerOptions } from '../support/server.js';
import { call, ok, Q } from './helpers.js';


interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses Prometheus text exposition 0.0.4 (the subset prom-client writes). */
function parse(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-z_:][a-z0-9_:]*)(?:\{(.*)\})? (\S+)$/i.exec(line);
    if (!m) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (m[2] ?? '').match(/(?<![a-z_])[a-z_]+="[^"]*"/gi) ?? []) {
      const [k, v] = pair.split('=');
      labels[k] = JSON.parse(v);
    }
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

const value = (samples: Sample[], name: string, labels: Record<string, string>) =>
  samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;

async function settle(s: TestServer, prs: number[]): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (const n of prs) {
    for (;;) {
      const pr = await ok(s, 'getSubmittedPullRequest', { ...Q, pr: { number: n } });
      if (['merged', 'failed', 'cancelled'].includes(pr.state)) break;
      if (Date.now() > deadline) throw new Error(`#${n} stayed ${pr.state}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** The metrics, once per database (a replica answers them from its copy of the queues). */
function metricsSuite(database: TestDatabase): void {
  const startServer = serversPerTest();

  async function server(opts?: TestServerOptions): Promise<TestServer> {
    return startServer({ ...opts, ...(await database()) });
  }

  describe('getMergeQueueMetrics from live engine data', () => {
    it('exposes every series of the contract with its labels and buckets, counting what happened', async () => {
      const s = await server({ sandbox: { testSeconds: 1, failPrs: new Set([2]) } });
      await ok(s, 'createQueue', { ...Q, concurrency: 3 });
      for (const n of [1, 2, 3]) await ok(s, 'submitPullRequest', { ...Q, pr: { number: n } });
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 4 } });
      await ok(s, 'cancelPullRequest', { ...Q, pr: { number: 4 } });
      await settle(s, [1, 2, 3]);
      await ok(s, 'updateQueue', { ...Q, state: 'paused' });
      await ok(s, 'submitPullRequest', { ...Q, pr: { number: 5 } });

      const res = await call(s, 'getMergeQueueMetrics', { repo: 'acme/web', repoHost: 'github.com' });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
      const samples = parse(res.text);
      const main = { repo: 'acme/web', branch: 'main', queue_type: 'main' };

      for (const [name, type] of [
        ['mq_depth_current', 'gauge'],
        ['mq_awaiting_mergeability', 'gauge'],
        ['mq_testing_slots_active', 'gauge'],
        ['mq_pr_conclusions_1h_total', 'gauge'],
        ['mq_pr_restarts_1h_total', 'gauge'],
        ['mq_pr_wait_duration_1h_seconds', 'histogram'],
        ['mq_pr_test_duration_1h_seconds', 'histogram'],
        ['mq_pr_time_in_queue_1h_seconds', 'histogram'],
        ['mq_pr_state_duration_1h_seconds', 'histogram'],
      ]) {
        expect(res.text).toContain(`# TYPE ${name} ${type}`);
      }
      expect(value(samples, 'mq_depth_current', main)).toBe(1); // #5 waits in the paused queue
      expect(value(samples, 'mq_testing_slots_active', main)).toBe(0);
      expect(value(samples, 'mq_pr_conclusions_1h_total', { ...main, conclusion: 'merged' })).toBe(2);
      expect(value(samples, 'mq_pr_conclusions_1h_total', { ...main, conclusion: 'failed' })).toBe(1);
      expect(value(samples, 'mq_pr_conclusions_1h_total', { ...main, conclusion: 'cancelled' })).toBe(1);
      // #3 was tested on top of #2; #2 failed, so #3 restarted without it.
      expect(value(samples, 'mq_pr_restarts_1h_total', main)).toBeGreaterThanOrEqual(1);

      // Buckets exactly as the contract lists them, cumulative, ending in +Inf = _count.
      const buckets = samples.filter((x) => x.name === 'mq_pr_time_in_queue_1h_seconds_bucket' && x.labels.conclusion === 'merged' && x.labels.queue_type === 'main');
      expect(buckets.map((b) => b.labels.le)).toEqual([...BUCKETS.map(String), '+Inf']);
      expect(buckets.map((b) => b.value)).toEqual(buckets.map((b) => b.value).sort((x, y) => x - y));
      expect(buckets.at(-1)?.value).toBe(2);
      expect(value(samples, 'mq_pr_time_in_queue_1h_seconds_count', { ...main, conclusion: 'merged' })).toBe(2);
      expect(value(samples, 'mq_pr_time_in_queue_1h_seconds_bucket', { ...main, conclusion: 'merged', le: '60' })).toBe(2); // each took seconds
      expect(value(samples, 'mq_pr_test_duration_1h_seconds_count', main)).toBeGreaterThanOrEqual(3);
      expect(value(samples, 'mq_pr_test_duration_1h_seconds_sum', main)).toBeGreaterThan(2);
      // Every series carries repo, branch and queue_type. This queue does not batch, so nothing can
      // be bisected: no bisection rows; and a histogram with nothing in the hour is left out.
      for (const x of samples) expect(Object.keys(x.labels)).toEqual(expect.arrayContaining(['repo', 'branch', 'queue_type']));
      expect(samples.filter((x) => x.labels.queue_type === 'bisection')).toEqual([]);
      expect(value(samples, 'mq_pr_time_in_queue_1h_seconds_count', { ...main, conclusion: 'cancelled' })).toBe(1);
      expect(value(samples, 'mq_pr_time_in_queue_1h_seconds_count', { ...main, conclusion: 'failed' })).toBe(1);
      expect(samples.filter((x) => x.name.startsWith('mq_pr_') && x.name.endsWith('_count')).map((x) => x.value)).not.toContain(0);
    });

    it('keeps the gauges of an idle queue at zero, and its bisection rows once it batches', async () => {
      const s = await server();
      await ok(s, 'createQueue', Q);
      const idle = parse((await call(s, 'getMergeQueueMetrics')).text);
      const main = { repo: 'acme/web', branch: 'main', queue_type: 'main' };
      expect(value(idle, 'mq_depth_current', main)).toBe(0);
      expect(value(idle, 'mq_pr_conclusions_1h_total', { ...main, conclusion: 'merged' })).toBe(0);
      expect(idle.filter((x) => x.name.includes('_seconds_'))).toEqual([]);
      await ok(s, 'updateQueue', { ...Q, batch: true });
      const batching = parse((await call(s, 'getMergeQueueMetrics')).text);
      expect(value(batching, 'mq_depth_current', { ...main, queue_type: 'bisection' })).toBe(0);
      expect(value(batching, 'mq_testing_slots_active', { ...main, queue_type: 'bisection' })).toBe(0);
    });

    it('counts bisection work under queue_type="bisection"', async () => {
      const s = await server({ sandbox: { testSeconds: 1, failPrs: new Set([3]) } });
      await ok(s, 'createQueue', Q);
      await ok(s, 'updateQueue', { ...Q, batch: true, batchingMinSize: 4, bisectionConcurrency: 2 });
      for (const n of [1, 2, 3, 4]) await ok(s, 'submitPullRequest', { ...Q, pr: { number: n } });
      await settle(s, [1, 2, 3, 4]);
      const samples = parse((await call(s, 'getMergeQueueMetrics')).text);
      const bisection = { repo: 'acme/web', branch: 'main', queue_type: 'bisection' };
      expect(value(samples, 'mq_pr_conclusions_1h_total', { ...bisection, conclusion: 'merged' })).toBe(3);
      expect(value(samples, 'mq_pr_conclusions_1h_total', { ...bisection, conclusion: 'failed' })).toBe(1);
      expect(value(samples, 'mq_pr_test_duration_1h_seconds_count', bisection)).toBeGreaterThanOrEqual(4);
    });
  });
}

// SQLite and PostgreSQL side by side: each copy mostly waits on its servers.
eachDatabase(metricsSuite, { sideBySide: true });
