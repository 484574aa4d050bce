import Table from 'cli-table3';
import { stringify } from 'csv-stringify/sync';

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
  return text.replace(/\\/g, '\\\\').replace(/\|/g, '\\|').replace(/\r?\n/g, '<br>');
}

function tsvCell(text: string): string {
  return text.replace(/[\t\r\n]+/g, ' ');
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
      for (const r of body) table.push(r);
      return table.toString() + '\n';
    }
  }
}

/** A record (one object) as a two-column key/value table, or JSON. */
export function renderRecord(record: Record<string, unknown>, format: Format, color = false): string {
  if (format === 'json') return JSON.stringify(record, null, 2) + '\n';
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
