/**
 * "Did you mean": the nearest of a few names to what was typed (a command, a flag), by edit
 * distance (fast-levenshtein), and only when it is near enough to be a typo.
 */
import levenshtein from 'fast-levenshtein';

/** Edits a typo may have: 1 for names of up to 3 letters, else 2 (a swap, `--prot` for `--port`) or a third of the name. */
function tolerance(word: string): number {
  return word.length <= 3 ? 1 : Math.max(2, Math.floor(word.length / 3));
}

/** The candidate nearest to `word` (ties: the first), or undefined when none is within a typo of it. */
export function closest(word: string, candidates: readonly string[]): { name: string; distance: number } | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const name of candidates) {
    const distance = levenshtein.get(word.toLowerCase(), name.toLowerCase());
    if (distance <= tolerance(word) && (!best || distance < best.distance)) best = { name, distance };
  }
  return best;
}

/**
 * The command meant by a mistyped one: oclif hands the words as one id (`mq:stauts:12`); each
 * leading part is tried as a command id, the rest being its arguments. The nearest wins; for an
 * equal distance, the longer command.
 */
export function closestCommand(id: string, ids: readonly string[]): { id: string; argv: string[] } | undefined {
  const parts = id.split(':');
  let best: { id: string; argv: string[]; distance: number } | undefined;
  for (let n = parts.length; n >= 1; n--) {
    const hit = closest(parts.slice(0, n).join(':'), ids);
    if (hit && (!best || hit.distance < best.distance)) best = { id: hit.name, argv: parts.slice(n), distance: hit.distance };
  }
  return best && { id: best.id, argv: best.argv };
}

interface ParseErrorLike {
  message: string;
  flags?: unknown;
  parse?: { input?: { flags?: Record<string, unknown> } };
}

/**
 * oclif's "Nonexistent flag: --priorty" with the flag meant, when one is near: "Nonexistent
 * flag: --priorty (did you mean --priority?)". Other errors come back as they are.
 */
export function withFlagHint<E extends Error>(error: E): E {
  const e = error as E & ParseErrorLike;
  const known = Object.keys(e.parse?.input?.flags ?? {});
  if (!Array.isArray(e.flags) || !known.length) return error;
  const hints: string[] = [];
  for (const typed of e.flags as string[]) {
    const name = String(typed).replace(/^-+/, '').split('=')[0]!;
    const hit = closest(name, known);
    if (hit) hints.push(`--${hit.name}`);
  }
  if (!hints.length) return error;
  const [first = '', ...rest] = e.message.split('\n');
  e.message = [`${first} (did you mean ${hints.join(', ')}?)`, ...rest].join('\n');
  return error;
}
