/** `railyard sim`: simulate the merge queue engine in virtual time and compare it with the analytic bounds. */
import { Command, Errors, Flags } from '@oclif/core';
import { EXIT } from '../cli/exit.js';

/** A number flag (oclif has integers only). */
const number = (description: string, defaultValue: number, range: { min?: number; max?: number } = {}) =>
  Flags.custom<number>({
    description,
    default: defaultValue,
    helpValue: 'N',
    parse: async (text, _ctx, opts) => {
      const value = Number(text);
      if (text.trim() === '' || !Number.isFinite(value))
        throw new Error(`--${opts.name}: expected a number, got "${text}"`);
      if (range.min !== undefined && value < range.min)
        throw new Error(`--${opts.name}: must be ≥ ${range.min}, got ${value}`);
      if (range.max !== undefined && value > range.max)
        throw new Error(`--${opts.name}: must be ≤ ${range.max}, got ${value}`);
      return value;
    },
  })();

/** A number flag without a default: absent means the feature it belongs to is off. */
const optionalNumber = (description: string, range: { min?: number; max?: number } = {}) =>
  Flags.custom<number>({
    description,
    helpValue: 'N',
    parse: async (text, _ctx, opts) => {
      const value = Number(text);
      if (text.trim() === '' || !Number.isFinite(value))
        throw new Error(`--${opts.name}: expected a number, got "${text}"`);
      if (range.min !== undefined && value < range.min)
        throw new Error(`--${opts.name}: must be ≥ ${range.min}, got ${value}`);
      if (range.max !== undefined && value > range.max)
        throw new Error(`--${opts.name}: must be ≤ ${range.max}, got ${value}`);
      return value;
    },
  })();

export default class Sim extends Command {
  static override enableJsonFlag = true;

  static override summary =
    'Simulate the merge queue engine in virtual time and compare it with the analytic bounds';

  static override description =
    'Drives the real engine with simulated pull requests and CI: Poisson arrivals (--arrival-rate) and/or a backlog ' +
    'waiting at the start, test runs of --ci-minutes (exactly, or ±--ci-jitter), PRs that are really broken with ' +
    'probability --failure-rate and runs that flake with probability --flake-rate. A run fails when any PR its test ' +
    'commit contains is broken, or when it flakes. Merges land instantly. Reports merged PRs per hour, time in queue ' +
    '(submit → merged), CI runs per merged PR and the throughput bounds of the round model ' +
    '(docs/decisions.md, "Simulator bounds") for the same inputs. The same seed gives the same figures.';

  static override examples = [
    {
      description: 'Capacity: a standing backlog of 500 PRs, 30-minute CI, 5 % broken PRs, concurrency 10',
      command:
        '<%= config.bin %> sim --backlog 500 --keep-backlog --arrival-rate 0 --hours 48 --warmup-hours 1',
    },
    {
      description: 'Latency at 8 PRs/hour with batches of 4 and bisection that skips known results',
      command: '<%= config.bin %> sim --arrival-rate 8 --batch-size 4 --skip-redundant --hours 200',
    },
    {
      description: 'Flakes at 5 % per run, 80 % of them on quarantined tests, which the queue ignores',
      command:
        '<%= config.bin %> sim --backlog 500 --keep-backlog --arrival-rate 0 --flake-rate 0.05 --quarantine-coverage 0.8 --flaky-policy ignore_quarantined',
    },
    {
      description: 'Batches of 4; 10 % of PRs fail with p = 35 % and are tested alone first (probation)',
      command:
        '<%= config.bin %> sim --backlog 500 --keep-backlog --arrival-rate 0 --batch-size 4 --risk-share 0.1 --risk-failure-rate 0.35 --probation-threshold 0.2',
    },
    {
      description: 'Parallel mode with 4 disjoint lanes, as JSON',
      command: '<%= config.bin %> sim --mode parallel --lanes 4 --arrival-rate 12 --json',
    },
  ];

  static override flags = {
    'arrival-rate': number('PRs submitted per hour (Poisson arrivals); 0 = none', 10, { min: 0 }),
    backlog: Flags.integer({ description: 'PRs already waiting at the start', default: 0, min: 0 }),
    'keep-backlog': Flags.boolean({
      description: 'keep the backlog standing: every PR that leaves is replaced at once',
      default: false,
    }),
    'ci-minutes': number('minutes one test run takes (T)', 30, { min: 0.001 }),
    'ci-jitter': number('run durations uniform in T·(1 ± this); 0 = exactly T', 0, { min: 0, max: 0.99 }),
    'failure-rate': number('probability that a PR is really broken (p)', 0.05, { min: 0, max: 1 }),
    'flake-rate': number('probability that a test run fails for no reason (f)', 0, { min: 0, max: 1 }),
    lanes: Flags.integer({
      description: 'impacted targets come from this many disjoint groups (parallel mode only)',
      default: 1,
      min: 1,
    }),
    hours: number('virtual hours to simulate', 24, { min: 0.001 }),
    'warmup-hours': number('leave merges and submissions of the first hours out of the figures', 0, {
      min: 0,
    }),
    seed: Flags.integer({ description: 'seed of the random numbers (same seed, same figures)', default: 1 }),
    'max-prs': Flags.integer({
      description: 'create at most this many PRs, then run until the queue is empty (or --hours)',
      min: 1,
    }),
    mode: Flags.string({ description: 'queue mode', options: ['single', 'parallel'], default: 'single' }),
    concurrency: Flags.integer({
      description: 'test runs at once (N), per lane in parallel mode',
      default: 10,
      min: 1,
    }),
    'batch-size': Flags.integer({ description: 'turn batching on with this target batch size (B)', min: 1 }),
    'batch-wait-minutes': number('maximum wait to fill a batch', 5, { min: 0 }),
    'bisection-concurrency': Flags.integer({
      description: 'bisection runs at once, per lane in parallel mode [default: --concurrency]',
      min: 1,
    }),
    optimistic: Flags.boolean({ description: 'optimistic merging (canOptimisticallyMerge)', default: false }),
    'pending-failure-depth': Flags.integer({
      description: 'successors a failure waits for (pendingFailureDepth)',
      default: 0,
      min: 0,
    }),
    'skip-redundant': Flags.boolean({
      description: 'bisection never re-runs a known combination (bisection_skip_redundant_tests)',
      default: false,
    }),
    'quarantine-coverage': optionalNumber(
      'share of flaky failures whose failing test is known: quarantined (--flaky-policy) or with flake history (--flaky-retries) [default: 0]',
      { min: 0, max: 1 },
    ),
    'flaky-policy': Flags.string({
      description: 'failing tests that do not fail a run (flakyPolicy) [default: off]',
      options: ['off', 'ignore_quarantined', 'ignore_flaky'],
    }),
    'flaky-retries': Flags.integer({
      description: 'retries of a failure of known-flaky tests only (flakyRetries) [default: 0]',
      min: 0,
      max: 3,
    }),
    'breakage-in-known-tests': optionalNumber(
      'share of broken PRs whose breakage shows only in a known-flaky test (retried by mistake; ignored = a quarantine escape) [default: 0.05]',
      { min: 0, max: 1 },
    ),
    'risk-share': optionalNumber(
      'share S of PRs in a risky class (the rest get the rate that keeps the mean at --failure-rate)',
      { min: 0, max: 1 },
    ),
    'risk-failure-rate': optionalNumber(
      'failure probability P of the risky class [default: --failure-rate]',
      { min: 0, max: 1 },
    ),
    'risk-accuracy': optionalNumber("how often a PR's risk estimate names its true class [default: 1]", {
      min: 0,
      max: 1,
    }),
    'probation-threshold': optionalNumber(
      'PRs estimated above this are tested alone first (probationThreshold)',
      { min: 0, max: 1 },
    ),
    'stack-share': optionalNumber(
      'share of PRs that arrive in stacks (each PR based on the one below; tested and landed as one unit)',
      { min: 0, max: 1 },
    ),
    'stack-depth': Flags.string({
      description: 'PRs per stack: N or MIN-MAX, from 2 to 20 [default: 2-3]',
      helpValue: 'MIN-MAX',
    }),
    'hang-rate': optionalNumber(
      'share of runs in which a required check never reports (they end at the testing timeout) [default: 0]',
      { min: 0, max: 1 },
    ),
    'testing-timeout': Flags.string({
      description: 'the queue\'s testingTimeoutMinutes: minutes, or "auto" [default: 0, none]',
      helpValue: 'N|auto',
    }),
  };

  async run() {
    let flags;
    try {
      ({ flags } = await this.parse(Sim));
    } catch (error) {
      if (error instanceof Errors.ExitError) throw error;
      this.fail((error as Error).message.replace(/\nSee more help with --help$/, ''));
    }
    const { simulate, parseStackDepth } = await import('../sim/index.js');
    let result;
    try {
      const stackDepth =
        flags['stack-depth'] === undefined ? undefined : parseStackDepth(flags['stack-depth']);
      result = simulate({
        arrivalRate: flags['arrival-rate'],
        backlog: flags.backlog,
        keepBacklog: flags['keep-backlog'],
        ciMinutes: flags['ci-minutes'],
        ciJitter: flags['ci-jitter'],
        failureRate: flags['failure-rate'],
        flakeRate: flags['flake-rate'],
        lanes: flags.lanes,
        hours: flags.hours,
        warmupHours: flags['warmup-hours'],
        seed: flags.seed,
        maxPrs: flags['max-prs'] ?? null,
        mode: flags.mode as 'single' | 'parallel',
        concurrency: flags.concurrency,
        batchSize: flags['batch-size'] ?? null,
        batchWaitMinutes: flags['batch-wait-minutes'],
        bisectionConcurrency: flags['bisection-concurrency'] ?? null,
        optimistic: flags.optimistic,
        pendingFailureDepth: flags['pending-failure-depth'],
        skipRedundant: flags['skip-redundant'],
        // Absent flags stay absent: the features are off and the JSON keeps its earlier shape.
        quarantineCoverage: flags['quarantine-coverage'],
        flakyPolicy: flags['flaky-policy'] as 'off' | 'ignore_quarantined' | 'ignore_flaky' | undefined,
        flakyRetries: flags['flaky-retries'],
        breakageInKnownTests: flags['breakage-in-known-tests'],
        riskShare: flags['risk-share'],
        riskFailureRate: flags['risk-failure-rate'],
        riskAccuracy: flags['risk-accuracy'],
        probationThreshold: flags['probation-threshold'],
        hangRate: flags['hang-rate'],
        testingTimeoutMinutes: testingTimeoutOf(flags['testing-timeout']),
        stackShare: flags['stack-share'],
        ...(stackDepth ? { stackDepth } : {}),
      });
    } catch (error) {
      if (error instanceof RangeError) this.fail(error.message);
      throw error;
    }
    if (!this.jsonEnabled()) {
      const { renderSimResult } = await import('../sim/report.js');
      process.stdout.write(renderSimResult(result));
    }
    return result;
  }

  private fail(message: string): never {
    if (this.jsonEnabled()) this.logJson({ error: { message } });
    else this.logToStderr(`Error: ${message}`);
    this.exit(EXIT.usage);
  }

  protected override async catch(error: Error & { oclif?: { exit?: number } }): Promise<unknown> {
    if (error instanceof Errors.ExitError) throw error;
    (await import('../cli/did-you-mean.js')).withFlagHint(error);
    if (this.jsonEnabled()) {
      this.logJson({ error: { message: error.message } });
      this.exit(error.oclif?.exit ?? EXIT.error);
    }
    return super.catch(error);
  }
}

/** `--testing-timeout`: whole minutes or "auto" (undefined when absent). */
function testingTimeoutOf(text: string | undefined): number | 'auto' | undefined {
  if (text === undefined) return undefined;
  const t = text.trim().toLowerCase();
  if (t === 'auto') return 'auto';
  if (!/^\d{1,7}$/.test(t))
    throw new RangeError(`--testing-timeout: expected whole minutes or "auto", got "${text}"`);
  return Number(t);
}
