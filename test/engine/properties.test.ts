import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { PriorityInput } from '../../src/contract/index.js';
import { findEntry, type ConfigPatch, type FailedTest, type TestRun } from '../../src/engine/index.js';
import { facts, Harness } from './harness.js';

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
  flakyPolicy: fc.constantFrom('off' as const, 'ignore_quarantined' as const, 'ignore_flaky' as const),
  flakyRetries: fc.integer({ min: 0, max: 2 }),
  probationThreshold: fc.constantFrom(null, 0.3, 0.6),
});

const prSpec = fc.record({
  broken: fc.boolean(),
  priority: fc.constantFrom<PriorityInput | undefined>(undefined, 'urgent', 'high', 'medium', 'low', 42),
  noBatch: fc.boolean(),
  targets: fc.constantFrom<string[] | 'ALL'>(['a'], ['b'], ['c'], ['a', 'b'], 'ALL', []),
  riskEstimate: fc.constantFrom<number | undefined>(undefined, 0.1, 0.5, 0.9),
  /** Stacked on the PR submitted this many before it (rules/stacks.ts); undefined = on main. */
  stackOn: fc.constantFrom<number | undefined>(undefined, undefined, 1, 1, 2),
});

/** The failing tests a failed run reports (with flakes on): any mix of quarantined, flaky and changed tests. */
const failingTests = fc.array(
  fc.record({ quarantined: fc.boolean(), flaky: fc.boolean(), changedByPr: fc.boolean() }),
  { maxLength: 3 },
);

/** What the world does next: submit, finish a run (by its index among runs in flight), cancel, restart, tick, push. */
const action = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('submit' as const) }) },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('finish' as const),
      pick: fc.nat(),
      flake: fc.boolean(),
      tests: failingTests,
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('restart' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('push' as const), pick: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('tick' as const), minutes: fc.integer({ min: 1, max: 30 }) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('targetMoved' as const) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('pause' as const),
      state: fc.constantFrom('paused' as const, 'running' as const, 'draining' as const),
    }),
  },
);

interface Scenario {
  config: ConfigPatch & { mode: 'single' | 'parallel' };
  prs: {
    broken: boolean;
    priority?: PriorityInput;
    noBatch: boolean;
    targets: string[] | 'ALL';
    riskEstimate?: number;
    stackOn?: number;
  }[];
  actions: {
    kind: string;
    pick?: number;
    flake?: boolean;
    tests?: Omit<FailedTest, 'name'>[];
    minutes?: number;
    state?: 'paused' | 'running' | 'draining';
  }[];
  flakes: boolean;
}

function play(s: Scenario): Harness {
  const { mode, ...config } = s.config;
  const h = new Harness(config, mode);
  h.checkWorkingSet = true;
  const broken = new Set(s.prs.flatMap((p, i) => (p.broken ? [i + 1] : [])));
  const passes = (run: TestRun, flake: boolean) =>
    !(s.flakes && flake) && ![...run.basePrNumbers, ...run.prNumbers].some((pr) => broken.has(pr));
  let next = 0;
  const active = () => h.model.entries.filter((e) => !['merged', 'failed', 'cancelled'].includes(e.state));
  // The forge: what each PR is stacked on (while that PR is open) and how often it was pushed to.
  const stackedOn = new Map<number, number>();
  s.prs.forEach((p, i) => {
    if (p.stackOn !== undefined && i + 1 - p.stackOn >= 1) stackedOn.set(i + 1, i + 1 - p.stackOn);
  });
  const pushes = new Map<number, number>();
  const prFacts = (pr: number) => {
    const f = facts(pr, 'main', stackedOn.get(pr));
    const n = pushes.get(pr) ?? 0;
    return n ? { ...f, headSha: (pr * 1000 + n).toString(16).padStart(40, '0') } : f;
  };
  // Submitting a PR submits the PRs below it that are not queued (a merged one no longer is its base).
  const submit = (pr: number): void => {
    const on = stackedOn.get(pr);
    if (on !== undefined) {
      const state = h.state(on);
      if (state === 'merged') stackedOn.delete(pr);
      else if (state === undefined || state === 'failed' || state === 'cancelled') submit(on);
    }
    const p = s.prs[pr - 1];
    h.submit(pr, {
      priority: p.priority,
      noBatch: p.noBatch,
      targets: p.targets,
      riskEstimate: p.riskEstimate,
      facts: prFacts(pr),
    });
  };
  for (const a of s.actions) {
    switch (a.kind) {
      case 'submit':
        if (next < s.prs.length) submit(++next);
        break;
      case 'push': {
        const list = active();
        if (!list.length) break;
        const pr = list[(a.pick ?? 0) % list.length].prNumber;
        pushes.set(pr, (pushes.get(pr) ?? 0) + 1);
        h.apply({ type: 'prUpdated', prNumber: pr, pr: prFacts(pr) });
        break;
      }
      case 'finish': {
        const running = h.inProgress();
        if (running.length) {
          const run = running[(a.pick ?? 0) % running.length];
          const passed = passes(run, a.flake ?? false);
          // With flakes, a failure names failing tests of any kind: a real breakage may show only in a quarantined test.
          const failures =
            s.flakes && !passed ? a.tests?.map((t, i) => ({ name: `t${i}`, ...t })) : undefined;
          h.finish(run.id, passed, failures);
        }
        break;
      }
      case 'cancel':
      case 'restart': {
        const list = active();
        if (!list.length) break;
        const entry = list[(a.pick ?? 0) % list.length];
        if (a.kind === 'cancel')
          h.apply({ type: 'cancel', prNumber: entry.prNumber, reason: 'USER_REQUESTED' });
        else if (entry.state !== 'not_ready')
          h.apply({ type: 'restart', prNumber: entry.prNumber, reason: 'TESTS_RESTARTED_BY_API_REQUEST' });
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
  while (next < s.prs.length) submit(++next);
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
    // A set: a retry of a flaky run tests the commit of the run it repeats, whose base PRs may have
    // landed in between (then in the target at the retry's start and among its tested PRs too).
    // A PR landed twice still fails below: the target would hold it twice.
    const commit = [...new Set([...m.targetAtStart, ...m.tested])];
    for (const pr of commit) expect(m.targetAfter).toContain(pr);
    if (config.mode === 'single') expect([...m.targetAfter].sort()).toEqual(commit.sort());
  }
  // Every test commit, built on what the engine named (rules/basis.ts), holds its unmerged base and
  // its own PRs, and nothing but those and landed PRs. In single mode a main-line commit holds
  // exactly the target it started from plus those (bisection groups are tested off the line: one
  // built on another group's commit may miss what landed since, and lands only if it did not).
  for (const [runId, built] of h.built) {
    const run = h.run(runId);
    const base = h.baseAtStart.get(runId) ?? [];
    const want = [...(h.targetAtStart.get(runId) ?? []), ...base, ...run.prNumbers];
    for (const pr of [...base, ...run.prNumbers]) expect(built, `test commit of run ${runId}`).toContain(pr);
    for (const pr of built) expect([...h.target, ...want], `test commit of run ${runId}`).toContain(pr);
    if (config.mode === 'single' && !run.isBisection)
      expect([...built].sort(), `test commit of run ${runId}`).toEqual([...want].sort());
  }
  // No PR merges twice.
  expect(new Set(h.target).size).toBe(h.target.length);
  // A stack lands whole, bottom first, in one merge: never partly.
  expect(h.partlyLanded).toEqual([]);
  // A PR stacked on another lands with it or after it.
  for (const e of h.model.entries) {
    if (e.state !== 'merged' || e.pr.stackedOn === undefined) continue;
    expect(h.target.indexOf(e.pr.stackedOn), `#${e.prNumber} landed before #${e.pr.stackedOn}`).toBeLessThan(
      h.target.indexOf(e.prNumber),
    );
  }
  // A cancelled or failed PR never merges (unless submitted again later); a merged PR is on the target.
  for (const e of h.model.entries) {
    if (findEntry(h.model, e.prNumber) !== e) continue;
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
  checkFlakyRules(h);
}

/** The flake-aware rules: an ignored failure never involves a changed test; probation PRs land only after passing. */
function checkFlakyRules(h: Harness): void {
  for (const run of h.model.runs) {
    if (!run.flakyIgnored) continue;
    expect(run.status).toBe('succeeded');
    expect(run.failures?.length ?? 0, `run ${run.id} ignored failures it was not told of`).toBeGreaterThan(0);
    expect(
      run.failures?.filter((t) => t.changedByPr) ?? [],
      `run ${run.id} ignored a test the PR changes`,
    ).toEqual([]);
  }
  // A retry tests the same PRs on the same base as the run it repeats.
  for (const run of h.model.runs) {
    if (!run.retryOf) continue;
    const first = h.run(run.retryOf);
    expect([first.status, run.prNumbers, run.basePrNumbers]).toEqual([
      'failed',
      first.prNumbers,
      first.basePrNumbers,
    ]);
  }
  // A PR put on probation lands only after a probation run of it alone, started after, passed.
  const probationSince = new Map<string, number>();
  for (const { at, effect } of h.log) {
    if (effect.type !== 'stateChanged') continue;
    if (effect.reason === 'PROBATION_REQUIRED') probationSince.set(effect.entryId, at);
    if (effect.to !== 'merged' || !probationSince.has(effect.entryId)) continue;
    // A stack is tested whole: a PR that joined a stack left its probation for the stack's run.
    if (h.stacksLanded.some((stack) => stack.includes(effect.prNumber))) continue;
    const since = probationSince.get(effect.entryId) as number;
    const passed = h.model.runs.some(
      (r) =>
        r.isProbation &&
        r.status === 'succeeded' &&
        r.prNumbers.length === 1 &&
        r.prNumbers[0] === effect.prNumber &&
        r.startedAt >= since &&
        (r.finishedAt ?? Infinity) <= at,
    );
    expect(passed, `#${effect.prNumber} landed from probation without passing it`).toBe(true);
  }
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
        // The PRs linked by stacking: a stack fails whole when one of its PRs is broken.
        const linked = (pr: number): number[] => {
          const group = new Set([pr]);
          for (let grew = true; grew; ) {
            grew = false;
            s.prs.forEach((p, i) => {
              const on = p.stackOn === undefined ? undefined : i + 1 - p.stackOn;
              if (on === undefined || on < 1) return;
              if (group.has(i + 1) !== group.has(on)) {
                group.add(i + 1);
                group.add(on);
                grew = true;
              }
            });
          }
          return [...group];
        };
        s.prs.forEach((p, i) => {
          const pr = i + 1;
          const state = h.state(pr);
          if (state === 'cancelled') return;
          if (state === 'failed' && linked(pr).some((o) => s.prs[o - 1].broken)) return;
          if (p.broken) expect(state).toBe('failed');
          else if (state === 'failed')
            expect([pr, h.reason(pr)]).toEqual([pr, 'TEST_RUN_TIMEOUT']); // slow, not broken
          else expect([pr, state]).toEqual([pr, 'merged']);
        });
      }),
      { numRuns: 400 },
    );
  });

  it('starts pending PRs in priority order (single mode, no batching)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom<PriorityInput>('urgent', 'high', 'medium', 'low', 7, 150), {
          minLength: 2,
          maxLength: 10,
        }),
        fc.integer({ min: 1, max: 3 }),
        (priorities, concurrency) => {
          const h = new Harness({ concurrency, state: 'paused' });
          priorities.forEach((p, i) => h.submit(i + 1, { priority: p }));
          h.apply({ type: 'updateConfig', patch: { state: 'running' } });
          h.settle(() => true);
          const order = h.target;
          const value = (pr: number) => h.model.entries.find((e) => e.prNumber === pr)!.priority.value;
          expect(order).toEqual([...order].sort((a, b) => value(a) - value(b) || a - b));
        },
      ),
      { numRuns: 200 },
    );
  });
});
