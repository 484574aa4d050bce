// Helpers of the JUnit parser tests (test/flaky/junit-*.test.ts): reading the fixtures under
// test/fixtures/junit, picking cases out of a parsed report and the pass-on-retry signal.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { JUnitParseError, parseJUnit, type JUnitCase } from '../../src/flaky/junit.js';

// Every fixture under test/fixtures/junit was written by the named tool (see its README.md);
// the few inline documents of the tests are synthetic and say so.
const dir = fileURLToPath(new URL('../fixtures/junit/', import.meta.url));
export const read = (name: string) => readFileSync(dir + name, 'utf8');
export const load = (name: string) => parseJUnit(read(name), name);

/** The single case with this name (and classname, when given). */
export function one(cases: JUnitCase[], name: string, classname?: string): JUnitCase {
  const found = cases.filter(
    (c) => c.name === name && (classname === undefined || c.classname === classname),
  );
  expect(found, `${classname ?? ''} ${name}`).toHaveLength(1);
  return found[0];
}
export const named = (cases: JUnitCase[], name: string) => cases.filter((c) => c.name === name);
/** Attempts in a compact form: `passed`, `skipped`, `failed:failure`, `failed:error`. */
export const attempts = (c: JUnitCase) =>
  c.attempts.map((a) => (a.kind ? `${a.outcome}:${a.kind}` : a.outcome));
export const at = (iso: string) => Date.parse(iso);

/**
 * The pass-on-retry signal as the merging module sees it: test identities (file, classname, parent,
 * name) that have both a failed and a passed execution in one upload, whether the runner wrote the
 * failed attempts as children of one <testcase> or as duplicate <testcase> entries.
 */
export function passedOnRetry(
  cases: JUnitCase[],
  key = (c: JUnitCase) => [c.file, c.classname, c.parent, c.name].join('\u0000'),
): string[] {
  const seen = new Map<string, { name: string; outcomes: Set<string> }>();
  for (const c of cases) {
    const entry = seen.get(key(c)) ?? { name: c.name, outcomes: new Set<string>() };
    for (const a of c.attempts) entry.outcomes.add(a.outcome);
    seen.set(key(c), entry);
  }
  return [...seen.values()]
    .filter((e) => e.outcomes.has('failed') && e.outcomes.has('passed'))
    .map((e) => e.name);
}

export function parseError(xml: string, file: string): JUnitParseError {
  try {
    parseJUnit(xml, file);
  } catch (error) {
    expect(error).toBeInstanceOf(JUnitParseError);
    return error as JUnitParseError;
  }
  throw new Error(`${file} parsed without error`);
}
