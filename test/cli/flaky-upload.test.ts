import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJUnit } from '../../src/flaky/junit.js';
import { countResults, foldResults } from '../../src/flaky/results.js';
import { isolatedEnv, railyard, unwrapOclif } from '../support/cli.js';
import { startTestServer, type TestServer } from '../support/server.js';

const FIXTURES = resolve(import.meta.dirname, '../fixtures/junit');
const ORG = 'acme';

let server: TestServer;
let env: Record<string, string>;
let work: string;
let writer: string;

/**
 * A stand-in test command: `node writer.mjs OUT EXIT [name:pass|fail|flaky|skip ...]` writes a
 * JUnit report to OUT (unless OUT is "-") and exits with EXIT.
 */
const WRITER = `
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
const [out, exit, ...tests] = process.argv.slice(2);
const tc = (name, body = '') => '<testcase classname="app" name="' + name + '" file="src/app.js">' + body + '</testcase>';
const fail = '<failure message="boom">AssertionError: boom</failure>';
const cases = tests.map((t) => {
  const [name, outcome] = t.split(':');
  if (outcome === 'fail') return tc(name, fail);
  if (outcome === 'skip') return tc(name, '<skipped/>');
  if (outcome === 'flaky') return tc(name, fail) + tc(name);
  return tc(name);
});
if (out !== '-') {
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, '<?xml version="1.0"?>\\n<testsuite name="app">' + cases.join('') + '</testsuite>\\n');
}
console.log('test command ran');
process.exit(Number(exit));
`;

beforeAll(async () => {
  server = await startTestServer({ tokens: { 'up-token': ORG } });
  env = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: 'up-token', RAILYARD_ORG: ORG });
  work = env.HOME;
  writer = join(work, 'writer.mjs');
  writeFileSync(writer, WRITER);
});
afterAll(async () => {
  await server?.close();
});

const key = (repo: string) => ['--repo', `github.com/acme/${repo}`, '--branch', 'main', '--sha', 'abc1234'];

async function json(args: string[], extraEnv: Record<string, string> = {}, cwd?: string) {
  const result = await railyard([...args, '--json'], { ...env, ...extraEnv }, undefined, cwd);
  expect(result.code, `${args.join(' ')} → ${result.stderr}`).toBe(0);
  return JSON.parse(result.stdout);
}

async function failingTests(repo: string): Promise<Array<{ name: string; codeowners: string[] }>> {
  return (await json(['flaky', 'list-failing', '--repo', `github.com/acme/${repo}`, '--since', '1h'])).tests;
}

/** A report of `count` tests, each with a `bytesEach`-byte system-out: big files without many rows. */
function bigReport(count: number, bytesEach: number, prefix: string): string {
  const body = 'x'.repeat(bytesEach);
  let xml = '<testsuite name="big">';
  for (let i = 0; i < count; i++) xml += `<testcase classname="big" name="${prefix}${i}"><failure message="m">f</failure><system-out>${body}</system-out></testcase>`;
  return xml + '</testsuite>';
}

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  return new Promise((resolvePort) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolvePort(port));
    });
  });
}

describe('railyard flaky upload', () => {
  it('uploads the fixture reports; the counts are those of the local parse', async () => {
    const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.xml'));
    const cases = files.flatMap((f) => parseJUnit(readFileSync(join(FIXTURES, f), 'utf8'), f).cases);
    const expected = countResults(foldResults(ORG, { host: 'github.com', owner: 'acme', name: 'fixtures' }, '', cases));
    expect(expected.tests).toBeGreaterThan(20);

    const summary = await json(['flaky', 'upload', ...key('fixtures'), '--junit', `${FIXTURES}/*.xml`]);
    expect(summary).toMatchObject({ ...expected, files: files.length, new_tests: expected.tests, requests: 1 });
    expect(summary.upload_ids).toHaveLength(1);

    // Positional globs, a second time: nothing new; the table shows the counts.
    const table = await railyard(['flaky', 'upload', ...key('fixtures'), `${FIXTURES}/pytest-*.xml`, `${FIXTURES}/jest-junit.xml`], env);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/^files\s+4$/m);
    expect(table.stdout).toMatch(/^new tests\s+0$/m);
  });

  it('no matching file is a usage error (exit 2) naming the glob', async () => {
    const result = await railyard(['flaky', 'upload', ...key('none'), '--junit', 'reports/**/*.xml'], env);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--junit: no file matches "reports\/\*\*\/\*\.xml"/);
    const noneGiven = await railyard(['flaky', 'upload', ...key('none')], env);
    expect(noneGiven.code).toBe(2);
  });

  it('an --attempt the server cannot store is a usage error (exit 2) before anything is sent', async () => {
    const result = await railyard(['flaky', 'upload', ...key('attempt'), '--attempt', '2147483648', `${FIXTURES}/jest-junit.xml`], env);
    expect(result.code).toBe(2);
    expect(unwrapOclif(result.stderr)).toMatch(/--attempt.*2147483647/);
  });

  it('a malformed report: the server says which file and line (exit 1) and stores nothing of the upload', async () => {
    const dir = join(work, 'malformed');
    mkdirSync(dir, { recursive: true });
    execFileSync(process.execPath, [writer, join(dir, 'good.xml'), '0', 'broken:fail']);
    writeFileSync(join(dir, 'bad.xml'), '<testsuite name="s">\n<testcase name="a">\n<failure message="x">\n</testsuite>\n');
    const result = await railyard(['flaky', 'upload', ...key('malformed'), '--junit', 'malformed/*.xml'], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^Error: uploadTestResults: refused: .*malformed\/bad\.xml: line \d+/m);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(await failingTests('malformed')).toEqual([]);
  });

  it('reports over 20 MiB in all are split into several requests; one report over 20 MiB is refused, naming it, before anything is sent', async () => {
    const dir = join(work, 'big');
    mkdirSync(dir, { recursive: true });
    const mib = 1024 * 1024;
    writeFileSync(join(dir, 'a.xml'), bigReport(6, 2 * mib, 'a'));
    writeFileSync(join(dir, 'b.xml'), bigReport(6, 2 * mib, 'b'));
    const split = await railyard(['flaky', 'upload', ...key('big'), '--junit', 'big/*.xml', '--json'], env);
    expect(split.code, split.stderr).toBe(0);
    expect(JSON.parse(split.stdout)).toMatchObject({ requests: 2, files: 2, tests: 12, failed: 12 });
    expect(split.stderr).toMatch(/upload: request 2 of 2/);

    const huge = join(work, 'huge');
    mkdirSync(huge, { recursive: true });
    writeFileSync(join(huge, 'small.xml'), bigReport(1, 10, 'small'));
    writeFileSync(join(huge, 'huge.xml'), bigReport(1, 21 * mib, 'huge'));
    const refused = await railyard(['flaky', 'upload', ...key('huge'), '--junit', 'huge/*.xml'], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/huge\/huge\.xml: too large to upload \(21\.0 MiB as JSON; a request may carry at most 20\.0 MiB\): nothing was uploaded/);
    expect(await failingTests('huge')).toEqual([]);
  });

  it('in GitHub Actions the repository, branch, SHA and PR come from the workflow run; CODEOWNERS from the workspace', async () => {
    const dir = join(work, 'gha');
    mkdirSync(join(dir, '.github'), { recursive: true });
    writeFileSync(join(dir, '.github', 'CODEOWNERS'), 'src/ @acme/app-team\n');
    execFileSync(process.execPath, [writer, join(dir, 'reports', 'junit.xml'), '0', 'gha-test:fail']);
    const event = join(dir, 'event.json');
    writeFileSync(event, JSON.stringify({ pull_request: { number: 42, head: { sha: 'b'.repeat(40), ref: 'feature' } } }));
    const gha = {
      GITHUB_ACTIONS: 'true',
      GITHUB_REPOSITORY: 'acme/gha',
      GITHUB_SERVER_URL: 'https://github.com',
      GITHUB_HEAD_REF: 'feature',
      GITHUB_SHA: 'c'.repeat(40),
      GITHUB_EVENT_PATH: event,
      GITHUB_JOB: 'test',
      GITHUB_RUN_ATTEMPT: '2',
      GITHUB_WORKSPACE: dir,
    };
    const summary = await json(['flaky', 'upload', '--junit', 'reports/*.xml'], gha, dir);
    expect(summary).toMatchObject({ files: 1, tests: 1, failed: 1 });
    const failing = await failingTests('gha');
    expect(failing.map((t) => t.name)).toEqual(['gha-test']);
    expect(failing[0].codeowners).toEqual(['@acme/app-team']);
  });

  it('outside Actions, branch and SHA come from the git checkout', async () => {
    const dir = join(work, 'checkout');
    mkdirSync(dir, { recursive: true });
    const git = (...args: string[]) => execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args]);
    git('init', '-q', '-b', 'topic');
    git('remote', 'add', 'origin', 'https://github.com/acme/checkout.git');
    git('commit', '-q', '--allow-empty', '-m', 'c');
    execFileSync(process.execPath, [writer, join(dir, 'out', 'r.xml'), '0', 'git-test:fail']);
    const summary = await json(['flaky', 'upload', 'out/r.xml'], {}, dir);
    expect(summary).toMatchObject({ tests: 1, failed: 1 });
    expect((await failingTests('checkout')).map((t) => t.name)).toEqual(['git-test']);
    // Not a checkout and no --sha: a usage error naming the flag.
    const bare = await railyard(['flaky', 'upload', '--repo', 'acme/x', `${dir}/out/r.xml`], env);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(/--branch: required/);
  });
});

describe('railyard flaky settings and quarantine', () => {
  it('shows the defaults, changes some, and refuses bad values locally (exit 2)', async () => {
    const settings = await json(['flaky', 'settings', '--repo', 'acme/settings']);
    expect(settings).toMatchObject({ quarantining_enabled: false, failure_rate: { enabled: expect.any(Boolean) } });
    const changed = await json([
      'flaky', 'settings', '--repo', 'acme/settings', '--quarantining', 'on', '--auto-quarantine', 'off', '--recovery-days', '3',
      '--branches', 'main,release/*', '--flaky-activation', '30%', '--flaky-resolution', '0.1', '--ticket-url-template', 'https://t.example/{id}',
    ]);
    expect(changed).toMatchObject({
      quarantining_enabled: true,
      auto_quarantine_flaky: false,
      pass_on_retry: { recovery_days: 3 },
      failure_rate: { branches: ['main', 'release/*'], flaky_activation: 0.3, flaky_resolution: 0.1 },
      ticket_url_template: 'https://t.example/{id}',
    });
    const table = await railyard(['flaky', 'settings', '--repo', 'acme/settings'], env);
    expect(table.stdout).toMatch(/^quarantining +on$/m);
    expect(table.stdout).toMatch(/^flaky-activation +30%$/m);
    for (const bad of [
      ['--quarantining', 'yes'],
      ['--flaky-activation', '150%'],
      ['--recovery-days', '99'],
      ['--ticket-url-template', 'https://t.example/'],
      ['--ticket-url-template', 'javascript:alert(1)//{id}'],
      ['--branches', ','],
      ['--ticket-system', 'github'],
      ['--ticket-system', 'asana', '--ticket-project', 'X'],
      ['--ticket-system', 'jira', '--ticket-project', ' '],
    ]) {
      const result = await railyard(['flaky', 'settings', '--repo', 'acme/settings', ...bad], env);
      expect(result.code, bad.join(' ')).toBe(2);
    }
    const noProject = await railyard(['flaky', 'settings', '--repo', 'acme/settings', '--ticket-system', 'jira'], env);
    expect(noProject.stderr).toMatch(/--ticket-system jira: give --ticket-project too \(the project key, e\.g\. WEB\)/);
    // This server has no ticket token: the server's answer says how to give it one.
    const noToken = await railyard(['flaky', 'settings', '--repo', 'acme/settings', '--ticket-system', 'github', '--ticket-project', 'acme/settings'], env);
    expect(noToken.code).not.toBe(0);
    expect(noToken.stderr).toMatch(/--ticket-token-file FILE or RAILYARD_TICKET_TOKEN/);
  });

  it('quarantine takes exactly one of --always, --never, --auto and a UUID', async () => {
    const id = '00000000-0000-4000-8000-000000000000';
    expect((await railyard(['flaky', 'quarantine', id, '--repo', 'acme/q'], env)).code).toBe(2);
    expect((await railyard(['flaky', 'quarantine', id, '--repo', 'acme/q', '--always', '--never'], env)).code).toBe(2);
    const notUuid = await railyard(['flaky', 'quarantine', 'abc', '--repo', 'acme/q', '--always'], env);
    expect(notUuid.code).toBe(2);
    expect(notUuid.stderr).toMatch(/expected a test id \(UUID\)/);
  });
});

describe('flaky exports for cron jobs', () => {
  it('list-failing / list-unhealthy / show / link-ticket over uploaded results: CSV to a file equals the API, Markdown to stdout', async () => {
    const repo = ['--repo', 'github.com/acme/exports'];
    // Three failing tests, one of them flaky (failed then passed on retry), and one that passes.
    const report = join(work, 'exports', 'r.xml');
    execFileSync(process.execPath, [writer, report, '0', 'alpha:fail', 'beta:flaky', 'gamma:fail', 'delta:pass']);
    await json(['flaky', 'upload', ...key('exports'), '--junit', report]);

    const api: Array<{ id: string; name: string; failure_rate_last_7d: number }> = (await json(['flaky', 'list-failing', ...repo, '--since', '1h'])).tests;
    expect(api.map((t) => t.name).sort()).toEqual(['alpha', 'beta', 'gamma']);

    const out = join(work, 'failing.csv');
    const exported = await railyard(['flaky', 'list-failing', ...repo, '--since', '1h', '--format', 'csv', '--output', out], env);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout).toBe('');
    expect(exported.stderr).toMatch(`wrote ${out}`);
    const rows = parse(readFileSync(out, 'utf8'), { columns: true }) as Array<Record<string, string>>;
    expect(rows.map((r) => [r.Test, r.Id, r['Fail 7d']]).sort()).toEqual(
      api.map((t) => [t.name, t.id, String(t.failure_rate_last_7d)]).sort(), // the rate, not `12.0%`
    );
    expect(rows.find((r) => r.Test === 'alpha')).toMatchObject({ File: 'src/app.js', 'Top failure': 'boom', Quarantined: 'false' });
    // One failed run is no verdict yet; a failure then a pass on the same commit is a pass on retry.
    expect(rows.find((r) => r.Test === 'alpha')).toMatchObject({ Status: 'not enough runs yet (1 of 10)', 'Passed on retry': '0' });
    expect(rows.find((r) => r.Test === 'beta')).toMatchObject({ Status: 'flaky: passed on retry', 'Passed on retry': '1' });

    const flaky = await railyard(['flaky', 'list-unhealthy', ...repo, '--status', 'flaky', '--format', 'markdown'], env);
    expect(flaky.code, flaky.stderr).toBe(0);
    const lines = flaky.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^\| Test \| Status \| Reason \|/);
    expect(lines.slice(2)).toHaveLength(1);
    expect(lines[2]).toMatch(/^\| beta \| flaky: passed on retry \| Inconsistent results on the same commit abc1234 on main \|/);

    const beta = api.find((t) => t.name === 'beta')!;
    await json(['flaky', 'link-ticket', beta.id, 'KAN-7', ...repo]); // exits 0
    const shown = await json(['flaky', 'show', beta.id, ...repo]);
    expect(shown.test).toMatchObject({ id: beta.id, name: 'beta', ticket: { html_url: 'https://github.com/acme/exports/issues/KAN-7' } });
    expect(shown.test.most_common_failures).toEqual([expect.objectContaining({ summary: 'boom', occurrence_count: 1 })]);
    // The ticket link is in the exports too.
    const unhealthy = await railyard(['flaky', 'list-unhealthy', ...repo, '--status', 'flaky', '--format', 'csv'], env);
    const exportedRows = parse(unhealthy.stdout, { columns: true }) as Array<Record<string, string>>;
    expect(exportedRows.find((r) => r.Test === 'beta')).toMatchObject({ Ticket: 'https://github.com/acme/exports/issues/KAN-7' });
  });
});

describe('railyard flaky run', () => {
  const run = (repo: string, junit: string, command: string[], extra: string[] = [], extraEnv: Record<string, string> = {}) =>
    railyard(['flaky', 'run', ...key(repo), '--junit', junit, ...extra, '--', ...command], { ...env, ...extraEnv });

  it('a passing command exits 0 and its results are uploaded', async () => {
    const result = await run('run-pass', 'pass/*.xml', [process.execPath, writer, 'pass/r.xml', '0', 'one:pass', 'two:skip']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/test command ran/);
    expect(result.stderr).toMatch(/uploaded 1 report\(s\).*2 test\(s\), 0 failed/);
  });

  it("a failing test that is not quarantined keeps the command's exit code; once it is quarantined the job passes", async () => {
    const command = [process.execPath, writer, 'q/r.xml', '3', 'stable:pass', 'wobbly:fail'];
    const first = await railyard(['flaky', 'run', ...key('run-q'), '--junit', 'q/*.xml', '--json', '--', ...command], env);
    expect(first.code, first.stderr).toBe(3);
    const outcome = JSON.parse(first.stdout.slice(first.stdout.indexOf('{')));
    expect(outcome).toMatchObject({ command_exit_code: 3, exit_code: 3, quarantine_check: 'ok', quarantined_test_ids: [] });
    expect(outcome.failed_tests.map((t: { name: string }) => t.name)).toEqual(['wobbly']);
    const id = outcome.failed_tests[0].id as string;

    // An override alone does nothing while quarantining is off for the repository.
    await json(['flaky', 'quarantine', id, '--always', '--repo', 'github.com/acme/run-q']);
    const stillOff = await run('run-q', 'q/*.xml', command);
    expect(stillOff.code).toBe(3);
    expect(stillOff.stdout).toMatch(/Quarantining is off/);

    await json(['flaky', 'settings', '--repo', 'github.com/acme/run-q', '--quarantining', 'on']);
    const rescued = await run('run-q', 'q/*.xml', command);
    expect(rescued.code, rescued.stderr).toBe(0);
    expect(rescued.stdout).toMatch(/Quarantined failures \(1\):\n {2}src\/app\.js › wobbly/);
    expect(rescued.stdout).toMatch(/exit 0 instead of 3/);
    expect((await json(['flaky', 'list-quarantined', '--repo', 'github.com/acme/run-q'])).quarantined_tests).toHaveLength(1);

    // A second, unquarantined failure keeps the code.
    const another = await run('run-q', 'q/*.xml', [process.execPath, writer, 'q/r.xml', '3', 'wobbly:fail', 'new:fail']);
    expect(another.code).toBe(3);
    expect(another.stdout).toMatch(/Failures not quarantined \(1\):\n {2}src\/app\.js › new/);
  });

  it('a failing command whose reports hold no failed test keeps its code (a build error is not masked; pass-on-retry is not a failure)', async () => {
    const result = await run('run-build', 'b/*.xml', [process.execPath, writer, 'b/r.xml', '7', 'ok:pass', 'retried:flaky']);
    expect(result.code).toBe(7);
    expect(result.stderr).toMatch(/failed \(exit 7\) and its reports hold no failed test/);
    // A report from before the command started is not this run's: nothing uploaded, code kept.
    mkdirSync(join(work, 'stale'), { recursive: true });
    const stale = join(work, 'stale', 'r.xml');
    execFileSync(process.execPath, [writer, stale, '0', 'old:fail']);
    utimesSync(stale, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    const none = await run('run-build', 'stale/*.xml', [process.execPath, writer, '-', '4']);
    expect(none.code).toBe(4);
    expect(none.stderr).toMatch(/wrote no JUnit report matching "stale\/\*\.xml": nothing uploaded/);
  });

  it("an unreachable server quarantines nothing: the command's code, with a warning", async () => {
    const port = await closedPort();
    const result = await run('run-down', 'd/*.xml', [process.execPath, writer, 'd/r.xml', '5', 'x:fail'], ['--api-url', `http://127.0.0.1:${port}/v1`]);
    expect(result.code).toBe(5);
    expect(result.stderr).toMatch(/upload failed, quarantining nothing: .*cannot reach/);
  });

  it('a command that cannot be started exits 127; no command is a usage error', async () => {
    const missing = await run('run-missing', 'm/*.xml', ['railyard-no-such-command', '--flag']);
    expect(missing.code).toBe(127);
    expect(missing.stderr).toMatch(/cannot start railyard-no-such-command: command not found/);
    const noCommand = await railyard(['flaky', 'run', ...key('run-missing'), '--junit', 'm/*.xml'], env);
    expect(noCommand.code).toBe(2);
    expect(noCommand.stderr).toMatch(/give the test command after --/);
  });
});
