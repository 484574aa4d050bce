/**
 * Text from a server, made safe to print for people: control characters a terminal would act on
 * (ESC sequences that move the cursor or retitle the window, CR that overwrites a line, LF that
 * forges one, other C0/C1 controls, DEL) and the bidirectional overrides that reorder what is
 * shown are printed as visible escapes (`\e`, `\r`, `\n`, `\x07`, `\u202e`). JSON output never
 * goes through here: it stays exactly what the server said.
 */

// C0 controls, DEL, C1 controls, line/paragraph separators, bidi embeddings, overrides and isolates.
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const NAMED: Record<string, string> = { '\x1b': '\\e', '\r': '\\r', '\n': '\\n', '\t': '\\t' };

function escapeOne(ch: string): string {
  const named = NAMED[ch];
  if (named) return named;
  const code = ch.charCodeAt(0);
  return code <= 0xff
    ? `\\x${code.toString(16).padStart(2, '0')}`
    : `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * `text` with every unsafe character escaped; the characters in `keep` (e.g. `\n\t` for a check's
 * log, whose lines are meant as lines) pass as they are.
 */
export function printable(text: string, keep = ''): string {
  return text.replace(UNSAFE, (ch) => (keep.includes(ch) ? ch : escapeOne(ch)));
}

/**
 * The CLI's own styling that may reach a terminal: bold on/off (cli-table3's headers) and cyan
 * on/off (record keys). Nothing that moves the cursor, clears, retitles or writes the clipboard.
 */
// eslint-disable-next-line no-control-regex
const OWN_STYLE_OR_CRLF = /(\x1b\[(?:1|22|36|39)m|\r\n)/;

/**
 * The last guard of everything a command prints to a terminal (base-command's out(), the flaky
 * commands' emit()): every control character escaped except the line breaks and tabs that lay
 * out lines and columns (`\n`, a CSV record's `\r\n`, `\t`) and the CLI's own colours above. The
 * renderers escape the text of every cell before this (render.ts), so a server's own colour code
 * shows as `\e[31m` too; this catches any text that reaches a terminal without a renderer.
 * DEL, C1 and bidi controls become `\u009b`-style escapes here, C0 ones `\x07`-style: a JSON
 * document (`--format json`), where JSON.stringify left only the former raw, stays valid JSON.
 */
export function forTerminal(text: string): string {
  return text
    .split(OWN_STYLE_OR_CRLF)
    .map((part, i) => (i % 2 === 1 ? part : printable(jsonForTerminal(part), '\n\t')))
    .join('');
}

// Characters JSON.stringify leaves raw in a string that a terminal may act on or reorder: DEL, C1, line separators, bidi controls.
const JSON_UNSAFE = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * A JSON document for a terminal: the characters above written as `\u009b` escapes, which JSON
 * reads as the same string, so the document means exactly what it meant (piped, it is left as is).
 */
export function jsonForTerminal(json: string): string {
  return json.replace(JSON_UNSAFE, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
