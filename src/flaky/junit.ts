/** JUnit XML parsing for the common dialects (jest, vitest, pytest, Maven, Go, …) into test results. */
import { SaxesParser } from 'saxes';

/**
 * JUnit XML parsing for every common dialect: jest-junit, vitest, pytest (xunit1/xunit2), Maven
 * Surefire / Gradle (with <flakyFailure>/<flakyError>/<rerunFailure>/<rerunError> retry children),
 * gotestsum (retries as duplicate <testcase> entries), Playwright, mocha, karma, .NET loggers,
 * TestCafe, newman; with or without the <testsuites> wrapper, nested suites, failure vs error vs
 * skipped, `file`/`filepath` attributes, timestamps and durations.
 *
 * One pass of a conformant, non-validating XML parser (saxes) builds a small element tree. Safety: a
 * DOCTYPE (the only way to declare entities) is refused before parsing, so only the five predefined
 * entities and character references exist and no input can expand (the "billion laughs" attack has
 * nothing to expand); nothing is ever fetched. CDATA content is taken literally. Attribute values
 * must be well-formed (no raw `<`, no bare `&`). Control characters that XML forbids, which test
 * output (ANSI colours) often carries, are read as U+FFFD instead of failing the report.
 */

export type Outcome = 'passed' | 'failed' | 'skipped';

/** One execution of a test: the final one, or an earlier (retried) one recorded by the runner. */
export interface Attempt {
  outcome: Outcome;
  /** For failed attempts: `failure` (an assertion) or `error` (an unexpected exception). */
  kind?: 'failure' | 'error';
  message: string | null;
  text: string | null;
}

export interface JUnitCase {
  name: string;
  classname: string | null;
  /** Source file: the case's file/filepath, else the nearest suite's, else a path-like classname. */
  file: string | null;
  /** The enclosing suites' names, outermost first, joined with " › " (null when there is no suite). */
  parent: string | null;
  /**
   * The runner's own variant of the test, when the report names one: Playwright's project (its
   * JUnit reporter writes one <testsuite> per project and file, the project in `hostname`). Null
   * for every other dialect, where `hostname` is the machine's name.
   */
  variant: string | null;
  /** Epoch ms from the case's or the nearest suite's timestamp, else null. */
  timestamp: number | null;
  durationMs: number;
  /** The final outcome of this <testcase> element. */
  outcome: Outcome;
  /** Every execution in order: retries recorded as children come before (flaky*) or after (rerun*) the first. */
  attempts: Attempt[];
}

export interface JUnitReport {
  cases: JUnitCase[];
  suites: number;
}

/** A report that is not well-formed JUnit XML; `line` is 1-based when known. */
export class JUnitParseError extends Error {
  override name = 'JUnitParseError';
  constructor(
    readonly file: string,
    readonly line: number | null,
    readonly reason: string,
  ) {
    super(`${file}${line ? `: line ${line}` : ''}: ${reason}`);
  }
}

/** An element: its attributes (entity-decoded), child elements by name, and its character data. */
interface Node {
  attrs: Record<string, string>;
  children: Record<string, Node[]>;
  /** Character data, entity-decoded, in order. */
  text: string[];
  /** CDATA sections, literal. */
  cdata: string[];
}

/** Deeper nesting than any test report has is refused (it only costs stack and memory). */
const MAX_DEPTH = 200;
/** Characters XML 1.0 forbids anywhere in a document. */
// eslint-disable-next-line no-control-regex
const FORBIDDEN = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/g;

function lineAt(xml: string, index: number): number {
  let line = 1;
  for (let i = xml.indexOf('\n'); i !== -1 && i < index; i = xml.indexOf('\n', i + 1)) line++;
  return line;
}

const REFERENCE = /^&(?:#[0-9]+|#x[0-9a-fA-F]+|[A-Za-z_:][\w.:-]*);/;

/**
 * Attribute values may contain neither a raw `<` nor a bare `&` (XML 1.0, AttValue). The parser
 * refuses both, but a bare `&` surfaces as an unclosed tag at the end of the file; after a parse
 * error this pass finds the attribute and names it. One linear pass over the tags; text,
 * comments, CDATA and processing instructions are skipped.
 */
function checkAttributeValues(xml: string, file: string): void {
  const skip = (from: number, close: string): number => {
    const end = xml.indexOf(close, from);
    return end === -1 ? xml.length : end + close.length;
  };
  let i = xml.indexOf('<');
  while (i !== -1 && i < xml.length) {
    if (xml.startsWith('<!--', i)) i = skip(i + 4, '-->');
    else if (xml.startsWith('<![CDATA[', i)) i = skip(i + 9, ']]>');
    else if (xml.startsWith('<?', i)) i = skip(i + 2, '?>');
    else {
      let j = i + 1;
      while (j < xml.length && xml[j] !== '>') {
        const quote = xml[j];
        if (quote !== '"' && quote !== "'") {
          j++;
          continue;
        }
        const end = xml.indexOf(quote, j + 1);
        if (end === -1) return; // unterminated: the validator has its own say
        const value = xml.slice(j + 1, end);
        const lt = value.indexOf('<');
        if (lt !== -1) {
          throw new JUnitParseError(
            file,
            lineAt(xml, j + 1 + lt),
            "attribute value contains a raw '<' (escape it as &lt;)",
          );
        }
        for (let k = value.indexOf('&'); k !== -1; k = value.indexOf('&', k + 1)) {
          if (!REFERENCE.test(value.slice(k, k + 64))) {
            throw new JUnitParseError(
              file,
              lineAt(xml, j + 1 + k),
              "attribute value contains a bare '&' (escape it as &amp;)",
            );
          }
        }
        j = end + 1;
      }
      i = j + 1;
    }
    i = xml.indexOf('<', i);
  }
}

/** Refuses a DOCTYPE in the prolog: JUnit needs none, and it is where entity bombs live. */
function checkProlog(xml: string, file: string): void {
  let i = 0;
  for (;;) {
    while (i < xml.length && /\s/.test(xml[i])) i++;
    if (xml.startsWith('\uFEFF', i)) i++;
    else if (xml.startsWith('<?', i)) {
      const end = xml.indexOf('?>', i);
      if (end === -1) return;
      i = end + 2;
    } else if (xml.startsWith('<!--', i)) {
      const end = xml.indexOf('-->', i);
      if (end === -1) return;
      i = end + 3;
    } else break;
  }
  if (xml.slice(i, i + 9).toUpperCase() === '<!DOCTYPE') {
    throw new JUnitParseError(
      file,
      lineAt(xml, i),
      'DOCTYPE declarations are not allowed (no entity expansion in test reports)',
    );
  }
}

/** Characters fed to the parser at a time. */
const PARSE_CHUNK = 256 * 1024;
const TOO_DEEP = `elements nested deeper than ${MAX_DEPTH}`;
/** Thrown from the parser's error handler to stop at the first error. */
const STOP_PARSING = new Error('stop parsing');

/** The document's root element, read in one pass; a malformed document throws with its line. */
function readTree(xml: string, file: string): { name: string; node: Node } {
  if (xml.trim() === '') throw new JUnitParseError(file, 1, 'empty report');
  const parser = new SaxesParser({ position: true });
  const stack: Node[] = [];
  let root: { name: string; node: Node } | undefined;
  let error: { line: number; reason: string } | undefined;
  parser.on('error', (e) => {
    // saxes would go on after an error (a 16.5 MB report nested too deep took 43-64 s to be
    // refused): the first error ends the parse, thrown out of the parser's write.
    error ??= { line: parser.line, reason: e.message.replace(/^\d+:\d+: /, '') };
    throw STOP_PARSING;
  });
  parser.on('opentag', (tag) => {
    const node: Node = { attrs: tag.attributes as Record<string, string>, children: {}, text: [], cdata: [] };
    const parent = stack[stack.length - 1];
    if (parent) (parent.children[tag.name] ??= []).push(node);
    else root ??= { name: tag.name, node };
    if (!tag.isSelfClosing) stack.push(node);
    if (stack.length > MAX_DEPTH) parser.fail(TOO_DEEP);
  });
  parser.on('closetag', (tag) => {
    if (!tag.isSelfClosing) stack.pop();
  });
  parser.on('text', (text) => stack[stack.length - 1]?.text.push(text));
  parser.on('cdata', (cdata) => stack[stack.length - 1]?.cdata.push(cdata));
  try {
    // In chunks, each cleaned as it is fed: a report refused early is not cleaned to its end.
    for (let at = 0; at < xml.length; at += PARSE_CHUNK)
      parser.write(xml.slice(at, at + PARSE_CHUNK).replace(FORBIDDEN, '\uFFFD'));
    parser.close();
  } catch (thrown) {
    if (thrown !== STOP_PARSING) throw thrown;
  }
  if (error) {
    // An attribute with a raw '<' or a bare '&' confuses any parser; say what is wrong with it
    // (not for a report nested too deep: that is the whole answer, and the pass costs 100s of ms).
    if (!error.reason.startsWith(TOO_DEEP)) checkAttributeValues(xml, file);
    const open = /^unclosed tag: (.+)$/.exec(error.reason);
    if (open) {
      throw new JUnitParseError(
        file,
        lineAt(xml, xml.length),
        `unexpected end of file: <${open[1]}> is not closed (truncated report?)`,
      );
    }
    throw new JUnitParseError(file, error.line, error.reason);
  }
  if (!root) throw new JUnitParseError(file, null, 'no root element');
  return root;
}

/** The child elements of one name. */
const kids = (node: Node, name: string): Node[] => node.children[name] ?? [];

function attr(node: Node, name: string): string | null {
  const value = node.attrs[name]?.trim();
  return value ? value : null;
}

function textOf(node: Node): string | null {
  // Character data first, then CDATA sections. (Text that surrounds a CDATA section: producers
  // put only whitespace there.)
  const parts = [node.text.join(''), ...node.cdata];
  // Surefire and Playwright put the trace of flaky/rerun children in <stackTrace>.
  for (const child of kids(node, 'stackTrace')) {
    const t = textOf(child);
    if (t) parts.push(t);
  }
  const joined = parts.join('').trim();
  return joined === '' ? null : joined;
}

/** The longest duration taken as written: a year. */
const MAX_DURATION_MS = 365 * 24 * 3600 * 1000;

/**
 * Seconds as written by JUnit producers ("1.5", "1,234.5", "" or garbage) → milliseconds; 0 (not
 * known) for garbage, negatives and anything over a year. A `time="1e300"` once made a number no
 * integer column holds, and PostgreSQL refused the whole upload.
 */
export function parseDurationMs(value: string | null): number {
  if (!value) return 0;
  const ms = Math.round(Number(value.replace(/,/g, '')) * 1000);
  return ms > 0 && ms <= MAX_DURATION_MS ? ms : 0;
}

/**
 * ISO 8601 (with or without zone; no zone = UTC), compact ISO (`20171206T181412+0100`), RFC 1123, or
 * epoch seconds/milliseconds. Placeholders at or before the Unix epoch (jest-junit writes
 * `1970-01-01T00:00:00` for a file that failed to run, Go's zero time is `0001-01-01T00:00:00Z`)
 * mean "unknown" and give null.
 */
export function parseTimestamp(value: string | null): number | null {
  if (!value) return null;
  let ms: number;
  if (/^\d+(\.\d+)?$/.test(value)) {
    const n = Number(value);
    ms = n > 1e11 ? Math.round(n) : Math.round(n * 1000);
  } else {
    const compact = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(Z|[+-]\d{2}:?\d{2})?$/.exec(value);
    const iso = compact
      ? `${compact[1]}-${compact[2]}-${compact[3]}T${compact[4]}:${compact[5]}:${compact[6]}${compact[7] ?? 'Z'}`
      : /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(value)
        ? `${value}Z`
        : value;
    ms = Date.parse(iso);
  }
  return Number.isFinite(ms) && ms > 0 ? ms : null;
}

const PATH_LIKE =
  /^[^\s:]+\.(?:[cm]?[jt]sx?|py|go|rb|java|kt|kts|scala|cs|fs|vb|rs|swift|php|ex|exs|feature|robot)$/i;

function failedAttempt(node: Node, kind: 'failure' | 'error'): Attempt {
  return { outcome: 'failed', kind, message: attr(node, 'message'), text: textOf(node) };
}

/** Test names, classnames, file paths and suite paths longer than this many UTF-8 bytes are cut (docs/decisions.md). */
export const MAX_NAME_BYTES = 4096;
const ELLIPSIS = '\u2026';

/**
 * `text` cut to at most MAX_NAME_BYTES UTF-8 bytes, ending in `…` when cut (never inside a
 * surrogate pair). A report is never refused for one long name; the test id is derived from the
 * cut name, so the same long name is the same test in every upload.
 */
export function cutName<T extends string | null>(text: T): T {
  // A UTF-16 unit is at most 3 UTF-8 bytes: short names are never measured.
  if (text === null || text.length * 3 <= MAX_NAME_BYTES) return text;
  const encoder = new TextEncoder();
  if (text.length <= MAX_NAME_BYTES && encoder.encode(text).length <= MAX_NAME_BYTES) return text;
  const room = MAX_NAME_BYTES - encoder.encode(ELLIPSIS).length;
  let bytes = 0;
  let end = 0;
  while (end < text.length) {
    const code = text.codePointAt(end)!;
    const size = code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
    if (bytes + size > room) break;
    bytes += size;
    end += code >= 0x10000 ? 2 : 1;
  }
  return (text.slice(0, end) + ELLIPSIS) as T;
}

function parseCase(
  node: Node,
  suites: { name: string | null; file: string | null; timestamp: number | null; project?: string | null }[],
): JUnitCase {
  const name = cutName(attr(node, 'name') ?? '');
  const classname = cutName(attr(node, 'classname') ?? attr(node, 'class'));
  let file = cutName(attr(node, 'file') ?? attr(node, 'filepath'));
  for (let i = suites.length - 1; !file && i >= 0; i--) file = suites[i].file;
  if (!file && classname && PATH_LIKE.test(classname)) file = classname;
  const names = suites.map((s) => s.name).filter((n): n is string => Boolean(n));
  let timestamp = parseTimestamp(attr(node, 'timestamp'));
  for (let i = suites.length - 1; timestamp === null && i >= 0; i--) timestamp = suites[i].timestamp;

  const failures = [
    ...kids(node, 'failure').map((f) => failedAttempt(f, 'failure')),
    ...kids(node, 'error').map((f) => failedAttempt(f, 'error')),
  ];
  const flaky = [
    ...kids(node, 'flakyFailure').map((f) => failedAttempt(f, 'failure')),
    ...kids(node, 'flakyError').map((f) => failedAttempt(f, 'error')),
  ];
  const reruns = [
    ...kids(node, 'rerunFailure').map((f) => failedAttempt(f, 'failure')),
    ...kids(node, 'rerunError').map((f) => failedAttempt(f, 'error')),
  ];
  const skippedNode = kids(node, 'skipped')[0];
  const status = (attr(node, 'status') ?? '').toLowerCase();

  let outcome: Outcome;
  const attempts: Attempt[] = [];
  if (failures.length) {
    // The first failure child decides the message; several children still make one execution.
    outcome = 'failed';
    attempts.push(failures[0], ...reruns);
  } else if (
    skippedNode !== undefined ||
    status === 'skipped' ||
    status === 'disabled' ||
    status === 'notrun'
  ) {
    outcome = 'skipped';
    attempts.push({ outcome, message: skippedNode ? attr(skippedNode, 'message') : null, text: null });
  } else {
    outcome = 'passed';
    // Surefire/Gradle/Playwright(includeRetries): failed attempts that a later attempt passed.
    attempts.push(...flaky, { outcome, message: null, text: null });
  }
  return {
    name,
    classname,
    file,
    parent: names.length ? cutName(names.join(' › ')) : null,
    variant: suites[0]?.project ?? null,
    timestamp,
    durationMs: parseDurationMs(attr(node, 'time')),
    outcome,
    attempts,
  };
}

/**
 * Playwright's JUnit reporter: a <testsuites> root with an `id` attribute (empty unless
 * PLAYWRIGHT_JUNIT_SUITE_ID is set) over <testsuite> elements that all carry `hostname` (the
 * project's name, empty without projects). No other producer we know writes `id` on the root:
 * vitest, pytest, karma and the .NET loggers put a machine name in `hostname`, and karma and .NET
 * an `id` on the suites, not on the root.
 */
function isPlaywright(root: string, top: Node): boolean {
  if (root !== 'testsuites' || top.attrs.id === undefined) return false;
  const suites = kids(top, 'testsuite');
  return suites.length > 0 && suites.every((s) => s.attrs.hostname !== undefined);
}

/**
 * Parses one JUnit XML report. `file` names the report in errors. Throws JUnitParseError for
 * anything that is not well-formed XML with a <testsuites>, <testsuite> or <testcase> root.
 */
export function parseJUnit(xml: string, file = 'report.xml'): JUnitReport {
  checkProlog(xml, file);
  const { name: root, node: top } = readTree(xml, file);
  const cases: JUnitCase[] = [];
  let suiteCount = 0;
  type Frame = { name: string | null; file: string | null; timestamp: number | null; project: string | null };
  const playwright = isPlaywright(root, top);

  const walkSuite = (suite: Node, stack: Frame[]) => {
    suiteCount++;
    const frame: Frame = {
      name: cutName(attr(suite, 'name')),
      file: cutName(attr(suite, 'file') ?? attr(suite, 'filepath')),
      timestamp: parseTimestamp(attr(suite, 'timestamp')),
      project: playwright ? cutName(attr(suite, 'hostname')) : null,
    };
    const next = [...stack, frame];
    for (const c of kids(suite, 'testcase')) cases.push(parseCase(c, next));
    for (const inner of kids(suite, 'testsuite')) walkSuite(inner, next);
  };

  if (root === 'testsuites') {
    for (const suite of kids(top, 'testsuite')) walkSuite(suite, []);
    // Some producers put cases straight under <testsuites>.
    for (const c of kids(top, 'testcase')) cases.push(parseCase(c, []));
  } else if (root === 'testsuite') walkSuite(top, []);
  else if (root === 'testcase') cases.push(parseCase(top, []));
  else
    throw new JUnitParseError(
      file,
      1,
      `root element <${root}> is not <testsuites>, <testsuite> or <testcase>`,
    );

  for (const c of cases) {
    if (!c.name)
      throw new JUnitParseError(
        file,
        null,
        `a <testcase>${c.classname ? ` of ${c.classname}` : ''} has no name`,
      );
  }
  return { cases, suites: suiteCount };
}
