/** How long a quarantine has left, in words the CLI and the dashboard both print. */

/** `2d 4h`, `3h 5m`, `12m 30s`, `45s`: whole seconds left, in the two largest units. */
export function timeLeft(seconds: number): string {
  const units: [string, number][] = [
    ['d', 86_400],
    ['h', 3600],
    ['m', 60],
    ['s', 1],
  ];
  const parts: string[] = [];
  let rest = Math.max(0, Math.floor(seconds));
  for (const [unit, size] of units) {
    if (parts.length === 2) break;
    const n = Math.floor(rest / size);
    rest -= n * size;
    if (n > 0 || parts.length > 0) parts.push(`${n}${unit}`);
  }
  return parts.length ? parts.join(' ').replace(/ 0\w$/, '') : '0s';
}
