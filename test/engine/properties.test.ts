import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { PriorityInput } from '../../src/contract/index.js';
import type { ConfigPatch, TestRun } from '../../src/engine/index.js';
import { Harness } from './harness.js';

const settings = fc.record({
  mode: fc.constantFrom('single' as const, 'parallel' as const),
  concurrency: fc.integer({ min: 1, max: 5 }),
  bisectionConcurrency: fc.integer({ min: 1, max: 3 }),
  batch: fc.boolean(),
  batchingMinSize: fc.integer({ min: 1, max: 5 }),
  batchingMaxWaitTimeMinutes: fc.integer({ min: 1, max: 20 }),
  canOptimisticallyMerge: fc.boolean(),
  pendingFailureDepth: fc.integer({ min: 0, max: 2 }),
  testingTimeoutMinutes: fc.constantFrom(0, 45),
  optimizationMode: fc.constantFrom('off' as const, 'bisection_skip_redundant_tests' as const),
});

const prSpec = fc.record({
  broken: fc.boolean(),
  priority: fc.constantFrom<PriorityInput | undefined>(undefined, 'urgent', 'high', 'medium', 'low', 42),
  noBatch: fc.boolean(),
  targets: fc.constantFrom<string[] | 'ALL'>(['a'], ['b'], ['c'], ['a', 'b'], 'ALL', []),
});

/** What the world does next: submit, finish a run (by its index among runs in flight), cancel, restart, tick, push. */
const action = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('submit' as const) }) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('finish' as const), pick: fc.nat(), flake: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('restart' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('tick' as const), minutes: fc.integer({ min: 1, max: 30 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('targetMoved' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('pause' as const), state: fc.constantFrom('paused' as const, 'running' as const, 'draining' as const) }) },
);

interface Scenario {
  config: ConfigPatch & { mode: 'single' | 'parallel' };
  prs: { broken: boolean; priority?: PriorityInput; noBatch: boolean; targets: string[] | 'ALL' }[];
  actions: { kind: string; pick?: number; flake?: boolean; minutes?: number; state?: 'paused' | 'running' | 'draining' }[];
  flakes: boolean;
}

function play(s: Scenario): Harness {
  const { mode, ...config } = s.config;
  const h = new Harness(config, mode);
  const broken = new Set(s.prs.flatMap((p, i) => (p.broken ? [i + 1] : [])));
  const passes = (run: TestRun, flake: boolean) =>
    !(s.flakes && flake) && ![...run.basePrNumbers, ...run.prNumbers].some((pr) => broken.has(pr));
  let next = 0;
  const active = () => h.model.entries.filter((e) => !['merged', 'failed', 'cancelled'].includes(e.state));
  for (const a of s.actions) {
    switch (a.kind) {
      case 'submit':
        if (next < s.prs.length) {
          const p = s.prs[next++];
          h.submit(next, { priority: p.priority, noBatch: p.noBatch, targets: p.targets });
        }
        break;
      case 'finish': {
        const running = h.inProgress();
        if (running.length) {
          const run = running[(a.pick ?? 0) % running.length];
          h.finish(run.id, passes(run, a.flake ?? false));
        }
        break;
      }
      case 'cancel':
      case 'restart': {
        const list = active();
        if (!list.length) break;
        const entry = list[(a.pick ?? 0) % list.length];
        if (a.kind === 'cancel') h.apply({ type: 'cancel', prNumber: entry.prNumber, reason: 'USER_REQUESTED' });
        else if (entry.state !== 'not_ready') h.apply({ type: 'restart', prNumber: entry.prNumber, reason: 'TESTS_RESTARTED_BY_API_REQUEST' });
        break;
      }
      case 'tick':
        h.now += (a.minutes ?? 1) * 60_000;
        h.apply({ type: 'tick' });
        break;
      case 'targetMoved':
        h.apply({ type: 'targetMoved' });
        break;
      case 'pause':
        h.apply({ type: 'updateConfig', patch: { state: a.state } });
        break;
    }
  }
  // Then the world calms down: everything is submitted, the queue runs, runs finish without flakes.
  while (next < s.prs.length) {
    const p = s.prs[next++];
    h.submit(next, { priority: p.priority, noBatch: p.noBatch, targets: p.targets });
  }
  h.apply({ type: 'updateConfig', patch: { state: 'running' } });
  h.settle((run) => passes(run, false), 60_000, 5_000);
  return h;
}

const scenario = (flakes: boolean) =>
  fc.record({
    config: settings,
    prs: fc.array(prSpec, { minLength: 1, maxLength: 12 }),
    actions: fc.array(action, { maxLength: 60 }),
    flakes: fc.constant(flakes),
  }) as fc.Arbitrary<Scenario>;

function checkSafety(h: Harness, s: Scenario): void {
  const { config } = s;
  // The target only moves to a commit whose checks passed, and that commit is exactly what lands
  // (single mode) or contains everything it depends on (parallel mode: other lanes may have landed).
  for (const m of h.merges) {
    expect(m.runPassed, `merge of run ${m.runId}`).toBe(true);
    const commit = [...m.targetAtStart, ...m.tested];
    for (const pr of commit) expect(m.targetAfter).toContain(pr);
    if (config.mode === 'single') expect([...m.targetAfter].sort()).toEqual(commit.sort());
  }
  // No PR merges twice.
  expect(new Set(h.target).size).toBe(h.target.length);
  // A cancelled or failed PR never merges; a merged PR is on the target.
  for (const e of h.model.entries) {
    if (e.state === 'cancelled' || e.state === 'failed') expect(h.target).not.toContain(e.prNumber);
    if (e.state === 'merged') expect(h.target).toContain(e.prNumber);
  }
  expect(h.target.length).toBe(h.model.entries.filter((e) => e.state === 'merged').length);
  // Never more runs than the slots allow: no run starts in a lane (the whole queue in single mode)
  // that already has `concurrency` main runs (`bisectionConcurrency` bisection runs) in progress.
  expect(h.maxInFlight.main).toBeLessThanOrEqual(config.concurrency ?? 1);
  expect(h.maxInFlight.bisection).toBeLessThanOrEqual(config.bisectionConcurrency ?? 1);
  // Every state change went through a transition with a timestamp.
  expect(h.model.entries.filter((e) => !Number.isFinite(e.stateChangedAt))).toEqual([]);
}

describe('engine properties (fast-check)', () => {
  it('never lands an untested or failed commit, never merges twice, respects the slots — with flakes', () => {
    fc.assert(
      fc.property(scenario(true), (s) => {
        checkSafety(play(s), s);
      }),
      { numRuns: 400 },
    );
  });

  it('without flakes, exactly the good PRs land and exactly the broken (or cancelled) ones do not', () => {
    fc.assert(
      fc.property(scenario(false), (s) => {
        const h = play(s);
        checkSafety(h, s);
        s.prs.forEach((p, i) => {
          const pr = i + 1;
          const state = h.state(pr);
          if (state === 'cancelled') return;
          if (p.broken) expect(state).toBe('failed');
          else if (state === 'failed') expect([pr, h.reason(pr)]).toEqual([pr, 'TEST_RUN_TIMEOUT']); // slow, not broken
          else expect([pr, state]).toEqual([pr, 'merged']);
        });
      }),
      { numRuns: 400 },
    );
  });

  it('starts pending PRs in priority order (single mode, no batching)', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom<PriorityInput>('urgent', 'high', 'medium', 'low', 7, 150), { minLength: 2, maxLength: 10 }), fc.integer({ min: 1, max: 3 }), (priorities, concurrency) => {
        const h = new Harness({ concurrency, state: 'paused' });
        priorities.forEach((p, i) => h.submit(i + 1, { priority: p }));
        h.apply({ type: 'updateConfig', patch: { state: 'running' } });
        h.settle(() => true);
        const order = h.target;
        const value = (pr: number) => h.model.entries.find((e) => e.prNumber === pr)!.priority.value;
        expect(order).toEqual([...order].sort((a, b) => value(a) - value(b) || a - b));
      }),
      { numRuns: 200 },
    );
  });
});
