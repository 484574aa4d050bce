// Every source file of src/ and test/support/ says what it is for in a header comment and stays
// under 500 lines (issue 23): a room a newcomer can read, split by role when it grows.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const MAX_LINES = 500;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return /\.tsx?$/.test(entry.name) ? [path] : [];
  });
}

const files = [...sources(join(ROOT, 'src')), ...sources(join(ROOT, 'test/support'))].map((path) => ({
  name: relative(ROOT, path),
  text: readFileSync(path, 'utf8'),
}));

describe('source files', () => {
  it(`are at most ${MAX_LINES} lines each`, () => {
    const long = files
      .map(({ name, text }) => ({ name, lines: text.split('\n').length - (text.endsWith('\n') ? 1 : 0) }))
      .filter((f) => f.lines > MAX_LINES)
      .map((f) => `${f.name}: ${f.lines} lines`);
    expect(long).toEqual([]);
  });

  it('begin with a header comment saying what the file is for', () => {
    const bare = files
      .filter(({ text }) => !/^\s*(\/\*|\/\/|#!)/.test(text))
      .map(({ name }) => name);
    expect(bare).toEqual([]);
  });
});
