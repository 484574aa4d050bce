import type { ComponentChildren } from 'preact';
import { stateGlyph, stateLabel } from './format.js';

/** A state as glyph + word; the class only adds colour. */
export function State({ state, title }: { state: string | undefined; title?: string }) {
  return (
    <span class={`state s-${state ?? 'unknown'}`} title={title}>
      <span aria-hidden="true" class="glyph">
        {stateGlyph(state)}
      </span>{' '}
      {stateLabel(state)}
    </span>
  );
}

export function ErrorBox({ message }: { message: string | null }) {
  if (!message) return null;
  return (
    <p class="error" role="alert">
      <span aria-hidden="true">✖ </span>
      {message}
    </p>
  );
}

export function Section({
  title,
  children,
  id,
}: {
  title: string;
  children: ComponentChildren;
  id?: string;
}) {
  return (
    <section aria-labelledby={id} class="card">
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}

/** Vertical bars in SVG: one per value, labelled below; the figure is also in the title/text. */
export function BarChart({
  bars,
  label,
  unit = '',
  height = 140,
}: {
  bars: { label: string; value: number; kind?: string }[];
  label: string;
  unit?: string;
  height?: number;
}) {
  const max = Math.max(1, ...bars.map((b) => b.value));
  const w = 44;
  const gap = 10;
  const width = bars.length * (w + gap) + gap;
  const plot = height - 34;
  return (
    <figure class="chart">
      <svg
        role="img"
        aria-label={`${label}: ${bars.map((b) => `${b.label} ${fmt(b.value)}${unit}`).join(', ')}`}
        viewBox={`0 0 ${width} ${height}`}
        width={width}
        height={height}
      >
        <line x1="0" x2={width} y1={plot + 2} y2={plot + 2} class="axis" />
        {bars.map((b, i) => {
          const h = Math.round((b.value / max) * (plot - 14));
          const x = gap + i * (w + gap);
          return (
            <g key={b.label}>
              <rect
                x={x}
                y={plot + 2 - h}
                width={w}
                height={Math.max(h, b.value > 0 ? 1 : 0)}
                class={`bar ${b.kind ?? ''}`}
              >
                <title>{`${b.label}: ${fmt(b.value)}${unit}`}</title>
              </rect>
              <text x={x + w / 2} y={plot - h - 2} class="val" text-anchor="middle">
                {fmt(b.value)}
                {unit}
              </text>
              <text x={x + w / 2} y={height - 16} class="lbl" text-anchor="middle">
                {b.label}
              </text>
            </g>
          );
        })}
      </svg>
      <figcaption>{label}</figcaption>
    </figure>
  );
}

/** A line over time in SVG (a session's samples). */
export function LineChart({ points, label }: { points: { t: number; v: number }[]; label: string }) {
  const width = 320;
  const height = 110;
  if (points.length < 2) return <p class="muted">{label}: the first samples are on their way…</p>;
  const t0 = points[0].t;
  const t1 = points[points.length - 1].t;
  const max = Math.max(1, ...points.map((p) => p.v));
  const x = (t: number) => 6 + ((t - t0) / Math.max(1, t1 - t0)) * (width - 12);
  const y = (v: number) => height - 18 - (v / max) * (height - 30);
  const d = points.map((p, i) => `${i ? 'L' : 'M'}${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`).join(' ');
  const last = points[points.length - 1].v;
  return (
    <figure class="chart">
      <svg
        role="img"
        aria-label={`${label}: now ${fmt(last)}, highest ${fmt(max)}`}
        viewBox={`0 0 ${width} ${height}`}
        width={width}
        height={height}
      >
        <line x1="0" x2={width} y1={height - 16} y2={height - 16} class="axis" />
        <path d={d} class="line" />
        <text x={width - 6} y={12} class="val" text-anchor="end">
          now {fmt(last)}
        </text>
      </svg>
      <figcaption>{label}</figcaption>
    </figure>
  );
}

/**
 * A test's failure rate per day as bars (0–100 %). A day without runs has no bar but an open circle on the
 * axis (shape, not colour, tells it from a 0 % day, whose bar is a flat sliver); the numbers are also in a
 * visually hidden table for screen readers.
 */
export function DailyRateChart({
  days,
  label,
}: {
  days: { date: string; runs: number; failures: number; failure_rate: number | null }[];
  label: string;
}) {
  const w = days.length > 45 ? 4 : 10;
  const gap = 2;
  const left = 34;
  const width = left + days.length * (w + gap) + gap;
  const height = 130;
  const plot = height - 24;
  const top = 8;
  const y = (rate: number) => plot - rate * (plot - top);
  const ran = days.filter((d) => d.runs > 0);
  const worst = ran.reduce<(typeof days)[number] | null>(
    (a, d) => (a && (a.failure_rate ?? 0) >= (d.failure_rate ?? 0) ? a : d),
    null,
  );
  const pct = (r: number) => `${Math.round(r * 1000) / 10} %`;
  const summary = ran.length
    ? `${ran.length} of ${days.length} days with runs; highest ${pct(worst!.failure_rate!)} on ${worst!.date}`
    : `no runs in these ${days.length} days`;
  const first = days[0]?.date ?? '';
  const last = days[days.length - 1]?.date ?? '';
  return (
    <figure class="chart" data-testid="rate-history">
      <svg
        role="img"
        aria-labelledby="rate-history-t rate-history-d"
        viewBox={`0 0 ${width} ${height}`}
        width={width}
        height={height}
      >
        <title id="rate-history-t">{label}</title>
        <desc id="rate-history-d">{`${first} to ${last}: ${summary}.`}</desc>
        {[0, 0.5, 1].map((r) => (
          <g key={r}>
            <line x1={left - 3} x2={width} y1={y(r)} y2={y(r)} class={r ? 'grid' : 'axis'} />
            <text x={left - 5} y={y(r) + 4} class="lbl" text-anchor="end">
              {r * 100}%
            </text>
          </g>
        ))}
        {days.map((d, i) => {
          const x = left + gap + i * (w + gap);
          if (d.failure_rate === null)
            return (
              <circle key={d.date} cx={x + w / 2} cy={plot - 3} r={Math.min(3, w / 2)} class="none">
                <title>{`${d.date}: no runs`}</title>
              </circle>
            );
          const h = Math.max(2, plot - y(d.failure_rate));
          return (
            <rect key={d.date} x={x} y={plot - h} width={w} height={h} class="bar fail">
              <title>{`${d.date}: ${pct(d.failure_rate)} (${d.failures} of ${d.runs} runs failed)`}</title>
            </rect>
          );
        })}
        <text x={left} y={height - 6} class="lbl">
          {first}
        </text>
        <text x={width} y={height - 6} class="lbl" text-anchor="end">
          {last}
        </text>
      </svg>
      <figcaption>{label}. Bars: share of that UTC day's runs that failed; ○ no runs that day.</figcaption>
      <table class="visually-hidden">
        <caption>{label}</caption>
        <thead>
          <tr>
            <th scope="col">Day (UTC)</th>
            <th scope="col">Runs</th>
            <th scope="col">Failures</th>
            <th scope="col">Failure rate</th>
          </tr>
        </thead>
        <tbody>
          {days.map((d) => (
            <tr key={d.date}>
              <th scope="row">{d.date}</th>
              <td>{d.runs}</td>
              <td>{d.failures}</td>
              <td>{d.failure_rate === null ? 'no runs' : pct(d.failure_rate)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  );
}

function fmt(v: number): string {
  return Number.isInteger(v) ? String(v) : v.toFixed(1);
}
