import Table from 'cli-table3';
import { stringify } from 'csv-stringify/sync';
import { printable } from './escape.js';

export const FORMATS = ['table', 'json', 'csv', 'markdown', 'tsv'] as const;
export type Format = (typeof FORMATS)[number];

export interface Column<Row> {
  header: string;
  get: (row: Row) => unknown;
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

/** Renders rows as a table (cli-table3), JSON, CSV (RFC 4180), Markdown or TSV. */
export function renderRows<Row>(rows: readonly Row[], columns: readonly Column<Row>[], format: Format, color = false): string {
  if (format === 'json') {
    return JSON.stringify(rows, null, 2) + '\n';
  }
  const headers = columns.map((c) => c.header);
  const body = rows.map((row) => columns.map((c) => cell(c.get(row))));
  switch (format) {
    case 'csv':
      // Quoted also when a field holds a bare \n: csv-stringify quotes only its own record delimiter (\r\n).
      return stringify([headers, ...body.map((r) => r.map(guardFormula))], { record_delimiter: '\r\n', quoted_match: /[\r\n]/ });
    case 'tsv':
      // The formula guard is for spreadsheets opening CSV; TSV and JSON are for programs and stay as they are.
      return [headers, ...body.map((r) => r.map(tsvCell))].map((r) => r.join('\t')).join('\n') + '\n';
    case 'markdown': {
      const line = (r: string[]) => `| ${r.map(markdownCell).join(' | ')} |`;
      return [line(headers), `| ${headers.map(() => '---').join(' | ')} |`, ...body.map(line)].join('\n') + '\n';
    }
    case 'table': {
      if (rows.length === 0) return '(none)\n';
      const table = new Table({
        head: headers,
        style: color ? { head: ['cyan'], border: ['grey'] } : { head: [], border: [] },
        wordWrap: true,
      });
      for (const r of body) table.push(r.map((text) => printable(text)));
      return table.toString() + '\n';
    }
  }
}

/** Whether a value has nothing to show (a compact key/value table leaves its row out). */
function isEmpty(value: unknown): boolean {
  return value === null || value === undefined || value === '' || (Array.isArray(value) && value.length === 0);
}

/**
 * A record (one object) as key/value pairs. The table is compact, for people: two columns without
 * borders or a header, the keys padded to the longest one, no row for an empty value, a list one
 * item a line. CSV, TSV and Markdown keep every key (a `field`/`value` header, empty values as
 * empty cells), so scripts always get the same rows; JSON is the object.
 */
export function renderRecord(record: Record<string, unknown>, format: Format, color = false): string {
  if (format === 'json') return JSON.stringify(record, null, 2) + '\n';
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
    color,
  );
}
