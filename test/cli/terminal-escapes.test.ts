/**
 * Text from a server that would drive a terminal (an SGR colour, OSC 0 retitling the window, a
 * screen clear, OSC 52 writing the clipboard, an OSC 8 hyperlink, C1 CSI, BEL, DEL) shows escaped
 * on a real terminal (a pseudo-terminal made by `script`) in every format the CLI prints, and
 * reaches a pipe byte for byte in CSV, TSV and JSON. The title comes from a real server over a
 * real git repository (a PR's title is its head commit's subject); the metrics and the error
 * answer come from a plain node:http peer standing for a hostile server.
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRepo, type FixtureRepo } from '../forge/fixture.js';
import { BIN, isolatedEnv, railyard } from '../support/cli.js';
import { startTestServer, type TestServer } from '../support/server.js';

const TITLE =
  'Fix \x1b[31mred\x1b[0m \x1b]0;PWNED\x07 \x1b[2J clip \x1b]52;c;cHduZWQ=\x07 ' +
  '\x1b]8;;https://evil.example/\x1b\\link\x1b]8;;\x1b\\ c1 \u009b2J del \x7f end';
const REPO = { host: 'github.com', owner: 'acme', name: 'esc' };
const ARGS = ['--repo', 'github.com/acme/esc'];

/** Any control character a terminal would act on (a pty turns \n into \r\n, so both pass). */
// eslint-disable-next-line no-control-regex
const RAW_CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]/;

let server: TestServer;
let repo: FixtureRepo;
let hostile: Server;
let hostileUrl = '';
let env: Record<string, string>;

/**
 * The built CLI on a pseudo-terminal of 250 columns (`script`, util-linux): what the terminal
 * received (stdout and stderr both) and the exit code.
 */
function onTerminal(
  args: string[],
  extra: Record<string, string> = {},
): Promise<{ code: number; output: string }> {
  const quoted = [process.execPath, BIN, ...args].map((a) => `'${a.replaceAll("'", `'\\''`)}'`).join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qefc', `stty cols 250 rows 50; exec ${quoted}`, '/dev/null'], {
      env: { ...env, ...extra },
      cwd: env.HOME,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => out.push(d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, output: Buffer.concat(out).toString('utf8') }));
    child.stdin.end();
  });
}

beforeAll(async () => {
  repo = await createRepo({ location: REPO, checks: { test: 'true' }, files: { 'README.md': 'esc\n' } });
  repo.openPr(1, { 'a.txt': 'a\n' }, { title: TITLE, author: 'Mallory' });
  server = await startTestServer({ gitRoot: repo.root, tokens: { 'esc-token': 'acme' } });
  env = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: 'esc-token' });
  for (const args of [
    ['mq', 'queue', 'create'],
    ['mq', 'queue', 'pause'],
    ['mq', 'submit', '1'],
  ]) {
    const result = await railyard([...args, ...ARGS], env);
    expect(result.code, result.stderr).toBe(0);
  }
  // A hostile server: metrics whose label values and comments hold the same sequences, an error answer that echoes them.
  hostile = createServer((req, res) => {
    req.resume();
    if (req.url?.includes('getMergeQueueMetrics')) {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`# HELP mq_depth_current ${TITLE}\nmq_depth_current{repo="acme/\x1b]0;PWNED\x07web"} 1\n`);
    } else res.writeHead(400, { 'content-type': 'text/plain' }).end(`repo: no such queue "${TITLE}"`);
  });
  await new Promise<void>((done) => hostile.listen(0, '127.0.0.1', done));
  hostileUrl = `http://127.0.0.1:${(hostile.address() as AddressInfo).port}/v1`;
}, 60_000);

afterAll(async () => {
  await server?.close();
  hostile?.closeAllConnections();
  await new Promise((done) => hostile?.close(done));
  repo?.cleanup();
});

describe('on a terminal', () => {
  it('the server accepts the title and keeps it exactly', async () => {
    const json = await railyard(['mq', 'status', '1', ...ARGS, '--json'], env);
    expect(JSON.parse(json.stdout).prTitle).toBe(TITLE);
  });

  it.each([['table'], ['csv'], ['tsv'], ['markdown']])(
    'mq list --format %s shows every control character escaped',
    async (format) => {
      const { code, output } = await onTerminal(['mq', 'list', ...ARGS, '--format', format]);
      expect(code, output).toBe(0);
      expect(output).not.toMatch(RAW_CONTROL);
      // Markdown doubles the backslashes of the escapes (so that they render as written).
      const bs = format === 'markdown' ? '\\\\' : '\\';
      expect(output).toContain(
        `Fix ${bs}e[31mred${bs}e[0m ${bs}e]0;PWNED${bs}x07 ${bs}e[2J clip ${bs}e]52;c;cHduZWQ=${bs}x07`,
      );
      expect(output).toContain(`${bs}e]8;;https://evil.example/${bs}e${bs}link`);
      expect(output).toContain(`c1 ${bs}x9b2J del ${bs}x7f end`);
    },
  );

  it('mq status, --json and the watch board show it escaped; in colour only the CLI\u2019s own colours reach the terminal', async () => {
    const status = await onTerminal(['mq', 'status', '1', ...ARGS]);
    expect(status.code, status.output).toBe(0);
    expect(status.output).not.toMatch(RAW_CONTROL);
    expect(status.output).toContain('#1 Fix \\e[31mred\\e[0m \\e]0;PWNED\\x07 \\e[2J');

    const coloured = await onTerminal(['mq', 'status', '1', ...ARGS], { NO_COLOR: '', FORCE_COLOR: '1' });
    expect(coloured.output).toContain('\x1b[36m');
    // eslint-disable-next-line no-control-regex
    expect(coloured.output.replace(/\x1b\[(1|22|36|39)m/g, '')).not.toMatch(RAW_CONTROL);

    // JSON on a terminal: C1 and DEL as \u escapes, which JSON reads as the same string.
    for (const flag of [['--json'], ['--format', 'json']]) {
      const json = await onTerminal(['mq', 'list', ...ARGS, ...flag]);
      expect(json.output, flag.join(' ')).not.toMatch(RAW_CONTROL);
      expect(JSON.parse(json.output).pullRequests[0].prTitle, flag.join(' ')).toBe(TITLE);
    }

    const watch = await onTerminal(['mq', 'watch', ...ARGS, '--interval', '200ms', '--timeout', '1s']);
    // The board redraws itself with cursor-up and clear-below: those and nothing else.
    // eslint-disable-next-line no-control-regex
    expect(watch.output.replace(/\x1b\[\d+A\x1b\[J/g, '')).not.toMatch(RAW_CONTROL);
    expect(watch.output).toContain('Fix \\e[31mred\\e[0m \\e]0;PWNED\\x07');
  }, 30_000);

  it('mq metrics and an error that quotes the server show it escaped', async () => {
    const hostileEnv = { RAILYARD_API_URL: hostileUrl };
    const metrics = await onTerminal(['mq', 'metrics'], hostileEnv);
    expect(metrics.code, metrics.output).toBe(0);
    expect(metrics.output).not.toMatch(RAW_CONTROL);
    expect(metrics.output).toContain('mq_depth_current{repo="acme/\\e]0;PWNED\\x07web"} 1\r\n');
    expect(metrics.output).toContain('# HELP mq_depth_current Fix \\e[31mred');

    const error = await onTerminal(['mq', 'status', '1', ...ARGS], hostileEnv);
    expect(error.code).toBe(1);
    expect(error.output).not.toMatch(RAW_CONTROL);
    expect(error.output).toContain(
      'Error: getSubmittedPullRequest: refused: repo: no such queue "Fix \\e[31mred',
    );
  });
});

describe('piped', () => {
  it('CSV, TSV, JSON and metrics carry the bytes the server sent', async () => {
    const csv = await railyard(['mq', 'list', ...ARGS, '--format', 'csv'], env);
    expect(csv.stdout.split('\r\n')[1]).toContain(`,${TITLE},Mallory,`);
    const tsv = await railyard(['mq', 'list', ...ARGS, '--format', 'tsv'], env);
    expect(tsv.stdout.split('\n')[1]!.split('\t')).toContain(TITLE);
    const json = await railyard(['mq', 'list', ...ARGS, '--json'], env);
    expect(JSON.parse(json.stdout).pullRequests[0].prTitle).toBe(TITLE);
    const metrics = await railyard(['mq', 'metrics'], { ...env, RAILYARD_API_URL: hostileUrl });
    expect(metrics.stdout).toBe(
      `# HELP mq_depth_current ${TITLE}\nmq_depth_current{repo="acme/\x1b]0;PWNED\x07web"} 1\n`,
    );
  });
});
