/**
 * The output formats and views of the CLI's tables, apart from the renderer (render.ts loads
 * cli-table3 and csv-stringify): base-command declares --format from these, and a command loads
 * render.ts only when it prints.
 */
export const FORMATS = ['table', 'json', 'csv', 'markdown', 'tsv'] as const;
export type Format = (typeof FORMATS)[number];

/** How a table is shown: colour, and the terminal's width to fit (undefined: as wide as it needs, e.g. piped or --wide). */
export interface View {
  color?: boolean;
  width?: number;
  /**
   * Printed on a terminal: CSV and TSV cells show their control characters escaped (`\e`, `\n`,
   * `\x9b`) as the table and Markdown always do. Otherwise (a pipe, a file) they stay byte-exact.
   */
  terminal?: boolean;
  /** For relative times (tests pin it). */
  now?: number;
}
