/** getMergeQueueMetrics: the Prometheus exposition of the queues' figures. */
import { CONCLUSIONS, type Conclusion } from '../../contract/index.js';
import { isTerminal, type Entry, type QueueModel, type TestRun } from '../../engine/index.js';
import type { QueueHandle } from './handle.js';

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
 * - flaky retries / ignored (extensions): PRs of retry runs started in the last hour, and
 *   of runs that finished in it failed only on ignored tests (counted as passed).
 * - wait: admission → start of the test that started in the last hour; test duration: runs
 *   that finished in the last hour, once per PR.
 * - state duration: `not_ready` (submission → admission), `pending` (as wait) and `testing`
 *   (as test duration); the engine keeps no fuller per-state history.
 *
 * Which series: the gauges of the main line always (zeros included, so a dashboard's query never
 * finds them missing); the `queue_type="bisection"` gauges when the queue batches (only a batch
 * can be bisected) or has bisection work in the hour; a histogram series only when it has
 * observations in the hour. The `_1h` histograms are snapshots, not cumulative counters, so an
 * absent series means "nothing in the last hour" just as a zero one would, and leaving the empty
 * ones out keeps a scrape of 2,000 mostly idle queues about a tenth of the size (every empty
 * histogram series is 11 lines).
 *
 * The text is written directly (no prom-client registry): one pass over each queue's entries
 * and runs, label sets built once per queue, each metric family gathered as an array of lines
 * joined at the end. With 2,000 queues a scrape through prom-client took ~2.4 s of blocked event
 * loop; bench/metrics-scrape.ts measures this one.
 */
export function renderMetrics(queues: readonly QueueHandle[], now: number): Buffer {
  return renderMetricsBuffer(queues, now);
}

const TYPES = ['main', 'bisection'] as const;
const STATES = ['not_ready', 'pending', 'testing'] as const;
type State = (typeof STATES)[number];

/** `\`, `"` and line feeds escaped, as the exposition format wants in label values. */
function labelValue(value: string): string {
  let out = '';
  for (const ch of value) out += ch === '\\' ? '\\\\' : ch === '"' ? '\\"' : ch === '\n' ? '\\n' : ch;
  return out;
}

/** Observations of one histogram series: per-bucket counts (not cumulative), sum and count. */
class Series {
  readonly counts = new Array<number>(BUCKETS.length).fill(0);
  sum = 0;
  count = 0;
  observe(value: number): void {
    for (let i = 0; i < BUCKETS.length; i++) {
      if (value <= BUCKETS[i]) {
        this.counts[i]++;
        break;
      }
    }
    this.sum += value;
    this.count++;
  }
}

const BUCKET_LABELS = [...BUCKETS.map(String), '+Inf'];

/** The `_bucket`, `_sum` and `_count` lines of one series (each ending in a line feed); `labels` without braces. */
function histogramLines(name: string, labels: string, series: Series): string {
  let out = '';
  let cumulative = 0;
  for (let i = 0; i < BUCKETS.length; i++) {
    cumulative += series.counts[i];
    out += `${name}_bucket{le="${BUCKET_LABELS[i]}",${labels}} ${cumulative}\n`;
  }
  return `${out}${name}_bucket{le="+Inf",${labels}} ${series.count}\n${name}_sum{${labels}} ${series.sum}\n${name}_count{${labels}} ${series.count}\n`;
}

const FAMILIES = [
  ['mq_depth_current', 'PRs currently in the queue (admitted, not concluded)', 'gauge'],
  ['mq_awaiting_mergeability', 'PRs waiting on prerequisites before they can enter the queue', 'gauge'],
  ['mq_testing_slots_active', 'PRs in testing', 'gauge'],
  ['mq_pr_conclusions_1h_total', 'PRs that left the queue in the last hour', 'gauge'],
  ['mq_pr_restarts_1h_total', 'Restarts of testing (testing to pending) in the last hour', 'gauge'],
  ['mq_pr_wait_duration_1h_seconds', 'Wait before testing started, last hour', 'histogram'],
  ['mq_pr_test_duration_1h_seconds', 'Time in testing, last hour', 'histogram'],
  ['mq_pr_time_in_queue_1h_seconds', 'Submission to conclusion, last hour', 'histogram'],
  ['mq_pr_state_duration_1h_seconds', 'Time spent per state, last hour', 'histogram'],
  // Extensions (flake-aware queue): only for queues with flakyRetries or a flakyPolicy set, or activity in the hour.
  [
    'mq_pr_flaky_retries_1h_total',
    'PRs tested again in the last hour because their run failed only on tests with flake history (flakyRetries)',
    'gauge',
  ],
  [
    'mq_pr_flaky_ignored_1h_total',
    'PRs whose run failed only on ignored tests and counted as passed in the last hour (flakyPolicy)',
    'gauge',
  ],
] as const;
const [DEPTH, AWAITING, TESTING, CONCLUDED, RESTARTS, WAIT, TEST, IN_QUEUE, IN_STATE, RETRIES, IGNORED] =
  FAMILIES.keys();

/**
 * One queue's lines of each family, for one model version: valid from `from` until `until` (the
 * first moment an observation leaves the last hour or a future timestamp enters it). A scrape of
 * an unchanged queue in that span reuses them, so idle queues cost almost nothing.
 */
interface QueueText {
  from: number;
  until: number;
  /** UTF-8, ready to copy into the answer. */
  families: Buffer[];
}
const rendered = new WeakMap<QueueModel, QueueText>();

function queueText(q: QueueHandle, now: number): QueueText {
  const cached = rendered.get(q.model);
  if (cached && cached.from <= now && now < cached.until) return cached;

  let until = Number.POSITIVE_INFINITY;
  const recent = (t: number | null | undefined): t is number => {
    if (t === null || t === undefined) return false;
    if (t > now) {
      until = Math.min(until, t);
      return false;
    }
    if (now - t > HOUR_MS) return false;
    until = Math.min(until, t + HOUR_MS + 1);
    return true;
  };
  const seconds = (ms: number) => Math.max(0, ms) / 1000;

  const base = `repo="${labelValue(`${q.repo.owner}/${q.repo.name}`)}",branch="${labelValue(q.model.branch)}"`;
  const labels = { main: `${base},queue_type="main"`, bisection: `${base},queue_type="bisection"` };
  const runs = new Map<string, TestRun>(q.model.runs.map((r) => [r.id, r]));
  const typeOfEntry = (e: Entry): QueueType => (e.bisected ? 'bisection' : 'main');
  const typeOfRun = (r: TestRun): QueueType => (r.isBisection ? 'bisection' : 'main');

  const newCounts = () => ({
    depth: 0,
    awaiting: 0,
    testing: 0,
    restarts: 0,
    retries: 0,
    ignored: 0,
    merged: 0,
    failed: 0,
    cancelled: 0,
  });
  const counts = { main: newCounts(), bisection: newCounts() };
  const newHist = () => ({
    wait: new Series(),
    test: new Series(),
    inQueue: { merged: new Series(), failed: new Series(), cancelled: new Series() } as Record<
      Conclusion,
      Series
    >,
    inState: new Map<State, Series>(),
  });
  const hist = { main: newHist(), bisection: newHist() };
  const observeState = (type: QueueType, state: State, value: number) => {
    let series = hist[type].inState.get(state);
    if (!series) hist[type].inState.set(state, (series = new Series()));
    series.observe(value);
  };

  for (const e of q.model.entries) {
    const type = typeOfEntry(e);
    const c = counts[type];
    if (!isTerminal(e.state)) {
      if (e.state === 'not_ready') c.awaiting++;
      else c.depth++;
      const run = e.testRunId ? runs.get(e.testRunId) : undefined;
      if (e.state === 'testing' && run?.status === 'in_progress') counts[typeOfRun(run)].testing++;
    } else if (recent(e.concludedAt)) {
      const conclusion = e.state as Conclusion;
      c[conclusion]++;
      hist[type].inQueue[conclusion].observe(seconds(e.concludedAt - e.submittedAt));
    }
    if (e.admittedAt !== null && recent(e.admittedAt))
      observeState(type, 'not_ready', seconds(e.admittedAt - e.submittedAt));
    if (recent(e.testingStartedAt) && e.admittedAt !== null) {
      const waited = seconds(e.testingStartedAt - e.admittedAt);
      hist[type].wait.observe(waited);
      observeState(type, 'pending', waited);
    }
  }
  for (const r of q.model.runs) {
    const type = typeOfRun(r);
    if (recent(r.restartedAt)) counts[type].restarts += r.prNumbers.length;
    if (r.retryOf && recent(r.startedAt)) counts[type].retries += r.prNumbers.length;
    if (r.flakyIgnored?.length && recent(r.finishedAt)) counts[type].ignored += r.prNumbers.length;
    if (recent(r.finishedAt) && r.status !== 'cancelled') {
      const took = seconds(r.finishedAt - r.startedAt);
      for (let i = 0; i < r.prNumbers.length; i++) {
        hist[type].test.observe(took);
        observeState(type, 'testing', took);
      }
    }
  }

  const f = FAMILIES.map(() => '');
  const flakyAware = q.model.config.flakyRetries > 0 || q.model.config.flakyPolicy !== 'off';
  for (const type of TYPES) {
    const l = labels[type];
    const c = counts[type];
    const h = hist[type];
    if (type === 'bisection' && !q.model.config.batch && !hasObservations(c, h)) continue;
    f[DEPTH] += `mq_depth_current{${l}} ${c.depth}\n`;
    f[AWAITING] += `mq_awaiting_mergeability{${l}} ${c.awaiting}\n`;
    f[TESTING] += `mq_testing_slots_active{${l}} ${c.testing}\n`;
    f[RESTARTS] += `mq_pr_restarts_1h_total{${l}} ${c.restarts}\n`;
    if (flakyAware || c.retries > 0 || c.ignored > 0) {
      f[RETRIES] += `mq_pr_flaky_retries_1h_total{${l}} ${c.retries}\n`;
      f[IGNORED] += `mq_pr_flaky_ignored_1h_total{${l}} ${c.ignored}\n`;
    }
    for (const conclusion of CONCLUSIONS) {
      f[CONCLUDED] += `mq_pr_conclusions_1h_total{${l},conclusion="${conclusion}"} ${c[conclusion]}\n`;
      const series = h.inQueue[conclusion];
      if (series.count > 0)
        f[IN_QUEUE] += histogramLines(FAMILIES[IN_QUEUE][0], `${l},conclusion="${conclusion}"`, series);
    }
    // A histogram without observations in the hour is left out (see "Which series" above).
    if (h.wait.count > 0) f[WAIT] += histogramLines(FAMILIES[WAIT][0], l, h.wait);
    if (h.test.count > 0) f[TEST] += histogramLines(FAMILIES[TEST][0], l, h.test);
    for (const state of STATES) {
      const series = h.inState.get(state);
      if (series) f[IN_STATE] += histogramLines(FAMILIES[IN_STATE][0], `${l},state="${state}"`, series);
    }
  }
  const text: QueueText = { from: now, until, families: f.map((lines) => Buffer.from(lines)) };
  rendered.set(q.model, text);
  return text;
}

type Counts = Record<
  'depth' | 'awaiting' | 'testing' | 'restarts' | 'retries' | 'ignored' | Conclusion,
  number
>;

function hasObservations(c: Counts, h: { wait: Series; test: Series; inState: Map<State, Series> }): boolean {
  return Object.values(c).some((n) => n > 0) || h.wait.count > 0 || h.test.count > 0 || h.inState.size > 0;
}

const HEADERS = FAMILIES.map(([name, help, type]) =>
  Buffer.from(`# HELP ${name} ${help}\n# TYPE ${name} ${type}\n`),
);
const LINE_FEED = Buffer.from('\n');

function renderMetricsBuffer(queues: readonly QueueHandle[], now: number): Buffer {
  const texts = queues.map((q) => queueText(q, now));
  const parts: Buffer[] = [];
  HEADERS.forEach((header, i) => {
    parts.push(header);
    for (const t of texts) parts.push(t.families[i]);
    parts.push(LINE_FEED);
  });
  return Buffer.concat(parts);
}
