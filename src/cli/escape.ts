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
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * `text` with every unsafe character escaped; the characters in `keep` (e.g. `\n\t` for a check's
 * log, whose lines are meant as lines) pass as they are.
 */
export function printable(text: string, keep = ''): string {
  return text.replace(UNSAFE, (ch) => (keep.includes(ch) ? ch : escapeOne(ch)));
}
