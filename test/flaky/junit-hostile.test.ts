// The JUnit parser on hostile and broken reports: absurd durations, truncated files, entity bombs and
// external entities, wrong roots, bad markup and control characters, each refused (or read) with
// the file and line.
import { describe, expect, it } from 'vitest';
import { parseJUnit } from '../../src/flaky/junit.js';
import { parseError, read } from './junit-helpers.js';

describe('hostile and broken reports', () => {
  it('reads durations as written up to a year; garbage, negatives and absurd values (1e300) are 0, not known', () => {
    const times = [
      '1.5',
      '1,234.5',
      '0.0004',
      '31536000',
      '31536000.001',
      '1e300',
      'Infinity',
      '-3',
      'abc',
      '',
    ];
    const xml = `<testsuite name="s">${times.map((t, i) => `<testcase classname="c" name="t${i}" time="${t}"/>`).join('')}</testsuite>`;
    const { cases } = parseJUnit(xml, 'times.xml');
    expect(cases.map((c) => c.durationMs)).toEqual([1500, 1_234_500, 0, 31_536_000_000, 0, 0, 0, 0, 0, 0]);
  });

  it('a truncated report fails with the file name and the line where it ends', () => {
    const error = parseError(read('hostile/truncated.xml'), 'hostile/truncated.xml');
    expect(error.file).toBe('hostile/truncated.xml');
    expect(error.line).toBe(21);
    expect(error.reason).toMatch(/unexpected end of file: <failure> is not closed/);
    expect(error.message).toContain('hostile/truncated.xml: line 21:');
  });

  it('refuses a billion-laughs DOCTYPE before parsing anything', () => {
    const xml = read('hostile/billion-laughs.xml');
    const error = parseError(xml, 'billion-laughs.xml');
    expect(error.line).toBe(2);
    expect(error.reason).toMatch(/DOCTYPE/);
    expect(error.message).not.toContain('lollol');
    // The same bomb 100 times wider would be refused the same way (nothing is expanded).
    const wider = xml.replace(/(&lol\d?;)+/g, (m) => m.repeat(100));
    expect(parseError(wider, 'wider.xml').reason).toMatch(/DOCTYPE/);
  });

  it('refuses an external entity (XXE) without reading it, also behind a BOM and a comment', () => {
    const error = parseError(read('hostile/external-entity.xml'), 'external-entity.xml');
    expect(error.line).toBe(3);
    expect(error.reason).toMatch(/DOCTYPE/);
    expect(error.message).not.toContain('root:');
    const hidden =
      '\uFEFF<?xml version="1.0"?>\n<!-- x -->\n<!doctype testsuite [<!ENTITY x SYSTEM "file:///etc/hostname">]><testsuite><testcase name="&x;"/></testsuite>';
    expect(parseError(hidden, 'hidden.xml').line).toBe(3);
  });

  it('refuses two root elements', () => {
    const error = parseError(read('hostile/two-roots.xml'), 'two-roots.xml');
    expect(error.file).toBe('two-roots.xml');
    expect(error.line).toBe(2);
  });

  it('refuses a root that is not JUnit', () => {
    const error = parseError(read('hostile/not-junit.xml'), 'not-junit.xml');
    expect(error.reason).toBe('root element <html> is not <testsuites>, <testsuite> or <testcase>');
  });

  it('refuses an empty or blank file', () => {
    expect(parseError(read('hostile/empty.xml'), 'empty.xml')).toMatchObject({
      file: 'empty.xml',
      line: 1,
      reason: 'empty report',
    });
    expect(parseError(' \n\t\n', 'blank.xml').reason).toBe('empty report');
  });

  it('refuses an unescaped < or a bare & in an attribute value, with its line', () => {
    const error = parseError(read('hostile/unescaped-attribute.xml'), 'unescaped-attribute.xml');
    expect(error.line).toBe(3);
    expect(error.reason).toMatch(/raw '<'/);
    // Synthetic: the same for a bare ampersand, while references and CDATA stay fine.
    expect(
      parseError('<testsuite>\n<testcase name="R&D" classname="c"/></testsuite>', 'amp.xml'),
    ).toMatchObject({ line: 2 });
    const fine = parseJUnit(
      '<testsuite><testcase name="R&amp;D &#x2713; &lt;b&gt;" classname="c"><failure><![CDATA[a="<" & b]]></failure></testcase></testsuite>',
    );
    expect(fine.cases[0].name).toBe('R&D \u2713 <b>');
    expect(fine.cases[0].attempts[0].text).toBe('a="<" & b');
  });

  it('reads control characters that XML forbids (ANSI colours in test output) as U+FFFD instead of refusing the report', () => {
    const { cases } = parseJUnit(
      '<testsuite>\n<testcase name="paints \x1b[31mred\x1b[0m" classname="c"><failure message="\x1b[1mboom">at x\x07</failure></testcase></testsuite>',
    );
    expect(cases[0].name).toBe('paints \uFFFD[31mred\uFFFD[0m');
    expect(cases[0].attempts[0]).toMatchObject({
      outcome: 'failed',
      message: '\uFFFD[1mboom',
      text: 'at x\uFFFD',
    });
  });

  it("refuses elements nested deeper than 200, with the line, and other malformed markup with the parser's reason", () => {
    const deep = `<testsuite>\n${'<testsuite>'.repeat(250)}${'</testsuite>'.repeat(250)}</testsuite>`;
    expect(parseError(deep, 'deep.xml')).toMatchObject({
      line: 2,
      reason: 'elements nested deeper than 200',
    });
    expect(parseError('<testsuite>\n<testcase name="a"></testsuite>', 'mismatch.xml')).toMatchObject({
      line: 2,
    });
    expect(parseError('<testsuite>\n<testcase name="&nope;"/></testsuite>', 'entity.xml')).toMatchObject({
      line: 2,
      reason: 'undefined entity.',
    });
  });
});
