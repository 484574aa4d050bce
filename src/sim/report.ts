/** The human summary of a `railyard sim` result: inputs, figures and bounds. */
import Table from 'cli-table3';
import type { SimResult } from './simulate.js';

const fixed = (value: number | null | undefined, digits = 1) =>
  value === null || value === undefined ? '—' : value.toFixed(digits);

/** The human summary of `railyard sim`: the inputs in one line, then the figures and the bounds. */
export function renderSimResult(r: SimResult): string {
  const o = r.options;
  const settings = [
    `${o.mode}${o.mode === 'parallel' ? ` (${o.lanes} lanes)` : ''}`,
    `concurrency ${o.concurrency}`,
    o.batchSize !== null ? `batches of ${o.batchSize} (wait ${o.batchWaitMinutes} min)` : 'no batching',
    ...(o.bisectionConcurrency !== null ? [`bisection concurrency ${o.bisectionConcurrency}`] : []),
    ...(o.optimistic ? ['optimistic'] : []),
    ...(o.pendingFailureDepth > 0 ? [`pending failure depth ${o.pendingFailureDepth}`] : []),
    ...(o.skipRedundant ? ['skip redundant'] : []),
    ...(o.flakyPolicy && o.flakyPolicy !== 'off' ? [`flaky policy ${o.flakyPolicy}`] : []),
    ...(o.flakyRetries ? [`flaky retries ${o.flakyRetries}`] : []),
    ...(o.probationThreshold !== undefined && o.probationThreshold !== null
      ? [`probation above ${o.probationThreshold}`]
      : []),
  ].join(', ');
  const load = [
    `${o.arrivalRate} PRs/h`,
    ...(o.backlog ? [`backlog ${o.backlog}${o.keepBacklog ? ' (standing)' : ''}`] : []),
    `T ${o.ciMinutes} min${o.ciJitter ? ` ±${Math.round(o.ciJitter * 100)} %` : ''}`,
    `p ${o.failureRate}`,
    `f ${o.flakeRate}`,
    ...(o.quarantineCoverage !== undefined
      ? [`flakes known ${Math.round(o.quarantineCoverage * 100)} %`]
      : []),
    ...(o.stackShare !== undefined
      ? [
          `${Math.round(o.stackShare * 100)} % of PRs in stacks of ${(o.stackDepth ?? [2, 3]).join('-')}${o.stackUnlinked ? ' (not linked)' : ''}`,
        ]
      : []),
    ...(o.riskShare !== undefined
      ? [
          `${Math.round(o.riskShare * 100)} % of PRs at p ${o.riskFailureRate ?? o.failureRate} (accuracy ${o.riskAccuracy ?? 1})`,
        ]
      : []),
    `${fixed(r.measuredHours)} h measured`,
    `seed ${o.seed}`,
  ].join(', ');
  const b = r.bounds;
  const table = new Table({ head: ['figure', 'value'], style: { head: [], border: [] } });
  table.push(
    ['merged PRs / hour', fixed(r.mergedPerHour, 2)],
    ['resolved (merged + failed) / hour', fixed(r.resolvedPerHour, 2)],
    [
      'time in queue p50 / p95 (min)',
      `${fixed(r.timeInQueueMinutes.p50)} / ${fixed(r.timeInQueueMinutes.p95)}`,
    ],
    ['CI runs per merged PR', fixed(r.ciRunsPerMerged, 2)],
    ['submitted / merged / failed', `${r.submitted} / ${r.merged} / ${r.failed}`],
    ['failed but not broken (flakes)', String(r.failedNotBroken)],
    ['test runs (bisection) / cancelled', `${r.ciRuns} (${r.bisectionRuns}) / ${r.cancelledRuns}`],
    ['main slots busy', `${fixed(r.mainSlotUtilisation * 100, 0)} %`],
    ...(r.flakyIgnored !== undefined
      ? [
          [
            'flaky failures ignored / retries (of real failures)',
            `${r.flakyIgnored} / ${r.retries} (${r.retriesOfRealFailures})`,
          ],
          ['quarantine escapes (broken PRs landed)', String(r.quarantineEscapes)],
          ['probation runs (slots busy)', `${r.probationRuns} (${fixed(r.probationSlotsBusy, 2)})`],
        ]
      : []),
    ...(r.stacks !== undefined
      ? [
          [
            'stacks (PRs in them) / landed whole / landed partly',
            `${r.stacks} (${r.prsInStacks}) / ${r.stacksLanded} / ${r.stacksLandedPartly}`,
          ],
        ]
      : []),
    ['still queued at the end', String(r.waitingAtEnd)],
    [
      `bound (${b.model.replace('_', ' ')}${b.lanes > 1 ? ` × ${b.lanes} lanes` : ''}, p_eff ${fixed(b.effectiveFailureRate, 3)})`,
      `${fixed(b.mergedPerHour, 2)} merged/h, ${fixed(b.resolvedPerHour, 2)} resolved/h`,
    ],
    ['merged / bound', r.boundRatio === null ? '—' : `${fixed(r.boundRatio * 100, 0)} %`],
    [
      'cap (N → ∞) / ideal (every run passes)',
      `${fixed(b.capPerHour, 1)} / ${fixed(b.idealPerHour, 1)} per hour`,
    ],
  );
  return `${settings}\n${load}\n${table.toString()}\n`;
}
