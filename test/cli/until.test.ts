/**
 * `--until` of `mq queue freeze` and `flaky quarantine` (src/cli/until.ts): one grammar for both,
 * durations in any of the units people type, zoned times only, nothing already over.
 */
import { describe, expect, it } from 'vitest';
import { parseUntil } from '../../src/cli/until.js';

const NOW = Date.parse('2026-12-04T10:00:00Z');
const at = (text: string, max?: { ms: number; words: string }) =>
  new Date(parseUntil(text, '--until', NOW, max)).toISOString();

describe('parseUntil', () => {
  it('reads a duration from now in short and long units', () => {
    expect(at('90m')).toBe('2026-12-04T11:30:00.000Z');
    expect(at('90 minutes')).toBe('2026-12-04T11:30:00.000Z');
    expect(at('1.5h')).toBe('2026-12-04T11:30:00.000Z');
    expect(at('2 hours')).toBe('2026-12-04T12:00:00.000Z');
    expect(at('7d')).toBe('2026-12-11T10:00:00.000Z');
    expect(at('1 day')).toBe('2026-12-05T10:00:00.000Z');
    expect(at('30s')).toBe('2026-12-04T10:00:30.000Z');
  });

  it('reads a time with a zone, as that instant', () => {
    expect(at('2026-12-24T19:00+01:00')).toBe('2026-12-24T18:00:00.000Z');
    expect(at('2026-12-24T18:00:00Z')).toBe('2026-12-24T18:00:00.000Z');
  });

  it('refuses a time without a zone, a time not ahead, and one beyond the bound, naming the flag', () => {
    expect(() => at('2026-12-24T18:00')).toThrow('--until: "2026-12-24T18:00" has no time zone');
    expect(() => at('next week')).toThrow('--until: "next week" is not an ISO 8601 time');
    expect(() => at('0m')).toThrow('--until: 2026-12-04T10:00:00.000Z is not in the future');
    expect(() => at('2026-12-04T09:59:59Z')).toThrow('is not in the future (now 2026-12-04T10:00:00.000Z)');
    expect(() => at('400d', { ms: 366 * 86_400_000, words: 'a year' })).toThrow(
      '--until: 2028-01-08T10:00:00.000Z is more than a year away',
    );
    expect(at('400d')).toBe('2028-01-08T10:00:00.000Z');
  });
});
