import { Gauge, Registry } from 'prom-client';
import { activeEntries } from '../engine/index.js';
import type { QueueHandle } from './service.js';

export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

const HOUR_MS = 60 * 60 * 1000;

/**
 * Prometheus text for the given queues. Labels on every series: repo (owner/name), branch,
 * queue_type. The time-window histograms follow with the engine's testing and merging.
 */
export async function renderMetrics(queues: readonly QueueHandle[], now: number): Promise<string> {
  const registry = new Registry();
  const labelNames = ['repo', 'branch', 'queue_type'] as const;
  const depth = new Gauge({ name: 'mq_depth_current', help: 'PRs currently in the queue', labelNames, registers: [registry] });
  const awaiting = new Gauge({
    name: 'mq_awaiting_mergeability',
    help: 'PRs waiting on prerequisites before they can be queued',
    labelNames,
    registers: [registry],
  });
  const testing = new Gauge({ name: 'mq_testing_slots_active', help: 'PRs in testing', labelNames, registers: [registry] });
  const conclusions = new Gauge({
    name: 'mq_pr_conclusions_1h_total',
    help: 'PRs that left the queue in the last hour',
    labelNames: [...labelNames, 'conclusion'],
    registers: [registry],
  });
  for (const q of queues) {
    const labels = { repo: `${q.repo.owner}/${q.repo.name}`, branch: q.model.branch, queue_type: 'main' };
    const active = activeEntries(q.model);
    depth.set(labels, active.filter((e) => e.state !== 'not_ready').length);
    awaiting.set(labels, active.filter((e) => e.state === 'not_ready').length);
    testing.set(labels, active.filter((e) => e.state === 'testing').length);
    const counts = { merged: 0, failed: 0, cancelled: 0 };
    for (const e of q.model.entries) {
      if (e.concludedAt !== null && now - e.concludedAt <= HOUR_MS && e.state in counts) counts[e.state as keyof typeof counts]++;
    }
    for (const [conclusion, n] of Object.entries(counts)) conclusions.set({ ...labels, conclusion }, n);
  }
  return registry.metrics();
}
