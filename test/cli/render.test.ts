import { describe, expect, it } from 'vitest';
import { parse } from 'csv-parse/sync';
import { ago, guardFormula, renderRows } from '../../src/cli/render.js';
import { useColor } from '../../src/cli/color.js';
import { parseDuration, parseRepo, repoFromRemoteUrl } from '../../src/cli/config.js';
import { splitWindow } from '../../src/commands/flaky/list-failing.js';

const columns = [
  { header: 'name', get: (r: { name: string; n: number }) => r.name },
  { header: 'n', get: (r: { name: string; n: number }) => r.n },
];

describe('renderers', () => {
  it('CSV is RFC 4180 (quotes, commas, newlines) and guards formulas', () => {
    const rows = [
      { name: '=HYPERLINK("http://x")', n: 1 },
      { name: 'a, "quoted"\nline', n: 2 },
      { name: '-1+2', n: 3 },
      { name: '@SUM(A1)', n: 4 },
    ];
    const text = renderRows(rows, columns, 'csv');
    const back = parse(text) as string[][];
    expect(back[0]).toEqual(['name', 'n']);
    expect(back[1][0]).toBe('\'=HYPERLINK("http://x")');
    expect(back[2][0]).toBe('a, "quoted"\nline');
    expect(back[3][0]).toBe("'-1+2");
    expect(back[4][0]).toBe("'@SUM(A1)");
    expect(guardFormula('plain')).toBe('plain');
  });

  it('CSV quotes a field holding only a newline, so any CSV reader gets one row per item', () => {
    const text = renderRows([{ name: 'first line\nsecond line', n: 1 }, { name: 'plain', n: 2 }], columns, 'csv');
    expect(parse(text)).toEqual([
      ['name', 'n'],
      ['first line\nsecond line', '1'],
      ['plain', '2'],
    ]);
    expect(parse(text, { record_delimiter: '\r\n' })).toHaveLength(3);
  });

  it('the formula guard applies to CSV only: TSV and JSON keep the text as it is', () => {
    const rows = [{ name: '=1+1', n: 1 }];
    expect(renderRows(rows, columns, 'tsv')).toBe('name\tn\n=1+1\t1\n');
    expect(JSON.parse(renderRows(rows, columns, 'json'))[0].name).toBe('=1+1');
    expect(parse(renderRows(rows, columns, 'csv'))[1][0]).toBe("'=1+1");
  });

  it('Markdown escapes pipes and newlines; TSV flattens tabs', () => {
    const md = renderRows([{ name: 'a|b\nc', n: 1 }], columns, 'markdown');
    expect(md.split('\n')[2]).toBe('| a\\|b<br>c | 1 |');
    const tsv = renderRows([{ name: 'x\ty', n: 1 }], columns, 'tsv');
    expect(tsv).toBe('name\tn\nx y\t1\n');
  });

  it('JSON keeps the rows; an empty table says so', () => {
    expect(JSON.parse(renderRows([{ name: 'a', n: 1 }], columns, 'json'))).toEqual([{ name: 'a', n: 1 }]);
    expect(renderRows([], columns, 'table')).toBe('(none)\n');
  });
});

describe('tables for people', () => {
  type Pr = { n: number; title: string; at: string };
  const cols = [
    { header: 'PR', get: (r: Pr) => `#${r.n}`, plain: (r: Pr) => r.n },
    { header: 'Title', get: (r: Pr) => r.title, shrink: true },
    { header: 'Since', get: (r: Pr) => r.at, time: true },
  ];
  const now = Date.parse('2026-11-26T12:00:00Z');
  const rows: Pr[] = [
    { n: 8, title: 'A rather long title that does not fit in a narrow terminal', at: '2026-11-26T11:57:00Z' },
    { n: 12, title: 'Short', at: '2026-11-26T09:00:00+00:00' },
  ];

  it('has no borders or row separators, cuts the long column with … to fit the width, and shows relative times', () => {
    const text = renderRows(rows, cols, 'table', { width: 40, now });
    const lines = text.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(40);
    expect(lines[0]).toMatch(/^PR\s+Title\s+Since$/);
    expect(lines[1]).toMatch(/^#8\s+A rather .*…\s+3 minutes ago$/);
    expect(lines[2]).toMatch(/^#12\s+Short\s+3 hours ago$/);
    // Without a width (piped, --wide): nothing is cut.
    expect(renderRows(rows, cols, 'table', { now })).toContain('A rather long title that does not fit in a narrow terminal');
  });

  it('CSV and TSV get plain values and ISO 8601 UTC times', () => {
    expect(renderRows(rows, cols, 'tsv', { now }).split('\n')[2]).toBe('12\tShort\t2026-11-26T09:00:00.000Z');
    expect(parse(renderRows(rows, cols, 'csv'))[1]).toEqual(['8', rows[0]!.title, '2026-11-26T11:57:00.000Z']);
  });

  it('relative times read as people say them', () => {
    expect(ago('2026-11-26T11:59:30Z', now)).toBe('30 seconds ago');
    expect(ago('2026-11-26T11:59:00Z', now)).toBe('1 minute ago');
    expect(ago('2026-11-24T12:00:00Z', now)).toBe('2 days ago');
    expect(ago('2026-09-01T12:00:00Z', now)).toMatch(/^2026-09-0[12]$/); // older: the local date
    expect(ago('not a time', now)).toBe('not a time');
  });

  it('relative times are the words Intl.RelativeTimeFormat would print, past and future, up to 30 days', () => {
    const rtf = new Intl.RelativeTimeFormat('en', { numeric: 'always' });
    const units = [
      [60, 1, 'second'],
      [3600, 60, 'minute'],
      [86_400, 3600, 'hour'],
      [30 * 86_400, 86_400, 'day'],
    ] as const;
    const offsets = [-499, 0, 499, 500, 1000, 59_499, 59_500, 89_999, 90_000, 3_570_000, 84_600_000, 2_591_999_000];
    for (let ms = 7; ms < 30 * 86_400_000; ms = Math.ceil(ms * 1.07)) offsets.push(ms);
    for (const offset of offsets.flatMap((ms) => [ms, -ms])) {
      const seconds = Math.round((now + offset - now) / 1000); // as ago() computes it (never -0 for offset -0)
      const [, size, unit] = units.find(([below]) => Math.abs(seconds) < below)!;
      expect(ago(new Date(now + offset).toISOString(), now), `${offset} ms`).toBe(rtf.format(Math.round(seconds / size), unit));
    }
  });
});

describe('colour decision', () => {
  const tty = { isTTY: true } as NodeJS.WriteStream;
  const pipe = { isTTY: false } as NodeJS.WriteStream;
  it('follows NO_COLOR, FORCE_COLOR and the terminal', () => {
    expect(useColor(tty, {})).toBe(true);
    expect(useColor(pipe, {})).toBe(false);
    expect(useColor(tty, { NO_COLOR: '1' })).toBe(false);
    expect(useColor(pipe, { FORCE_COLOR: '1' })).toBe(true);
    expect(useColor(tty, { FORCE_COLOR: '0' })).toBe(false);
    expect(useColor(tty, { TERM: 'dumb' })).toBe(false);
  });
});

describe('inputs', () => {
  it('parses repositories and git remotes', () => {
    expect(parseRepo('acme/web')).toEqual({ host: 'github.com', owner: 'acme', name: 'web' });
    expect(parseRepo('ghe.example.com/acme/web')).toEqual({ host: 'ghe.example.com', owner: 'acme', name: 'web' });
    expect(() => parseRepo('web')).toThrow(/--repo/);
    expect(repoFromRemoteUrl('https://github.com/acme/web.git')).toEqual({ host: 'github.com', owner: 'acme', name: 'web' });
    expect(repoFromRemoteUrl('git@github.com:acme/web.git')).toEqual({ host: 'github.com', owner: 'acme', name: 'web' });
    expect(repoFromRemoteUrl('ssh://git@ghe.example.com:2222/acme/web')).toEqual({ host: 'ghe.example.com', owner: 'acme', name: 'web' });
    // A git-root layout DIR/<host>/<owner>/<name>.git; too short a path, or one that is no bare repository, is not guessed at.
    expect(repoFromRemoteUrl('/srv/git/github.com/acme/web.git')).toEqual({ host: 'github.com', owner: 'acme', name: 'web' });
    expect(repoFromRemoteUrl('file:///srv/git/localhost/acme/web.git/')).toEqual({ host: 'localhost', owner: 'acme', name: 'web' });
    expect(repoFromRemoteUrl('/acme/web.git')).toBeNull();
    expect(repoFromRemoteUrl('/home/me/src/web')).toBeNull();
  });

  it('parses durations and splits long windows into ≤ 7-day calls', () => {
    expect(parseDuration('24h', '--since')).toBe(86_400_000);
    expect(parseDuration('1.5m', '--x')).toBe(90_000);
    expect(() => parseDuration('soon', '--since')).toThrow(/--since/);
    const day = 86_400_000;
    const windows = splitWindow(0, 20 * day);
    expect(windows).toEqual([[0, 7 * day], [7 * day, 14 * day], [14 * day, 20 * day]]);
    expect(splitWindow(0, day)).toEqual([[0, day]]);
  });
});
