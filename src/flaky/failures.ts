/**
 * Failure messages grouped by what they say, not by the numbers in them: ids, hashes, paths,
 * addresses, timestamps and numbers are replaced by placeholders, so "order 91823 expired at
 * 2026-11-20T10:00:00Z" and "order 5521 expired at 2026-11-21T08:12:44Z" are one failure.
 */
const RULES: Array<[RegExp, string]> = [
  [/\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?/g, '<time>'],
  [/\b\d{2}:\d{2}:\d{2}(?:\.\d+)?\b/g, '<time>'],
  [/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '<id>'],
  [/\b0x[0-9a-f]+\b/gi, '<addr>'],
  [/(?<![\w.@~/\\:-])(?:[A-Za-z]:)?(?:[\w.@~-]*[/\\])+[\w.@-]+(?::\d+(?::\d+)?)?/g, '<path>'],
  [/\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{6,}\b/gi, '<id>'],
  [/\b\d+(?:\.\d+)?(?:ms|s|m|h|%)?\b/g, '<n>'],
];

const MAX_SUMMARY = 240;

/** The first meaningful line of a failure: its message, else the first non-blank line of its text. */
export function failureLine(message: string | null, text: string | null): string {
  const source = (message && message.trim()) || (text && text.trim()) || '';
  const line = source.split(/\r?\n/).find((l) => l.trim() !== '') ?? '';
  return line.trim().slice(0, 1000);
}

/** The group a failure belongs to (also its summary): the failure line with variable parts normalised. */
export function normaliseFailure(message: string | null, text: string | null): string {
  let line = failureLine(message, text);
  if (!line) return '(no failure message)';
  for (const [pattern, replacement] of RULES) line = line.replace(pattern, replacement);
  line = line.replace(/\s+/g, ' ').trim();
  return line.length > MAX_SUMMARY ? `${line.slice(0, MAX_SUMMARY - 1)}…` : line;
}
