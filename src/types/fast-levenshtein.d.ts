/** Types of fast-levenshtein 3 (it ships none): the edit distance between two strings. */
declare module 'fast-levenshtein' {
  const levenshtein: { get(a: string, b: string, options?: { useCollator?: boolean }): number };
  export default levenshtein;
}
