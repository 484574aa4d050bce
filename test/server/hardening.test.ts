import Database from 'better-sqlite3';
import { statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { oneLine } from '../../src/server/errors.js';
import { SQLITE_FILE } from '../../src/store/index.js';
import { serversPerTest } from '../support/hooks.js';
import type { TestServer } from '../support/server.js';
import { tempDir } from '../support/tmp.js';
import { call, ok, Q, REPO } from './helpers.js';

const server = serversPerTest();

/** Control characters a terminal acts on (C0 but for none, DEL, C1). */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

interface RawExchange {
  /** Everything the server sent. */
  received: string;
  /** Whether the server closed the connection (before `waitMs`). */
  closed: boolean;
  /** How long after the first byte was sent it closed (ms). */
  closedAfterMs: number;
}

/**
 * A raw HTTP client: sends `head`, then the `drip` strings one every `everyMs`, and waits up to
 * `waitMs` for the server to close the connection.
 */
function rawExchange(
  s: TestServer,
  head: string,
  opts: { drip?: string[]; everyMs?: number; waitMs: number },
): Promise<RawExchange> {
  const { port } = new URL(s.url);
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(Number(port), '127.0.0.1');
    const started = Date.now();
    let received = '';
    let timer: NodeJS.Timeout | undefined;
    const drip = [...(opts.drip ?? [])];
    const finish = (closed: boolean) => {
      clearTimeout(timer);
      clearTimeout(deadline);
      socket.destroy();
      resolve({ received, closed, closedAfterMs: Date.now() - started });
    };
    const deadline = setTimeout(() => finish(false), opts.waitMs);
    socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
    socket.on('error', () => undefined); // a reset is a close too
    socket.on('close', () => finish(true));
    socket.on('connect', () => {
      socket.write(head);
      const next = () => {
        const piece = drip.shift();
        if (piece === undefined || socket.destroyed) return;
        socket.write(piece);
        timer = setTimeout(next, opts.everyMs ?? 100);
      };
      timer = setTimeout(next, opts.everyMs ?? 100);
    });
    socket.on('timeout', () => reject(new Error('socket timeout')));
  });
}

const statusOf = (raw: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? 0);
const headerOf = (raw: string, name: string) =>
  raw
    .split('\r\n\r\n')[0]
    .split('\r\n')
    .find((l) => l.toLowerCase().startsWith(`${name}:`))
    ?.slice(name.length + 1)
    .trim();
const bodyOf = (raw: string) => raw.split('\r\n\r\n').slice(1).join('\r\n\r\n');

describe('error messages cost what 500 characters cost', () => {
  it(
    'oneLine bounds a message of a million blanks before scanning it, and keeps one line',
    { timeout: 5_000 },
    () => {
      const line = oneLine(`no queue for "${' '.repeat(1 << 20)}\n"`);
      expect(line.length).toBeLessThanOrEqual(500);
      expect(line.endsWith('...')).toBe(true);
      expect(oneLine('first\r\n   second\n\nthird  ')).toBe('first second third');
      expect(oneLine('  two  spaces kept ')).toBe('two  spaces kept');
      expect(oneLine('')).toBe('error');
    },
  );

  it('escapes control characters instead of echoing them', () => {
    expect(oneLine('branch "a\u001b[31mb\u0007\u009b"')).toBe('branch "a\\u001b[31mb\\u0007\\u009b"');
    expect(oneLine('tab\there')).toBe('tab here');
  });

  it(
    'a branch of 100,000 spaces is answered at once, and other requests are not held up',
    { timeout: 10_000 },
    async () => {
      const s = await server();
      const wide = { repo: REPO, targetBranch: `a${' '.repeat(100_000)}b` };
      const [slow, status] = await Promise.all([
        call(s, 'getQueue', wide),
        call(s, 'status', undefined, { token: null }),
      ]);
      expect(status.status).toBe(200);
      expect(slow.status).toBeGreaterThanOrEqual(400);
      expect(slow.status).toBeLessThan(500);
      expect(slow.text.length).toBeLessThanOrEqual(500);
    },
  );

  it('echoed input in an error body carries no control characters', async () => {
    const s = await server();
    const a = await call(s, 'getQueue', { repo: REPO, targetBranch: 'x\u001b]0;pwned\u0007y' });
    expect(a.status).toBeGreaterThanOrEqual(400);
    expect(a.status).toBeLessThan(500);
    expect(a.text).not.toMatch(CONTROL);
    expect(a.text).toContain('\\u001b');
    const missing = await fetch(`${s.url}/no%1b%5b31mthing`);
    expect(missing.status).toBe(404);
    expect(await missing.text()).not.toMatch(CONTROL);
  });
});

describe('slow and broken clients', () => {
  const timeouts = { request: 1_000, headers: 600, keepAlive: 500, connection: 5_000, checkInterval: 100 };

  it('a body sent a byte at a time is cut off at the request timeout with a 408 in text/plain', async () => {
    const s = await server({ timeouts });
    const head = `POST /v1/getQueue HTTP/1.1\r\nHost: x\r\nx-api-token: ${s.token}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{`;
    const ex = await rawExchange(s, head, {
      drip: Array.from({ length: 50 }, () => ' '),
      everyMs: 150,
      waitMs: 4_000,
    });
    expect(ex.closed).toBe(true);
    expect(ex.closedAfterMs).toBeLessThan(3_000);
    expect(statusOf(ex.received)).toBe(408);
    expect(headerOf(ex.received, 'content-type')).toMatch(/^text\/plain/);
    expect(bodyOf(ex.received)).toMatch(/^request timed out/);
  });

  it('headers sent a line at a time are cut off at the headers timeout', async () => {
    const s = await server({ timeouts });
    const ex = await rawExchange(s, 'GET /v1/status HTTP/1.1\r\n', {
      drip: Array.from({ length: 40 }, (_, i) => `x-slow-${i}: 1\r\n`),
      everyMs: 100,
      waitMs: 4_000,
    });
    expect(ex.closed).toBe(true);
    expect(ex.closedAfterMs).toBeLessThan(3_000);
  });

  it('the socket that got its 401 before sending its body is closed', async () => {
    const s = await server({ timeouts: { ...timeouts, request: 60_000, headers: 30_000 } });
    const head =
      'POST /v1/getQueue HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n{';
    const ex = await rawExchange(s, head, {
      drip: Array.from({ length: 30 }, () => ' '),
      everyMs: 100,
      waitMs: 2_500,
    });
    expect(statusOf(ex.received)).toBe(401);
    expect(headerOf(ex.received, 'connection')).toBe('close');
    expect(ex.closed).toBe(true);
  });

  it('an idle keep-alive connection is closed after the keep-alive timeout', async () => {
    const s = await server({ timeouts });
    const ex = await rawExchange(s, 'GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n', { waitMs: 3_000 });
    expect(statusOf(ex.received)).toBe(200);
    expect(ex.closed).toBe(true);
  });

  it('what Node’s HTTP parser refuses is answered in one line of text/plain like every other error', async () => {
    const s = await server();
    const garbage = await rawExchange(s, 'HELLO THERE\r\n\r\n', { waitMs: 2_000 });
    expect(statusOf(garbage.received)).toBe(400);
    expect(headerOf(garbage.received, 'content-type')).toMatch(/^text\/plain/);
    expect(bodyOf(garbage.received)).toMatch(/^malformed HTTP request/);
    expect(garbage.closed).toBe(true);

    const big = await rawExchange(
      s,
      `GET /v1/status HTTP/1.1\r\nHost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`,
      { waitMs: 2_000 },
    );
    expect(statusOf(big.received)).toBe(431);
    expect(headerOf(big.received, 'content-type')).toMatch(/^text\/plain/);
    expect(bodyOf(big.received)).toMatch(/^request headers are too large/);

    // A path the router cannot decode.
    const badUrl = await rawExchange(s, 'GET /v1/getQueue%E0%A4%A HTTP/1.1\r\nHost: x\r\n\r\n', { waitMs: 2_000 });
    expect(statusOf(badUrl.received)).toBeGreaterThanOrEqual(400);
    expect(statusOf(badUrl.received)).toBeLessThan(500);
    expect(headerOf(badUrl.received, 'content-type')).toMatch(/^text\/plain/);
  });
});

describe('limits per organisation', () => {
  it('refuses a queue past the limit (400) and a pull request past the limit (429), with a message that says why', async () => {
    const s = await server({
      limits: { queuesPerOrg: 2, prsPerQueue: 2 },
      tokens: { 'test-token': 'local', other: 'other' },
    });
    await ok(s, 'createQueue', Q);
    await ok(s, 'createQueue', { ...Q, targetBranch: 'release' });
    const third = await call(s, 'createQueue', { ...Q, targetBranch: 'next' });
    expect(third.status).toBe(400);
    expect(third.text).toMatch(/already has 2 merge queues.*--max-queues-per-org/);
    // Another organisation has its own count.
    expect((await call(s, 'createQueue', { ...Q, repo: { ...Q.repo, name: 'other-app' } }, { token: 'other' })).status).toBe(200);

    await ok(s, 'updateQueue', { ...Q, state: 'paused' });
    for (const n of [1, 2]) await ok(s, 'submitPullRequest', { ...Q, pr: { number: n } });
    const full = await call(s, 'submitPullRequest', { ...Q, pr: { number: 3 } });
    expect(full.status).toBe(429);
    expect(full.headers.get('x-railyard-error-code')).toBe('limit_reached');
    expect(full.text).toMatch(/already holds 2 pull requests.*--max-prs-per-queue/);
    // Submitting a queued PR again (a priority change) is no new PR; once one leaves, there is room.
    expect((await call(s, 'submitPullRequest', { ...Q, pr: { number: 2 }, priority: 'high' })).status).toBe(
      200,
    );
    await ok(s, 'cancelPullRequest', { ...Q, pr: { number: 1 } });
    expect((await call(s, 'submitPullRequest', { ...Q, pr: { number: 3 } })).status).toBe(200);
  });
});

describe('data on disk', () => {
  it('the data directory is 0700 and the database with its WAL files 0600', async () => {
    // A data dir serve creates itself (mkdtemp would make it 0700 already).
    const parent = await tempDir();
    const s = await server({ dataDir: join(parent, 'data') });
    try {
      await ok(s, 'createQueue', Q);
      expect(statSync(s.dataDir).mode & 0o777).toBe(0o700);
      for (const file of [SQLITE_FILE, `${SQLITE_FILE}-wal`, `${SQLITE_FILE}-shm`]) {
        expect({ file, mode: statSync(join(s.dataDir, file)).mode & 0o777 }).toEqual({ file, mode: 0o600 });
      }
    } finally {
      await s.close();
      await rm(parent, { recursive: true, force: true });
    }
  });

  it('another process holding the SQLite write lock longer than the server waits: 503 with Retry-After, nothing changed, the same request goes in after', async () => {
    const s = await server();
    await ok(s, 'createQueue', Q);
    const holder = new Database(join(s.dataDir, SQLITE_FILE), { fileMustExist: true });
    holder.exec('BEGIN IMMEDIATE'); // e.g. `railyard token` or a backup, stuck
    try {
      const refused = await call(s, 'submitPullRequest', { ...Q, pr: { number: 1 } });
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(refused.text).toMatch(/^the database gave up waiting for other writes \(.*\); nothing was changed, try again$/);
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
    }
    expect((await call(s, 'getSubmittedPullRequest', { ...Q, pr: { number: 1 } })).status).toBe(404);
    await ok(s, 'submitPullRequest', { ...Q, pr: { number: 1 } });
  });
});
