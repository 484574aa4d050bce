import { useRef } from 'preact/hooks';
import { api } from './api.js';
import { usePoll } from './poll.js';
import { BarChart, ErrorBox, LineChart, Section } from './ui.js';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Prometheus text exposition 0.0.4 → samples (enough for our own metrics). */
export function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(?<!\w)(\w+)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]] = l[2].replace(/\\(.)/g, '$1');
    out.push({ name: m[1], labels, value: m[3] === '+Inf' ? Infinity : Number(m[3]) });
  }
  return out;
}

const BUCKET_LABEL: Record<string, string> = {
  '60': '≤1m',
  '300': '≤5m',
  '600': '≤10m',
  '900': '≤15m',
  '1800': '≤30m',
  '3600': '≤1h',
  '5400': '≤1.5h',
  '7200': '≤2h',
  '+Inf': '>2h',
};

/**
 * Per-bucket counts (not cumulative) of a histogram, summed over the matching series. Every
 * bucket is drawn, at zero when the server left the series out (nothing in the last hour).
 */
function histogram(samples: Sample[], name: string, where: (l: Record<string, string>) => boolean) {
  const cumulative = new Map<string, number>(Object.keys(BUCKET_LABEL).map((le) => [le, 0]));
  for (const s of samples)
    if (s.name === `${name}_bucket` && where(s.labels))
      cumulative.set(s.labels.le, (cumulative.get(s.labels.le) ?? 0) + s.value);
  const les = [...cumulative.keys()].sort((a, b) =>
    a === '+Inf' ? 1 : b === '+Inf' ? -1 : Number(a) - Number(b),
  );
  let prev = 0;
  return les.map((le) => {
    const c = cumulative.get(le) ?? 0;
    const bar = { label: BUCKET_LABEL[le] ?? le, value: c - prev };
    prev = c;
    return bar;
  });
}

function sum(
  samples: Sample[],
  name: string,
  where: (l: Record<string, string>) => boolean = () => true,
): number {
  return samples.filter((s) => s.name === name && where(s.labels)).reduce((a, s) => a + s.value, 0);
}

export function ThroughputPage() {
  const series = useRef<{ t: number; v: number }[]>([]);
  const { data, error, at } = usePoll(async () => parseMetrics(await api.metrics()), 15_000, []);
  if (data && at && series.current[series.current.length - 1]?.t !== at) {
    series.current.push({
      t: at,
      v: sum(data, 'mq_pr_conclusions_1h_total', (l) => l.conclusion === 'merged'),
    });
    if (series.current.length > 240) series.current.shift();
  }
  const queues = data
    ? [
        ...new Set(
          data.filter((s) => s.name === 'mq_depth_current').map((s) => `${s.labels.repo}|${s.labels.branch}`),
        ),
      ]
    : [];
  return (
    <main>
      <h1>Throughput</h1>
      <p class="muted">
        From the metrics endpoint (the last hour, as Prometheus scrapes it), read every 15 s.
      </p>
      <ErrorBox message={error} />
      {data && queues.length === 0 && <p>No merge queue yet.</p>}
      {data && queues.length > 0 && (
        <Section title="All queues" id="all-h">
          <div class="cols">
            <LineChart
              label="Merged in the last hour, sampled every 15 s while this page is open"
              points={series.current}
            />
            <BarChart
              label="Concluded in the last hour"
              bars={['merged', 'failed', 'cancelled'].map((c) => ({
                label: c,
                value: sum(data, 'mq_pr_conclusions_1h_total', (l) => l.conclusion === c),
                kind: c,
              }))}
            />
            <BarChart
              label="Restarts of testing, last hour"
              bars={[{ label: 'restarts', value: sum(data, 'mq_pr_restarts_1h_total') }]}
            />
          </div>
        </Section>
      )}
      {data &&
        queues.map((key) => {
          const [repo, branch] = key.split('|');
          const mine = (l: Record<string, string>) => l.repo === repo && l.branch === branch;
          return (
            <Section key={key} title={`${repo} → ${branch}`} id={`h-${key}`}>
              <div class="cols">
                <BarChart
                  label="Time in queue (submission to merge), last hour"
                  bars={histogram(
                    data,
                    'mq_pr_time_in_queue_1h_seconds',
                    (l) => mine(l) && l.conclusion === 'merged',
                  )}
                />
                <BarChart
                  label="Wait before testing, last hour"
                  bars={histogram(data, 'mq_pr_wait_duration_1h_seconds', mine)}
                />
                <BarChart
                  label="Time in testing, last hour"
                  bars={histogram(data, 'mq_pr_test_duration_1h_seconds', mine)}
                />
              </div>
            </Section>
          );
        })}
    </main>
  );
}
