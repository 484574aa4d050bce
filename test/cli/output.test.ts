import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedEnv, railyard } from '../support/cli.js';
import { startTestServer, type TestServer } from '../support/server.js';

// Output that scripts can trust, through the real binary against a real server (sandbox forge).
let server: TestServer;
let env: Record<string, string>;
const WEB = ['--repo', 'github.com/acme/web'];
const TESTS = ['--repo', 'github.com/acme/tests'];
let testId: string;

async function ok(args: string[]) {
  const result = await railyard(args, env);
  expect(result.code, `${args.join(' ')} → ${result.stderr}`).toBe(0);
  return result;
}

beforeAll(async () => {
  server = await startTestServer({ tokens: { 'out-token': 'acme' } });
  env = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: 'out-token', RAILYARD_ORG: 'acme' });
  // A paused queue: the PRs stay pending, so two reads of them are the same.
  await ok(['mq', 'queue', 'create', ...WEB]);
  await ok(['mq', 'queue', 'pause', ...WEB]);
  await ok(['mq', 'submit', '1', ...WEB]);
  await ok(['mq', 'submit', '2', ...WEB, '--priority', 'urgent']);
  // Failed tests whose names hold a newline, a comma and a quote, and a formula.
  const report = join(env.HOME, 'report.xml');
  writeFileSync(
    report,
    '<?xml version="1.0"?>\n<testsuite name="s">' +
      '<testcase classname="app" name="two&#10;lines, &quot;quoted&quot;" file="a.js"><failure message="boom">x</failure></testcase>' +
      '<testcase classname="app" name="=HYPERLINK(&quot;http://x&quot;)" file="a.js"><failure message="boom">x</failure></testcase>' +
      '<testcase classname="app" name="fine" file="a.js"/>' +
      '</testsuite>\n',
  );
  await ok([
    'flaky',
    'upload',
    ...TESTS,
    '--branch',
    'main',
    '--sha',
    'abc1234',
    '--started-at',
    '10m',
    report,
  ]);
  const failing = JSON.parse((await ok(['flaky', 'list-failing', ...TESTS, '--json'])).stdout);
  testId = failing.tests[0].id;
});
afterAll(async () => {
  await server?.close();
});

describe('--json and --format json', () => {
  it('print the same document for every command that has both', async () => {
    const commands = [
      ['mq', 'list', ...WEB],
      ['mq', 'history', '1', ...WEB],
      ['mq', 'queue', 'get', ...WEB],
      ['mq', 'queue', 'list'],
      ['flaky', 'list-failing', ...TESTS],
      ['flaky', 'list-unhealthy', ...TESTS],
      ['flaky', 'list-quarantined', ...TESTS],
      ['flaky', 'show', testId, ...TESTS],
    ];
    for (const args of commands) {
      const json = await ok([...args, '--json']);
      const format = await ok([...args, '--format', 'json']);
      expect(format.stdout, args.join(' ')).toBe(json.stdout);
      // The document, not a bare array of table rows.
      expect(Array.isArray(JSON.parse(json.stdout)), args.join(' ')).toBe(false);
    }
  });
});

describe('--output', () => {
  it('takes the format from the extension when --format is not given', async () => {
    const doc = JSON.parse((await ok(['flaky', 'list-failing', ...TESTS, '--json'])).stdout);
    const names = doc.tests.map((t: { name: string }) => t.name).sort();
    const file = (ext: string) => join(env.HOME, `failing.${ext}`);

    for (const ext of ['csv', 'tsv', 'md', 'json', 'txt']) {
      const result = await ok(['flaky', 'list-failing', ...TESTS, '--output', file(ext)]);
      expect(result.stdout).toBe('');
      // An export that takes over half a second also says which page it is on (src/cli/flaky.ts): a
      // loaded machine prints such a line, which is not what this test is about.
      const notes = result.stderr
        .split('\n')
        .filter((line) => !/^failing tests \S+: page \d+ of \d+, \d+ rows$/.test(line));
      expect(notes.join('\n')).toBe(`wrote ${file(ext)}\n`);
    }
    // CSV: one record per test for any CSV reader, newline and quotes kept, the formula guarded.
    const csv = parse(readFileSync(file('csv'), 'utf8'), { columns: true }) as Array<Record<string, string>>;
    expect(csv.map((r) => r.Test).sort()).toEqual(
      names.map((n: string) => (n.startsWith('=') ? `'${n}` : n)).sort(),
    );
    expect(csv.map((r) => r.Test)).toContain('two\nlines, "quoted"');
    // TSV is for programs: no formula guard, tabs and newlines flattened.
    const tsv = readFileSync(file('tsv'), 'utf8').trimEnd().split('\n');
    expect(tsv[0]).toMatch(/^Test\tStatus\t/);
    expect(
      tsv
        .slice(1)
        .map((l) => l.split('\t')[0])
        .sort(),
    ).toEqual(['=HYPERLINK("http://x")', 'two lines, "quoted"']);
    expect(readFileSync(file('md'), 'utf8')).toMatch(/^\| Test \| Status \| Reason \|/);
    expect(JSON.parse(readFileSync(file('json'), 'utf8'))).toEqual(doc);
    // Any other extension: the table.
    expect(readFileSync(file('txt'), 'utf8')).toMatch(/^Test\s+Status\s+Reason/);

    // An explicit --format that agrees is fine; one that contradicts the extension is a usage error, and nothing is written.
    await ok(['flaky', 'list-failing', ...TESTS, '--format', 'csv', '--output', join(env.HOME, 'agree.CSV')]);
    const contradiction = await railyard(
      ['flaky', 'list-failing', ...TESTS, '--format', 'csv', '--output', join(env.HOME, 'x.json')],
      env,
    );
    expect(contradiction.code).toBe(2);
    expect(contradiction.stderr).toContain(
      `--format: csv contradicts --output ${join(env.HOME, 'x.json')} (a json file)`,
    );
    expect(existsSync(join(env.HOME, 'x.json'))).toBe(false);

    // flaky show writes its record in the format of the file too.
    await ok(['flaky', 'show', testId, ...TESTS, '--output', file('show.json')]);
    expect(JSON.parse(readFileSync(file('show.json'), 'utf8')).test.id).toBe(testId);
  });
});

describe('times', () => {
  it('take a duration back from now wherever they take an ISO date-time', async () => {
    const names = async (args: string[]) =>
      JSON.parse((await ok(['flaky', 'list-failing', ...TESTS, ...args, '--json'])).stdout).tests
        .length as number;
    expect(await names(['--start', '1h', '--end', '0s'])).toBe(2);
    expect(await names(['--start', '3h', '--end', '2h'])).toBe(0);
    expect(await names(['--since', new Date(Date.now() - 3_600_000).toISOString()])).toBe(2);
    const bad = await railyard(
      ['flaky', 'list-failing', ...TESTS, '--start', 'yesterday', '--end', '0s'],
      env,
    );
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(
      '--start: expected an ISO 8601 date-time or a duration back from now (24h, 7d), got "yesterday"',
    );
  });
});

describe('tables for people', () => {
  it('key/value tables are two compact columns: no borders, no header, no row for an empty value', async () => {
    for (const args of [
      ['mq', 'status', '1', ...WEB],
      ['mq', 'queue', 'get', ...WEB],
      ['flaky', 'show', testId, ...TESTS],
    ]) {
      const { stdout } = await ok(args);
      const record = stdout.split('\n\n')[0]!.trimEnd().split('\n');
      expect(record.length, args.join(' ')).toBeGreaterThan(3);
      const width = record[0]!.search(/ {2}\S/);
      for (const line of record) {
        // key, two or more spaces, a value; continuation lines of a list start at the value column.
        expect(line, args.join(' ')).toMatch(/^(\S+ {2,}\S.*|\s+\S.*)$/);
        expect(line.search(/(?<= {2})\S/), `${args.join(' ')}: ${line}`).toBe(width + 2);
      }
      expect(record.join('\n'), args.join(' ')).not.toMatch(/[│─┌]/);
    }
    const status = (await ok(['mq', 'status', '1', ...WEB])).stdout;
    expect(status).toMatch(/^state +pending$/m);
    expect(status).not.toMatch(/^testRunId/m); // not tested yet: no empty row
  });

  it('a state is spelled the same way by mq list, status, history and watch', async () => {
    const PAR = ['--repo', 'github.com/acme/parallel'];
    await ok(['mq', 'queue', 'create', ...PAR, '--mode', 'parallel']);
    await ok(['mq', 'submit', '7', ...PAR]); // no impacted targets: not ready
    const outputs = {
      list: (await ok(['mq', 'list', ...PAR])).stdout,
      status: (await ok(['mq', 'status', '7', ...PAR])).stdout,
      history: (await ok(['mq', 'history', '7', ...PAR])).stdout,
      watch: (await railyard(['mq', 'watch', '7', ...PAR, '--interval', '200ms', '--timeout', '1s'], env))
        .stdout,
    };
    for (const [command, text] of Object.entries(outputs)) {
      expect(text, command).toMatch(/(^|[\s│])not_ready\b/m);
      expect(text, command).not.toMatch(/NOT_READY|not ready|Not ready/);
    }
  });
});

describe('names with control characters', () => {
  // Control characters in text the server sends are escaped on a terminal (test/cli/terminal-escapes.test.ts,
  // with PR titles); a repository name can no longer carry them at all.
  it('are refused by the server, naming the field, and by the CLI before anything is sent', async () => {
    // An owner holding an ESC sequence (it would retitle the terminal and hide the rest), a name holding CR/LF.
    const repo = { host: 'github.com', owner: 'ev\x1b]0;pwned\x07il', name: 'we\r\nb' };
    const created = await fetch(`${server.url}/createQueue`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-token': 'out-token' },
      body: JSON.stringify({ repo, targetBranch: 'main' }),
    });
    expect(created.status).toBe(400);
    expect(await created.text()).toMatch(/^repo\.owner: /);
    const list = await ok(['mq', 'queue', 'list', '--json']);
    expect(
      JSON.parse(list.stdout).queues.map((q: { repo: { owner: string } }) => q.repo.owner),
    ).not.toContain(repo.owner);
    const missing = await railyard(['mq', 'status', '1', '--repo', 'github.com/ev\x1b[2Jil/web'], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--repo');
    expect(missing.stderr).not.toContain('\x1b');
  });
});
