/**
 * What a person sees on a terminal of 100 columns (a pseudo-terminal made by `script`), through
 * the built CLI against a real server: every table fits, cutting reasons and messages first and
 * leaving out columns before a name, a number or an id is cut; key/value views show local times
 * with a relative one; webhook deliveries read plainly; hints fit the state; destructive commands
 * ask. The server is the sandbox forge (PR 3 fails), with outgoing webhooks to a plain-HTTP peer.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, isolatedEnv, railyard } from '../support/cli.js';
import { startTestServer, type TestServer } from '../support/server.js';

const REPO = 'github.com/acme-corporation/web-storefront-monorepo';
const ARGS = ['--repo', REPO];
const FEATURE = ['--repo', 'github.com/acme-corporation/feature-only'];
const COLUMNS = 100;

let server: TestServer;
let receiver: Server;
let env: Record<string, string>;
let testRunId = '';
let testId = '';
let endpoint = '';

async function ok(args: string[]) {
  const result = await railyard(args, env);
  expect(result.code, `${args.join(' ')} → ${result.stderr}`).toBe(0);
  return result;
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * The built CLI on a pseudo-terminal of 100 columns: what the terminal received (stdout and
 * stderr), its lines without the pty's \r. `answer` is typed once `prompt` shows.
 */
function onTerminal(
  args: string[],
  answer?: { prompt: string; text: string },
): Promise<{ code: number; lines: string[]; output: string }> {
  const quoted = [process.execPath, BIN, ...args].map((a) => `'${a.replaceAll("'", `'\\''`)}'`).join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qefc', `stty cols ${COLUMNS} rows 50; exec ${quoted}`, '/dev/null'], {
      env: { ...env, COLUMNS: String(COLUMNS) },
      cwd: env.HOME,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let output = '';
    let answered = false;
    const take = (d: Buffer) => {
      output += d.toString('utf8');
      if (answer && !answered && output.includes(answer.prompt)) {
        answered = true;
        child.stdin.write(answer.text);
      }
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('error', reject);
    child.on('close', (code) => {
      const clean = output.replaceAll('\r', '').replace(/\x1b\[K/g, ''); // eslint-disable-line no-control-regex
      resolve({ code: code ?? -1, output: clean, lines: clean.split('\n').filter(Boolean) });
    });
    if (!answer) child.stdin.end();
  });
}

/** Characters on screen (the ellipsis is one). */
const width = (line: string) => [...line].length;

beforeAll(async () => {
  server = await startTestServer({
    tokens: { 'narrow-token': 'acme' },
    sandbox: { testSeconds: 0.2, failPrs: new Set([3]), failureRate: 0, seed: 1 },
    // One attempt, then the next in an hour: a delivery stays pending with its next attempt ahead.
    webhooks: {
      allowPrivate: true,
      allowHttp: true,
      retrySchedule: [3_600_000],
      timeoutMs: 2000,
      pollMs: 50,
    },
  });
  env = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: 'narrow-token', RAILYARD_ORG: 'acme' });
  await ok(['mq', 'queue', 'create', ...ARGS]);
  for (const n of ['1', '2', '3']) await ok(['mq', 'submit', n, ...ARGS]);
  const state = async (n: string) =>
    JSON.parse((await ok(['mq', 'status', n, ...ARGS, '--json'])).stdout) as {
      state: string;
      testRunId?: string;
    };
  await until('PR 3 to fail', async () => (await state('3')).state === 'failed');
  testRunId = (await state('3')).testRunId!;
  // Paused: PR 4 stays in the queue until it is cancelled.
  await ok(['mq', 'queue', 'pause', ...ARGS]);
  await ok(['mq', 'submit', '4', ...ARGS]);
  await ok(['mq', 'cancel', '4', ...ARGS]);
  expect((await state('4')).state).toBe('cancelled');

  // Failed tests with long failure messages: on main, where one run decides (so they are broken, since a time), and on a feature branch only.
  await ok(['flaky', 'settings', ...ARGS, '--min-sample', '1']);
  const report = join(env.HOME, 'report.xml');
  writeFileSync(
    report,
    '<?xml version="1.0"?>\n<testsuite name="s">' +
      '<testcase classname="cart" name="cart &gt; applies discount codes" file="test/cart/discounts.test.ts"><failure message="AssertionError: expected 1999 to equal 1899 (the discount was applied twice because the promotion cache was stale)">x</failure></testcase>' +
      '<testcase classname="checkout" name="checkout &gt; pays with a saved card" file="test/checkout/pay.test.ts"><failure message="TimeoutError: waited 5000 ms for the payment provider to answer the authorisation request from the sandbox">x</failure></testcase>' +
      '</testsuite>\n',
  );
  await ok([
    'flaky',
    'upload',
    ...ARGS,
    '--branch',
    'main',
    '--sha',
    'abc1234',
    '--started-at',
    '10m',
    report,
  ]);
  await ok([
    'flaky',
    'upload',
    ...FEATURE,
    '--branch',
    'feature/pay',
    '--sha',
    'abc1235',
    '--started-at',
    '10m',
    report,
  ]);
  const failing = JSON.parse((await ok(['flaky', 'list-failing', ...ARGS, '--json'])).stdout) as {
    tests: { id: string; name: string }[];
  };
  testId = failing.tests.find((t) => t.name.startsWith('cart'))!.id;
  await ok(['flaky', 'quarantine', testId, ...ARGS, '--always']);

  // A receiver that speaks plain HTTP, given to the server as https://: the TLS handshake fails.
  receiver = createServer((req, res) => req.resume().on('end', () => res.end('ok')));
  await new Promise<void>((done) => receiver.listen(0, '127.0.0.1', done));
  const port = (receiver.address() as AddressInfo).port;
  const created = JSON.parse(
    (
      await ok([
        'webhook',
        'create',
        '--url',
        `https://127.0.0.1:${port}/hook`,
        '--description',
        'Release channel of the storefront team',
        '--json',
      ])
    ).stdout,
  ) as { id: string };
  endpoint = created.id;
  await ok(['webhook', 'test', endpoint]);
  await until('the first attempt to fail', async () => {
    const { deliveries } = JSON.parse((await ok(['webhook', 'deliveries', endpoint, '--json'])).stdout) as {
      deliveries: { attempts: number }[];
    };
    return deliveries[0]?.attempts === 1;
  });
}, 120_000);

afterAll(async () => {
  await server?.close();
  await new Promise((done) => receiver?.close(done));
});

describe('tables on a terminal of 100 columns', () => {
  it('fit, every one of them', async () => {
    const commands = [
      ['flaky', 'list-failing', ...ARGS],
      ['flaky', 'list-quarantined', ...ARGS],
      ['webhook', 'deliveries', endpoint],
      ['webhook', 'list'],
      ['mq', 'queue', 'list'],
      ['mq', 'list', ...ARGS],
      ['mq', 'history', '3', ...ARGS],
      ['mq', 'logs', '3', ...ARGS],
      ['flaky', 'show', testId, ...ARGS],
    ];
    for (const args of commands) {
      const { code, lines } = await onTerminal(args);
      expect(code, args.join(' ')).toBe(0);
      // A URL has no place to be cut and stays whole to be copied: a key/value line holding only one may be longer.
      const tooWide = lines.filter((line) => width(line) > COLUMNS && !/^\w+ +https?:\/\/\S+$/.test(line));
      expect(tooWide, args.join(' ')).toEqual([]);
    }
  });

  it('never cut names, numbers or ids: reasons and messages are cut first, then columns left out', async () => {
    const history = await onTerminal(['mq', 'history', '3', ...ARGS]);
    // The test run id whole, to copy into `mq testing-details`.
    expect(history.lines.filter((line) => line.includes(testRunId))).toHaveLength(3);
    const queues = await onTerminal(['mq', 'queue', 'list']);
    expect(queues.lines[1]).toMatch(new RegExp(`^${REPO} +main +paused`));
    expect(queues.output).toContain('left out to fit; --wide shows every column)');
    const failing = await onTerminal(['flaky', 'list-failing', ...ARGS]);
    expect(failing.lines[0]).toMatch(/^Test +Status .*Id$/);
    for (const name of ['cart > applies discount codes', 'checkout > pays with a saved card'])
      expect(
        failing.lines.find((line) => line.startsWith(name)),
        name,
      ).toMatch(/ [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    // --wide: every column, nothing cut.
    const wide = await onTerminal(['flaky', 'list-failing', ...ARGS, '--wide']);
    expect(wide.output).toContain(
      'AssertionError: expected <n> to equal <n> (the discount was applied twice because the promotion cache was stale)',
    );
    expect(wide.output).not.toContain('left out');
  });
});

describe('times in key/value views', () => {
  const LOCAL = /\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \((?:\d+ (?:second|minute|hour)s? ago)\)/;
  it('are local with a relative one in mq testing-details and flaky show, never raw ISO strings', async () => {
    const details = await onTerminal(['mq', 'testing-details', testRunId, ...ARGS]);
    expect(details.lines.find((line) => line.startsWith('createdAt'))).toMatch(LOCAL);
    const show = await onTerminal(['flaky', 'show', testId, ...ARGS]);
    expect(show.lines.find((line) => line.startsWith('status'))).toMatch(LOCAL);
    for (const output of [details.output, show.output]) expect(output).not.toMatch(/\d{4}-\d\d-\d\dT\d\d:/);
  });
});

describe('webhooks', () => {
  it('a delivery to a plain-HTTP receiver over https:// reads plainly, its next attempt local and ahead', async () => {
    const { lines, output } = await onTerminal(['webhook', 'deliveries', endpoint, '--wide']);
    expect(lines[1]).toMatch(
      / pending \(next \d\d:\d\d:\d\d, in (?:1 hour|\d+ minutes)\) +1 +TLS failed: the receiver answered in plain HTTP \(give an http:\/\/ URL, or serve HTTPS\) /,
    );
    expect(output).not.toMatch(/SSL routines|\\n|\d{4}-\d\d-\d\dT/);
  });

  it('webhook list shows the description', async () => {
    const { lines } = await onTerminal(['webhook', 'list', '--wide']);
    expect(lines[0]).toMatch(/ Description$/);
    expect(lines[1]).toMatch(/ Release channel of the storefront team$/);
  });

  it('webhook delete asks on a terminal, and needs --yes without one', async () => {
    const piped = await railyard(['webhook', 'delete', endpoint], env);
    expect(piped.code).toBe(2);
    expect(piped.stderr).toBe(
      `Error: --yes: required to delete webhook endpoint ${endpoint} without a terminal to ask on\n`,
    );
    const declined = await onTerminal(['webhook', 'delete', endpoint], { prompt: '[y/N]', text: 'n\n' });
    expect(declined.code).toBe(1);
    expect(declined.output).toContain(
      `This deletes webhook endpoint ${endpoint} "Release channel of the storefront team"`,
    );
    expect(declined.output).toContain('Nothing deleted.');
    expect((await ok(['webhook', 'list'])).stdout).toContain(endpoint);
    expect((await ok(['webhook', 'delete', endpoint, '--yes'])).stdout).toBe(
      `Deleted webhook endpoint ${endpoint}\n`,
    );
  });
});

describe('hints and outcomes', () => {
  it("a cancelled PR's status suggests submitting it again, not reading what failed", async () => {
    const { lines } = await onTerminal(['mq', 'status', '4', ...ARGS]);
    const next = lines.slice(lines.findIndex((line) => line.startsWith('next'))).join(' ');
    expect(next).toMatch(
      /^next +railyard mq submit 4 --repo github.com\/acme-corporation\/web-storefront-monorepo +\(submit it again\)$/,
    );
    expect(next).not.toContain('mq logs');
  });

  it('mq status --wait prints the outcome once', async () => {
    const result = await railyard(['mq', 'status', '3', ...ARGS, '--wait', '--interval', '1s'], env);
    expect(result.code).toBe(1);
    expect(result.stderr.match(/#3:? failed/g)).toEqual(['#3 failed']);
  });

  it('mq queue delete of a queue that does not exist says so before asking for --yes', async () => {
    const result = await railyard(['mq', 'queue', 'delete', '--branch', 'dev', ...ARGS], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('no merge queue for branch "dev"');
    expect(result.stderr).not.toContain('--yes');
  });

  it('a test that failed its only run on a feature branch does not read "No problems detected"', async () => {
    const table = await ok(['flaky', 'list-failing', ...FEATURE, '--wide']);
    const lines = table.stdout.split('\n').filter((line) => line.startsWith('checkout'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain('No problems detected');
    expect(lines[0]).toContain('no runs on stable branches in the last 72 h');
  });
});
