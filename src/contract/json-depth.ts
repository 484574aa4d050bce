/**
 * The JSON nesting bound of every request body (docs/decisions.md: deeper than 64 is refused
 * at once). `JSON.parse` of 20 MiB of `[[[[…` took 7.8 s on the server's only request thread, so
 * the depth is measured first by one linear pass over the raw text that skips strings (and their
 * escapes), and a body nested too deep is never handed to the parser. No field of the contract is
 * nested deeper than a few levels; webhook payloads from forges stay well under 20.
 */

/** The deepest nesting of arrays and objects a request body may have. */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22; // "
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b; // [
const OPEN_OBJECT = 0x7b; // {
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;

/** Characters of a string looked at one by one before searching for its end with indexOf. */
const SHORT_SCAN = 64;

/**
 * Whether `text` nests arrays/objects deeper than `max`. Brackets inside strings do not count;
 * malformed JSON is left to the parser (its error names the position). Linear whatever the input:
 * outside strings one step per character; inside one, the first characters are looked at one by
 * one (short strings, dense escapes) and past them the next quote and backslash are found with
 * indexOf (long report contents), each search kept until the scan passes its result.
 */
export function jsonTooDeep(text: string, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let nextQuote = -1;
  let nextBackslash = -1;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // Find the quote that ends the string: an escape (backslash + one character) never does.
      let j = i + 1;
      for (;;) {
        const stop = Math.min(n, j + SHORT_SCAN);
        while (j < stop) {
          const d = text.charCodeAt(j);
          if (d === QUOTE) break;
          j += d === BACKSLASH ? 2 : 1;
        }
        if (j >= n) return false; // unterminated: JSON.parse says so
        if (j < stop) break; // at the closing quote
        if (nextQuote < j) {
          nextQuote = text.indexOf('"', j);
          if (nextQuote === -1) return false;
        }
        if (nextBackslash < j) {
          nextBackslash = text.indexOf('\\', j);
          if (nextBackslash === -1) nextBackslash = Infinity;
        }
        if (nextBackslash > nextQuote) {
          j = nextQuote;
          break;
        }
        j = nextBackslash + 2;
      }
      i = j;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > max) return true;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) depth--;
  }
  return false;
}

/** The one-line refusal of a body nested too deep (400). */
export const JSON_TOO_DEEP_MESSAGE = `body: JSON nested deeper than ${MAX_JSON_DEPTH} levels (arrays and objects); no request needs that many`;
