// Every source file of src/ and test/support/ says what it is for in a header comment and stays
// under 500 lines (issue 23), and so does every test file's TypeScript under test/: a room a
// newcomer can read, split by role when it grows. The data under test/fixtures/ (reports and
// projects other tools wrote) is not counted.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const MAX_LINES = 500;

function sources(dir: string, skip: string[] = []): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return skip.includes(path) ? [] : sources(path, skip);
    return /\.tsx?$/.test(entry.name) ? [path] : [];
  });
}

const read = (paths: string[]) =>
  paths.map((path) => ({ name: relative(ROOT, path), text: readFileSync(path, 'utf8') }));
const lineCount = (text: string) => text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
const tooLong = (list: { name: string; text: string }[]) =>
  list
    .map(({ name, text }) => ({ name, lines: lineCount(text) }))
    .filter((f) => f.lines > MAX_LINES)
    .map((f) => `${f.name}: ${f.lines} lines`);

const files = read([...sources(join(ROOT, 'src')), ...sources(join(ROOT, 'test/support'))]);
const testFiles = read(
  sources(join(ROOT, 'test'), [join(ROOT, 'test/support'), join(ROOT, 'test/fixtures')]),
);

describe('source files', () => {
  it(`are at most ${MAX_LINES} lines each`, () => {
    expect(tooLong(files)).toEqual([]);
  });

  it('begin with a header comment saying what the file is for', () => {
    const bare = files.filter(({ text }) => !/^\s*(\/\*|\/\/|#!)/.test(text)).map(({ name }) => name);
    expect(bare).toEqual([]);
  });
});

describe('test files', () => {
  it(`are at most ${MAX_LINES} lines each`, () => {
    expect(tooLong(testFiles)).toEqual([]);
  });
});
