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
  /**
   * How the column gives way when the table is wider than the terminal: `first` (a reason, a
   * message) is cut with `…` before anything else, `true` (a title, a file, a URL) next. Names,
   * numbers and ids are never cut.
   */
  shrink?: boolean | 'first';
  /**
   * Left out on a terminal too narrow for the table once the cuttable columns are as narrow as
   * they go: the highest number first (a note under the table names what `--wide` would show).
   */
  drop?: number;
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

/** Below this width a cut column says little: columns that may go are left out before cutting further. */
const COMFORT = 16;

/**
 * Column widths that fit `width`: the columns cut first (reasons, messages), then the others that
 * may be cut (titles, files, URLs), each widest first, down to `least` (never under their header's
 * width, nor 8). Null: the column keeps its natural width. `over` is what is still too wide (0: it fits).
 */
function fitWidths(
  natural: number[],
  shrink: (boolean | 'first' | undefined)[],
  headers: string[],
  width: number | undefined,
  least: number,
): { widths: (number | null)[]; over: number } {
  const out: (number | null)[] = natural.map(() => null);
  if (!width) return { widths: out, over: 0 };
  let over = natural.reduce((a, b) => a + b, 0) + 2 * (natural.length - 1) - width;
  const widths = [...natural];
  const floor = (i: number) => Math.max(least, textWidth(headers[i]!));
  for (const level of ['first', true] as const) {
    const candidates = natural.map((_, i) => i).filter((i) => shrink[i] === level);
    while (over > 0) {
      const i = candidates.filter((c) => widths[c]! > floor(c)).sort((a, b) => widths[b]! - widths[a]!)[0];
      if (i === undefined) break;
      widths[i]!--;
      out[i] = widths[i]!;
      over--;
    }
  }
  return { widths: out, over: Math.max(0, over) };
}

/**
 * The columns a terminal of `width` shows, and how wide. The cuttable columns give way down to a
 * readable width; when that is not enough, the columns that may go are left out, the highest
 * `drop` first; with none left to drop, the cuttable ones are cut down to their header.
 */
function layout(
  cells: string[][],
  headers: string[],
  columns: readonly { shrink?: boolean | 'first'; drop?: number }[],
  width: number | undefined,
): { keep: number[]; widths: (number | null)[]; dropped: number[] } {
  let keep = headers.map((_, i) => i);
  const dropped: number[] = [];
  const natural = headers.map((h, i) => Math.max(textWidth(h), ...cells.map((r) => textWidth(r[i]!))));
  const fit = (least: number) =>
    fitWidths(
      keep.map((i) => natural[i]!),
      keep.map((i) => columns[i]!.shrink),
      keep.map((i) => headers[i]!),
      width,
      least,
    );
  for (;;) {
    const readable = fit(COMFORT);
    if (readable.over === 0) return { keep, widths: readable.widths, dropped };
    const next = keep
      .filter((i) => columns[i]!.drop !== undefined)
      .sort((a, b) => columns[b]!.drop! - columns[a]!.drop!)[0];
    if (next === undefined) return { keep, widths: fit(8).widths, dropped };
    keep = keep.filter((i) => i !== next);
    dropped.push(next);
  }
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
      const { keep, widths, dropped } = layout(cells, headers, shown, width);
      const table = new Table({
        head: keep.map((i) => headers[i]!),
        chars: NO_BORDERS,
        style: { 'padding-left': 0, 'padding-right': 0, head: color ? ['bold'] : [], border: [] },
        colWidths: widths,
        wordWrap: false,
        truncate: '…',
      });
      for (const r of cells) table.push(keep.map((i) => r[i]!));
      const hidden = dropped.length
        ? wrapWords(
            `(${[...dropped]
              .sort((a, b) => a - b)
              .map((i) => headers[i])
              .join(', ')} left out to fit; --wide shows every column)`,
            width ?? 0,
          ).join('\n') + '\n'
        : '';
      return (
        table
          .toString()
          .split('\n')
          .map((line) => line.trimEnd())
          .join('\n') +
        '\n' +
        hidden
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

/**
 * A line cut into lines of at most `width` characters at spaces (a word longer than that, an id or
 * a URL, stays whole on a line of its own): a long reason or message in a record or a report
 * stays readable on a narrow terminal, and nothing of it is lost.
 */
export function wrapWords(text: string, width: number): string[] {
  if (width < 20 || textWidth(text) <= width) return [text];
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && textWidth(line) + 1 + textWidth(word) > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  lines.push(line);
  return lines;
}

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
  const width = typeof view === 'boolean' ? undefined : view.width;
  if (format === 'table') {
    const entries = Object.entries(record).filter(([, value]) => !isEmpty(value));
    if (entries.length === 0) return '(none)\n';
    const pad = Math.max(...entries.map(([key]) => key.length));
    const lines: string[] = [];
    for (const [key, value] of entries) {
      // One list item a line; a line break inside a value (a title from the server) is shown escaped, never followed.
      const valueLines = (Array.isArray(value) ? value.map(cell) : [cell(value)])
        .map((v) => printable(v))
        .flatMap((v) => (width ? wrapWords(v, width - pad - 2) : [v]));
      const label = key.padEnd(pad);
      lines.push(`${color ? `\x1b[36m${label}\x1b[39m` : label}  ${valueLines[0]}`.trimEnd());
      for (const more of valueLines.slice(1)) lines.push(`${' '.repeat(pad)}  ${more}`.trimEnd());
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
