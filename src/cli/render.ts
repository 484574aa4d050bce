/** Tables and records for people (fitted to the terminal) or machines (--json, CSV, TSV). */
import Table from 'cli-table3';
import { stringify } from 'csv-stringify/sync';
import { printable } from './escape.js';
import type { Format, View } from './formats.js';

export { FORMATS, type Format, type View } from './formats.js';

export interface Column<Row> {
  header: string;
  /** The text for people (table, Markdown). */
  get: (row: Row) => unknown;
  /** The plain value for CSV and TSV when the text decorates it (`#8` → `8`, `medium (100)` → `medium`). */
  plain?: (row: Row) => unknown;
  /** Only in CSV and TSV: a plain value the table shows inside another column (a priority's value). */
  machineOnly?: boolean;
  /** An ISO 8601 time: relative for people in a table (`3 minutes ago`), ISO 8601 UTC elsewhere. */
  time?: boolean;
  /** Cut with `…` first when the table is wider than the terminal (titles, names, URLs). */
  shrink?: boolean;
}

/**
 * What `Intl.RelativeTimeFormat('en', { numeric: 'always' })` prints for the whole numbers `ago`
 * passes (under 60 of a unit, so never a thousands separator): `3 minutes ago`, `in 1 hour`,
 * `0 seconds ago` for -0. Written out because loading ICU for it costs a CLI run about 0.01 CPU-s.
 */
function relative(value: number, unit: 'second' | 'minute' | 'hour' | 'day'): string {
  const past = value < 0 || Object.is(value, -0);
  const n = Math.abs(value);
  const text = `${n} ${unit}${n === 1 ? '' : 's'}`;
  return past ? `${text} ago` : `in ${text}`;
}

/**
 * A time for people: `45 seconds ago`, `3 minutes ago`, `2 hours ago`, `5 days ago`; from 30 days
 * on, the local date. The text as it came when it is no time.
 */
export function ago(iso: string, now = Date.now()): string {
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return iso;
  const seconds = Math.round((at - now) / 1000);
  const abs = Math.abs(seconds);
  if (abs < 60) return relative(seconds, 'second');
  if (abs < 3600) return relative(Math.round(seconds / 60), 'minute');
  if (abs < 86_400) return relative(Math.round(seconds / 3600), 'hour');
  if (abs < 30 * 86_400) return relative(Math.round(seconds / 86_400), 'day');
  return localTime(iso).slice(0, 10);
}

/** `2026-11-26 14:03:10` in the local time zone (the text as it came when it is no time). */
export function localTime(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** `2026-11-26 14:03:10 (3 minutes ago)`: a time in a record for people. */
export function whenText(iso: string | undefined | null, now = Date.now()): string | undefined {
  return iso ? `${localTime(iso)} (${ago(iso, now)})` : undefined;
}

/** ISO 8601 UTC (`2026-11-26T13:03:10.000Z`), the form of times in JSON, CSV and TSV. */
function isoUtc(value: unknown): unknown {
  if (typeof value !== 'string' || value === '') return value;
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? value : d.toISOString();
}

function cell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (Array.isArray(value)) return value.map(cell).join(', ');
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/**
 * Spreadsheet formula injection guard (OWASP "CSV injection"): a cell that a spreadsheet would
 * run as a formula gets a leading apostrophe.
 */
export function guardFormula(text: string): string {
  return /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
}

function markdownCell(text: string): string {
  return printable(text, '\n').replace(/\\/g, '\\\\').replace(/\|/g, '\\|').replace(/\r?\n/g, '<br>');
}

function tsvCell(text: string): string {
  return text.replace(/[\t\r\n]+/g, ' ');
}

/**
 * How every table and line spells a state or status: lower-case snake case, as the merge-queue API
 * spells a pull request's state (`not_ready`, `in_progress`). Upper-case wire values (a check's
 * `SUCCESS`, a test's `FLAKY`) are lowered to match; --json and --format json keep the wire values.
 */
export function stateText(value: string): string {
  return value.toLowerCase();
}

/** A command's result as `--format json` prints it: the same document as `--json` (piped). */
export function renderJson(value: unknown): string {
  return JSON.stringify(value, null, 2) + '\n';
}

/** Characters on screen (graphemes; close enough for column widths). */
let segmenter: Intl.Segmenter | undefined; // made on first use: ICU is slow to load
function textWidth(text: string): number {
  let n = 0;
  segmenter ??= new Intl.Segmenter();
  for (const _ of segmenter.segment(text)) n++;
  return n;
}

/**
 * Column widths that fit `width`: the shrinkable columns (else the widest) give up characters,
 * widest first, down to their header's width (at least 8). Null: the column keeps its natural width.
 */
function fitWidths(
  natural: number[],
  shrink: boolean[],
  headers: string[],
  width: number | undefined,
): (number | null)[] {
  const out: (number | null)[] = natural.map(() => null);
  if (!width) return out;
  let over = natural.reduce((a, b) => a + b, 0) + 2 * (natural.length - 1) - width;
  if (over <= 0) return out;
  const widths = [...natural];
  let candidates = natural.map((_, i) => i).filter((i) => shrink[i]);
  if (!candidates.length) candidates = [natural.indexOf(Math.max(...natural))];
  const floor = (i: number) => Math.max(8, textWidth(headers[i]!));
  while (over > 0) {
    const i = candidates.filter((c) => widths[c]! > floor(c)).sort((a, b) => widths[b]! - widths[a]!)[0];
    if (i === undefined) break;
    widths[i]!--;
    out[i] = widths[i]!;
    over--;
  }
  return out;
}

/**
 * Renders rows as a table for people (gh's habit: a header, one line per row, no borders or row
 * separators; on a terminal the long columns are cut with `…` to fit, times are relative), JSON,
 * CSV (RFC 4180), Markdown or TSV (plain values: `8`, `medium`, ISO 8601 UTC times).
 */
export function renderRows<Row>(
  rows: readonly Row[],
  columns: readonly Column<Row>[],
  format: Format,
  view: boolean | View = false,
): string {
  if (format === 'json') {
    return JSON.stringify(rows, null, 2) + '\n';
  }
  const {
    color = false,
    width,
    now = Date.now(),
    terminal = false,
  } = typeof view === 'boolean' ? { color: view } : view;
  const machine = format === 'csv' || format === 'tsv';
  // CSV and TSV for a person at a terminal: every control character of a cell shown escaped, a line break inside one too.
  const shownCell = machine && terminal ? (value: unknown) => printable(cell(value)) : cell;
  const shown = columns.filter((c) => machine || !c.machineOnly);
  const headers = shown.map((c) => c.header);
  const body = rows.map((row) =>
    shown.map((c) => {
      if (machine) return shownCell(c.time ? isoUtc((c.plain ?? c.get)(row)) : (c.plain ?? c.get)(row));
      const value = c.get(row);
      if (c.time && typeof value === 'string')
        return format === 'table' ? ago(value, now) : String(isoUtc(value));
      return cell(value);
    }),
  );
  switch (format) {
    case 'csv':
      // Quoted also when a field holds a bare \n: csv-stringify quotes only its own record delimiter (\r\n).
      return stringify([headers, ...body.map((r) => r.map(guardFormula))], {
        record_delimiter: '\r\n',
        quoted_match: /[\r\n]/,
      });
    case 'tsv':
      // The formula guard is for spreadsheets opening CSV; TSV and JSON are for programs and stay as they are.
      return [headers, ...body.map((r) => r.map(tsvCell))].map((r) => r.join('\t')).join('\n') + '\n';
    case 'markdown': {
      const line = (r: string[]) => `| ${r.map(markdownCell).join(' | ')} |`;
      return (
        [line(headers), `| ${headers.map(() => '---').join(' | ')} |`, ...body.map(line)].join('\n') + '\n'
      );
    }
    case 'table': {
      if (rows.length === 0) return '(none)\n';
      const cells = body.map((r) => r.map((text) => printable(text)));
      const natural = headers.map((h, i) => Math.max(textWidth(h), ...cells.map((r) => textWidth(r[i]!))));
      const table = new Table({
        head: headers,
        chars: NO_BORDERS,
        style: { 'padding-left': 0, 'padding-right': 0, head: color ? ['bold'] : [], border: [] },
        colWidths: fitWidths(
          natural,
          shown.map((c) => Boolean(c.shrink)),
          headers,
          width,
        ),
        wordWrap: false,
        truncate: '…',
      });
      for (const r of cells) table.push(r);
      return (
        table
          .toString()
          .split('\n')
          .map((line) => line.trimEnd())
          .join('\n') + '\n'
      );
    }
  }
}

/** cli-table3 without borders: columns apart by two spaces. */
const NO_BORDERS = {
  top: '',
  'top-mid': '',
  'top-left': '',
  'top-right': '',
  bottom: '',
  'bottom-mid': '',
  'bottom-left': '',
  'bottom-right': '',
  left: '',
  'left-mid': '',
  mid: '',
  'mid-mid': '',
  right: '',
  'right-mid': '',
  middle: '  ',
};

/** Whether a value has nothing to show (a compact key/value table leaves its row out). */
function isEmpty(value: unknown): boolean {
  return (
    value === null || value === undefined || value === '' || (Array.isArray(value) && value.length === 0)
  );
}

/**
 * A record (one object) as key/value pairs. The table is compact, for people: two columns without
 * borders or a header, the keys padded to the longest one, no row for an empty value, a list one
 * item a line. CSV, TSV and Markdown keep every key (a `field`/`value` header, empty values as
 * empty cells), so scripts always get the same rows; JSON is the object.
 */
export function renderRecord(
  record: Record<string, unknown>,
  format: Format,
  view: boolean | View = false,
): string {
  if (format === 'json') return JSON.stringify(record, null, 2) + '\n';
  const color = typeof view === 'boolean' ? view : Boolean(view.color);
  if (format === 'table') {
    const entries = Object.entries(record).filter(([, value]) => !isEmpty(value));
    if (entries.length === 0) return '(none)\n';
    const width = Math.max(...entries.map(([key]) => key.length));
    const lines: string[] = [];
    for (const [key, value] of entries) {
      // One list item a line; a line break inside a value (a title from the server) is shown escaped, never followed.
      const valueLines = (Array.isArray(value) ? value.map(cell) : [cell(value)]).map((v) => printable(v));
      const label = key.padEnd(width);
      lines.push(`${color ? `\x1b[36m${label}\x1b[39m` : label}  ${valueLines[0]}`.trimEnd());
      for (const more of valueLines.slice(1)) lines.push(`${' '.repeat(width)}  ${more}`.trimEnd());
    }
    return lines.join('\n') + '\n';
  }
  const rows = Object.entries(record).map(([key, value]) => ({ key, value }));
  return renderRows(
    rows,
    [
      { header: 'field', get: (r) => r.key },
      { header: 'value', get: (r) => r.value },
    ],
    format,
    typeof view === 'boolean' ? { color } : { color, terminal: view.terminal },
  );
}
